# Used by scripts/test.sh: which tests of a go test run failed by the
# race detector alone.
# Reads go test output; prints "bad" if a failure other than a race report
# is in it (a failed test whose own output has no "race detected" line, a
# build failure, a panic), else the names of the top-level tests that failed
# only by the race detector, one per line.
function close_blk() {
  if (inblk && own > 0) {
    if (race) { split(name, p, "/"); races[p[1]] = 1 } else { bad = 1 }
  }
  inblk = 0
}
/\[build failed\]|^panic: / { bad = 1 }
/^[[:space:]]*--- (FAIL|PASS|SKIP):/ {
  close_blk()
  if ($0 ~ /--- FAIL:/) { inblk = 1; own = 0; race = 0; name = $3 }
  next
}
/^(FAIL|ok|PASS)([[:space:]]|$)/ { close_blk(); next }
inblk { own++; if ($0 ~ /race detected during execution of test/) race = 1 }
END {
  close_blk()
  if (bad) { print "bad"; exit }
  for (t in races) print t
}
