# Used by scripts/test.sh when a go test run failed and is not run again:
# a digest of why, printed last (where a CI log's tail shows it), of output
# that may be thousands of lines of server logs long.
# Reads go test output; prints every data race report that is not upstream
# go-zookeeper's known lastZxid race in full (each cut at 80 lines), how
# many of the known one there were, and each failed test's own first lines
# without the servers' log tails zktest prints beside them (nor
# go-zookeeper's log lines).
# With -v count_known=1 it prints only how many race reports are the known
# one (scripts/test.sh judges a failed package by it): that race is told
# apart here alone.
function flush_race() {
  if (!inrace) return
  if (rknown) known++
  else { other++; if (!count_known) printf "%s", rtxt }
  inrace = 0
}
/^WARNING: DATA RACE/ { inrace = 1; rknown = 0; rtxt = "==================\n"; rlines = 0 }
inrace {
  if ($0 ~ /zk\.\(\*Conn\)\.(sendSetWatches|recvLoop)/) rknown = 1
  if (++rlines <= 80) rtxt = rtxt $0 "\n"
  if ($0 ~ /^==================$/) flush_race()
  next
}
/^(panic: |FAIL[[:space:]]+github|.*\[build failed\])/ { tail = tail $0 "\n" }
/^[[:space:]]*--- FAIL:/ { fails = fails $0 "\n"; own = 0; inlog = 0; next }
/^[[:space:]]*--- (PASS|SKIP):/ || /^(FAIL|ok|PASS)([[:space:]]|$)/ { own = 99; next }
/zktest: server [0-9]+ log tail/ { inlog = 1; next }
/^[0-9][0-9][0-9][0-9]\/[0-9][0-9]\/[0-9][0-9] / { next } # go-zookeeper's log
inlog && /^[[:space:]]+([0-9]+ \[|at |EndOfStream|[A-Za-z.]*Exception|\.\.\.|\[…\])/ { next }
{ inlog = 0 }
own < 12 && fails != "" { fails = fails $0 "\n"; own++ }
END {
  flush_race()
  if (count_known) { print known + 0; exit }
  printf "== data race reports: %d of upstream go-zookeeper's known lastZxid race, %d other (shown above)\n", known, other
  printf "== failed tests, with their first lines (server log tails left out):\n%s", fails
  printf "%s", tail
}
