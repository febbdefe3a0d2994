# Used by scripts/test.sh: which tests of a go test run failed by the
# race detector alone, and a -run pattern for each, precise to the subtest.
# Reads go test output; prints "bad" if a failure other than a race report
# is in it (a failed test whose own output has no "race detected" line, or
# a failed assertion beside it, a build failure, a panic), else, one per
# line, the package and a -run pattern of each top-level test that failed
# only by the race detector
# ("github.com/x/y ^(TestA)$/^(b)$"). A package's tests' lines come before
# its "FAIL<tab>package" line (go test prints a package's output whole). A
# pattern names the failed subtests level by level (^(Top)$/^(a|b)$/...): it
# may match a few siblings more (a cross product within one top-level test),
# never fewer; it stops at the shallowest test that failed by its own report.
# A package that failed with no test failed by the race, or whose tests
# passed ("PASS") before it failed (its TestMain: a goroutine leak, a race
# outside any test), is "bad" too: nothing of it would run again.
function close_blk() {
  if (inblk && own > 0) {
    if (race && !asserted) add(name); else bad = 1
  }
  inblk = 0
}
# add records a test the race alone failed: its top-level test, the
# shallowest depth failed, and each level's names in the order they came.
function add(t,    n, p, top, i, key) {
  added++
  n = split(t, p, "/")
  top = g SUBSEP p[1] # the same name may be a test of another package
  if (!(top in depth)) order[++tops] = top
  if (!(top in depth) || n < depth[top]) depth[top] = n
  for (i = 2; i <= n; i++) {
    key = top SUBSEP i SUBSEP p[i]
    if (!(key in seen)) { seen[key] = 1; alt[top, i] = alt[top, i] (alt[top, i] == "" ? "" : "|") quote(p[i]) }
  }
}
BEGIN { g = 0 }
function quote(s) { gsub(/[][\\.+*?(){}|^$]/, "\\\\&", s); return s }
/\[build failed\]|^panic: |^goroutine leak: / { bad = 1 }
/^[[:space:]]*--- (FAIL|PASS|SKIP):/ {
  close_blk()
  if ($0 ~ /--- FAIL:/) { inblk = 1; own = 0; race = 0; asserted = 0; name = $3 }
  next
}
/^(FAIL|ok|PASS)([[:space:]]|$)/ {
  close_blk()
  if ($0 == "PASS") passed = 1
  if ($2 ~ /\//) { # the package whose output this was
    if ($1 == "FAIL" && (added == 0 || passed)) bad = 1
    pkg[g++] = $2
    added = 0
    passed = 0
  }
  next
}
# A failed assertion (testify's "Error Trace:") beside the race's report
# is a failure of its own: not run again.
inblk { own++; if ($0 ~ /race detected during execution of test/) race = 1; if ($0 ~ /^[[:space:]]+Error Trace:/) asserted = 1 }
END {
  close_blk()
  if (bad) { print "bad"; exit }
  for (k = 1; k <= tops; k++) {
    top = order[k]
    split(top, gt, SUBSEP)
    if (!(gt[1] in pkg)) { print "bad"; exit } # no package line followed
  }
  for (k = 1; k <= tops; k++) {
    top = order[k]
    split(top, gt, SUBSEP)
    pat = "^(" quote(gt[2]) ")$"
    for (i = 2; i <= depth[top]; i++) pat = pat "/^(" alt[top, i] ")$"
    print pkg[gt[1]] " " pat
  }
}
