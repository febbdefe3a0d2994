#!/usr/bin/env bash
# The whole suite, as `make test` runs it. Every package except chaos and
# interop runs with -race against the go-zookeeper that importers link
# (upstream v1.0.4, GOWORK=off). chaos and interop, whose faults reconnect
# sessions with watches all the time, link the copy with upstream's
# lastZxid data race fixed (third_party/go.work; see
# third_party/go-zookeeper/PATCHES.md). If the upstream run fails only
# because that known race fired, the packages it fired in run again: with
# -race against the fixed copy, and without -race against upstream; the
# output says so. Only the tests that failed by that race report alone run
# again (scripts/racefail.awk), the moment their package has failed,
# beside the packages still running: any other failure in the run fails
# the suite, even beside the race. They run again to the subtest: a table
# of forty subtests, one of which the race hit, runs that one.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
TESTFLAGS=${TESTFLAGS:-}
work="$PWD/third_party/go.work"
log=$(mktemp)
chaos_log=$(mktemp)
interop_log=$(mktemp)
chaos_pid=
rerun_dir=$(mktemp -d)
rerun_pids=()
after_log=$(mktemp)
after_pid=
cleanup() {
  [ -n "$chaos_pid" ] && kill -- -"$chaos_pid" 2>/dev/null
  [ -n "$after_pid" ] && kill -- -"$after_pid" 2>/dev/null
  [ -n "${idle_pid:-}" ] && kill -- -"$idle_pid" 2>/dev/null
  [ -n "${prebuild_pid:-}" ] && kill -- -"$prebuild_pid" 2>/dev/null
  [ -n "${warm_pid:-}" ] && kill -- -"$warm_pid" 2>/dev/null
  for pid in "${rerun_pids[@]}"; do kill -- -"$pid" 2>/dev/null; done
  rm -rf "$rerun_dir"
  rm -f "${prebuild_log:-}" "${warm_log:-}" "${idle_log:-}" "${idle_log:-}.rc" "$log" "$log.rc" "${block:-}" "$chaos_log" "$chaos_log.rc" "$interop_log" "$interop_log.rc" "$after_log" "$after_log.rc" "$after_log.lane1"
}
trap cleanup EXIT

