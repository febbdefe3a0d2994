# Reads `go test -bench BenchmarkGuard ./fence/sqlfence` output (make
# bench-fence): prints it, then per database the guard's extra latency and
# the ratio guarded/bare of each run. Exits 1 if the benchmark failed or
# printed no result.
{ print }
/^(FAIL|--- FAIL|panic:)/ { failed = 1 }
/^BenchmarkGuard\// {
  db = $1
  sub(/^BenchmarkGuard\//, "", db)
  sub(/-[0-9]+$/, "", db)
  for (i = 4; i <= NF; i++) {
    if ($i == "bare-µs") bare[db] = bare[db] " " $(i - 1)
    if ($i == "extra-µs") extra[db] = extra[db] " " $(i - 1)
    if ($i == "ratio") ratio[db] = ratio[db] " " $(i - 1)
  }
  runs++
}
END {
  if (failed || runs == 0) {
    print "bench-fence: the benchmark failed" > "/dev/stderr"
    exit 1
  }
  print ""
  print "== the guard's cost per transaction (medians of each run; µs)"
  for (db in ratio)
    printf "%-9s bare:%s   extra:%s   ratio guarded/bare:%s\n", db, bare[db], extra[db], ratio[db]
}