# Before any test runs: Debian's packages (scripts/setup.sh bench: ZooKeeper,
# PostgreSQL, the peers; apt for about 15 s on a fresh machine), and beside
# them, the compile every go test below shares: the standard library with
# -race, go-zookeeper, the library and the test kit (go vet -race of the
# first package and internal/outagetest; go test -vet=all then takes its
# compiles and verdicts from the cache). On a fresh machine the pool, chaos
# and internal/outagetest, started together, each compiled that base
# themselves (about 45 CPU-s each, the same work three times over): the
# first test ran 74 s after the start. A vet failure here is the pool's
# too, which reports it, so this one's output is not read.
echo "== $(date +%T) installing what is missing, and compiling with -race what every package's test needs, side by side"
mapfile -t pkgs < <(GOWORK=off $GO list ./... | grep -v -e '/chaos$' -e '/interop$' -e '/internal/outagetest$')
# The pool takes the packages in the order given, and go list gives them
# in alphabetical order: session, the longest (110 s in a quiet run), came
# last but one and ran its last minute alone. The longest go first (quiet
# run, seconds: session 110, cmd/shepherd 96, election 80, internal/line
# 69, mutex 57, zktest 52, semaphore 50, schedule 37, bench 34, fence 24),
# the short ones fill the end. A name below that is no package fails the
# suite, so that the list is kept true.
first=(session cmd/shepherd election internal/line mutex zktest semaphore schedule bench fence)
mod=$(GOWORK=off $GO list -m)
ordered=()
for p in "${first[@]}"; do
  n=${#ordered[@]}
  for i in "${!pkgs[@]}"; do
    if [ "${pkgs[$i]}" = "$mod/$p" ]; then
      ordered+=("${pkgs[$i]}")
      unset 'pkgs[i]'
    fi
  done
  [ "${#ordered[@]}" -gt "$n" ] || { echo "scripts/test.sh: $p, in its list of the longest packages, is no package"; exit 1; }
done
pkgs=("${ordered[@]}" "${pkgs[@]}")
warm_log=$(mktemp)
setsid env GOWORK=off "$GO" vet -race "${pkgs[0]}" ./internal/outagetest >"$warm_log" 2>&1 &
warm_pid=$!
if ! scripts/setup.sh bench; then
  kill -- -"$warm_pid" 2>/dev/null
  echo "== scripts/setup.sh bench failed: nothing was tested"
  exit 1
fi
wait "$warm_pid"
warm_pid=
rm -f "$warm_log"

# The chaos package (the fault matrix and a short soak) spends most of its
# time waiting for faults to land and sessions to time out, not computing:
# it runs in the background, in a process group of its own, beside the rest
# of the suite. Its output is printed when it is done: with -v, so that a
# run that stalls and is killed (its timeout, 12 minutes, is twice its usual
# time) still shows which cell it was in and what that cell logged; a passing
# run's "=== RUN" lines are left out.
echo "== $(date +%T) go test -race ./chaos against go-zookeeper with the lastZxid race fixed (third_party/go.work), in the background"
# Its soak runs 20 s here (make chaos: 10 min by default), and each cell
# of the matrix injects its fault once (make chaos: twice, -chaos.reps's
# default): the second round was half of make test's chaos, most of it
# ZooKeeper servers restarted again (76 JVMs started, 130 of its 280 CPU-s).
# Then, in the same lane, the interop package against the same copy: its
# pairs (shepherd beside Curator and Kazoo processes) expire, stall and
# kill sessions with watches all the time too. Against upstream, the race
# failed one to four of its pair tests in most make tests, and each ran
# again twice, beside the rest (two JVM peers and three shepherd clients
# each, for 30-60 s): the most expensive of the runs again. After chaos,
# not beside it: chaos judges holds on 2-second sessions.
setsid bash -c 'GOWORK="$1" "$2" test -race -vet=all -count=1 -timeout 12m -v $3 ./chaos -args -chaos.duration=20s -chaos.reps=1 >"$4" 2>&1; echo $? >"$4.rc"
  GOWORK="$1" "$2" test -race -vet=all -count=1 -timeout 10m $3 ./interop >"$5" 2>&1; echo $? >"$5.rc"' \
  _ "$work" "$GO" "$TESTFLAGS" "$chaos_log" "$interop_log" &
chaos_pid=$!

# What make test runs besides (MAKE_AFTER: make targets): compiling with
# another Go release, the consumer check, fuzzing, which take every core
# they are given. They start once the chaos package is done (in the
# background, beside the rest of the suite, which by then is mostly waiting
# for timers): it judges holds on 2-second sessions, on the same clock as
# its ZooKeeper servers, and its soak (which runs last) failed when they
# overlapped it, even at nice 10: twice every session of a harness was lost
# at once with no fault to explain it, its three servers running but none
# answering "srvr" within 2 s, one watchdog reporting "no request answered
# for 9.71s" on a 2-second session (its process starved).
# Two lanes, one a core: the consumer check (the longest, a build from a
# fresh module cache), and the rest in turn.
setsid bash -c 'while [ ! -f "$1.rc" ]; do sleep 1; done
  echo "== $(date +%T) the other checks (chaos done), in the background, in two lanes"
  first= rest=
  for target in $3; do
    if [ "$target" = consumercheck ]; then first=$target; else rest="$rest $target"; fi
  done
  ( [ -z "$first" ] || "$2" --no-print-directory "$first" ) >"$4.lane1" 2>&1 &
  lane1=$!
  ok=0
  for target in $rest; do
    "$2" --no-print-directory "$target" || { ok=1; break; }
  done
  wait "$lane1" || ok=1
  echo "== the consumer check:"
  cat "$4.lane1"
  echo "== $(date +%T) the other checks done"
  echo $ok >"$4.rc"' _ "$chaos_log" "${MAKE:-make}" "${MAKE_AFTER:-}" "$after_log" >"$after_log" 2>&1 &
after_pid=$!

# internal/outagetest is one test that waits out a 65 s outage, using no
# CPU: it runs in the background from the start, beside the rest (in the
# pool of two packages at once it held one of the two places for 67 s of a
# 470 s run). Its output joins the others' before they are judged.
idle=./internal/outagetest
idle_log=$(mktemp)
setsid bash -c 'GOWORK=off "$1" test -race -vet=all -count=1 -timeout 5m $2 "$3" >"$4" 2>&1; echo $? >"$4.rc"' \
  _ "$GO" "$TESTFLAGS" "$idle" "$idle_log" &
idle_pid=$!

# The pool's go test compiles a package's test only when one of its two
# places is free, and a place is held by a test binary waiting on its
# timers as much as by one computing: on a fresh machine the last minute
# and a half went to short packages, each compiled and linked in turn. So
# a go vet -race of every package, in the pool's reverse order, runs
# beside it at the lowest priority (nice 19: the CPU the rest leaves
# idle). It fills the build cache with what the pool compiles and vets
# last (go test -vet=all takes both from the cache); what it fails, the
# pool's own vet fails again, so its output is not read.
prebuild_log=$(mktemp)
rev=()
for ((i = ${#pkgs[@]} - 1; i >= 0; i--)); do rev+=("${pkgs[i]}"); done
setsid nice -n 19 env GOWORK=off "$GO" vet -race "${rev[@]}" >"$prebuild_log" 2>&1 &
prebuild_pid=$!

# judge FILE: FILE holds the output of one package that failed. If every
# race report in it is upstream go-zookeeper's known lastZxid race and
# each of its failed tests failed by a race report alone
# (scripts/racefail.awk), those tests run again at once, in the
# background, beside what is still running: with -race against the fixed
# copy, and without -race against upstream. One go test a pattern (a -run
# pattern cannot join two top-level tests' subtests), all at once: the run
# takes its longest test's time, not their sum. Anything else marks the
# run bad: no run again may hide it.
judge() {
  local block=$1 races known racy r pkg pat mode gowork race
  judged=$((judged + 1))
  races=$(grep -c 'WARNING: DATA RACE' "$block" || true)
  known=$(awk -v count_known=1 -f scripts/failsummary.awk "$block")
  mapfile -t racy < <(awk -f scripts/racefail.awk "$block")
  if [ "$races" -eq 0 ] || [ "$races" -ne "$known" ] || [ "${#racy[@]}" -eq 0 ] || [ "${racy[0]}" = bad ]; then
    bad=1
    return
  fi
  racehits=$((racehits + races))
  echo "== $(date +%T) ${racy[0]%% *} failed by the known race alone: the tests it failed run again, in the background"
  for r in "${racy[@]}"; do
    pkg=${r%% *} pat=${r#* }
    printf '   %s -run %s\n' "$pkg" "$pat" >>"$rerun_dir/list"
    for mode in fixed upstream; do
      reruns=$((reruns + 1))
      gowork=off race=
      [ "$mode" = fixed ] && gowork=$work race=-race
      setsid bash -c 'GOWORK="$1" "$2" test $3 -count=1 -timeout 20m $4 -run "$5" "$6" >"$7" 2>&1; echo $? >"$7.rc"' \
        _ "$gowork" "$GO" "$race" "$TESTFLAGS" "$pat" "$pkg" "$rerun_dir/$reruns.$mode" </dev/null &
      rerun_pids+=($!)
    done
  done
}

echo "== go test -race, every package but chaos and interop, against upstream go-zookeeper (GOWORK=off)"
# Two packages at once (TEST_P). At three (before the compile was
# shared, the longest packages went first and vet ran inside go test),
# make test took 8 to 9 minutes on a quiet 2-core machine against 9 to 10
# at two, but tests failed on the starved machine's pace (CPU pressure
# "some" 67 %): a server left an idle session's pings unanswered for 4 s,
# a killed holder's lease was freed 22 s after its 2 s session, a
# semaphore on an idle path was not granted within 2 s. So two.
# go test prints each package's output whole, ending in its "ok" or
# "FAIL" line: a package that failed is judged the moment its output
# ends, while the others run on. -vet=all: go vet, every check (go vet's
# own default, not go test's short list), on every package and its tests,
# from what the race build compiled (a vet of its own compiled every
# package again without -race); a package vet fails is reported as
# "[build failed]" and fails the suite. chaos, interop and
# internal/outagetest are vetted in their own runs.
bad=0 judged=0 racehits=0 reruns=0
block=$(mktemp)
exec 3>"$log"
while IFS= read -r line; do
  printf '%s\n' "$line"
  printf '%s\n' "$line" >&3
  printf '%s\n' "$line" >>"$block"
  case $line in
  FAIL$'\t'github.com/* | FAIL' 'github.com/*) judge "$block" ;&
  ok' '*github.com/* | '?'' '*github.com/*) : >"$block" ;;
  esac
done < <(GOWORK=off $GO test -race -vet=all -count=1 -p "${TEST_P:-2}" -timeout 20m $TESTFLAGS "${pkgs[@]}" 2>&1; echo $? >"$log.rc")
status=$(cat "$log.rc" 2>/dev/null || echo 1)
wait "$idle_pid"
idle_pid=
echo "== $idle (run in the background from the start):"
cat "$idle_log" >&3
cat "$idle_log"
exec 3>&-
if [ "$(cat "$idle_log.rc" 2>/dev/null)" != 0 ]; then
  status=1
  judge "$idle_log"
fi
if [ "$status" -ne 0 ]; then
  # Every package that failed must have been judged a failure of the
  # known race alone, and every race report in the run must be that race.
  failed=$(grep -cE '^FAIL[[:space:]]+github.com/' "$log" || true)
  races=$(grep -c 'WARNING: DATA RACE' "$log" || true)
  if [ "$bad" -ne 0 ] || [ "$reruns" -eq 0 ] || [ "$failed" -ne "$judged" ] || [ "$races" -ne "$racehits" ]; then
    echo "== not run again: a failure other than upstream go-zookeeper's known lastZxid race (digest below)"
    awk -f scripts/failsummary.awk "$log"
    exit "$status"
  fi
  echo "== upstream go-zookeeper's lastZxid data race fired ($races report(s)) in $failed package(s)"
  echo "== the subtests it failed were run again the moment their package failed, in the background: -race against the fixed copy, and without -race against upstream:"
  cat "$rerun_dir/list"
fi

for pid in "${rerun_pids[@]}"; do
  wait "$pid"
done
rerun_pids=()
for mode in fixed upstream; do
  ls "$rerun_dir"/*."$mode" >/dev/null 2>&1 || continue
  echo "== the tests the race hit, again ($mode go-zookeeper):"
  for f in "$rerun_dir"/*."$mode"; do
    cat "$f"
    [ "$(cat "$f.rc" 2>/dev/null)" = 0 ] || exit 1
  done
done

echo "== $(date +%T) waiting for go test -race ./chaos, then ./interop"
wait "$chaos_pid"
chaos_pid=
echo "== $(date +%T) go test -race ./chaos (run in the background):"
if [ "$(cat "$chaos_log.rc" 2>/dev/null)" = 0 ]; then
  grep -vE '^=== (RUN|PAUSE|CONT)' "$chaos_log"
else
  cat "$chaos_log"
  exit 1
fi

echo "== $(date +%T) go test -race ./interop against the fixed copy (run in the background after chaos):"
cat "$interop_log"
[ "$(cat "$interop_log.rc" 2>/dev/null)" = 0 ] || exit 1

echo "== $(date +%T) waiting for the other checks (run in the background since chaos was done)"
wait "$after_pid"
after_pid=
cat "$after_log"
[ "$(cat "$after_log.rc" 2>/dev/null)" = 0 ] || exit 1
