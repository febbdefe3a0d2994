package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/admin"

	"github.com/stretchr/testify/require"
)

// scheduleStatus is what the tests read of status -json on a schedule.
type scheduleStatus struct {
	Kind   string `json:"kind"`
	Every  string `json:"every"`
	Leader *struct {
		ID   string `json:"id"`
		Term int64  `json:"term"`
	} `json:"leader"`
	Tick     int64     `json:"tick"`
	State    string    `json:"state"`
	Outcome  string    `json:"outcome"`
	Attempt  int       `json:"attempt"`
	Epoch    time.Time `json:"epoch"`
	NextTick int64     `json:"next_tick"`
	NextDue  time.Time `json:"next_due"`
}

func readSchedule(t *testing.T, path string) (scheduleStatus, bool) {
	r := shepherd(t, nil, "status", "-json", path)
	var s scheduleStatus
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &s) != nil || s.Kind != "schedule" {
		return s, false
	}
	return s, true
}

// ticksIn reads the file of "TICK ID" lines the schedule's CMD appends.
func ticksIn(t *testing.T, file string) (ticks []int64, ids []string) {
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil, nil
	}
	require.NoError(t, err)
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		require.NoError(t, err, "line %q", l)
		ticks, ids = append(ticks, n), append(ids, f[1])
	}
	return ticks, ids
}

// exitOf waits for a background shepherd and returns its exit status.
func exitOf(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		require.NoError(t, err)
		return 0
	case <-time.After(30 * time.Second):
		t.Fatal("shepherd did not exit within 30s of SIGTERM")
		return -1
	}
}

// TestScheduleEachTickOnce: two shepherd processes share a schedule; over
// ~10 ticks each tick's CMD runs exactly once, on the leader; SIGTERM to
// the leader hands over and the other continues with the next tick (no
// tick twice, none skipped with -catch-up all); each exits 0 on SIGTERM.
// status shows the last tick and the next due. Both run with -drain: a
// SIGTERM that lands while a tick's CMD runs lets it finish (without it the
// stop cancels that tick, recorded "cancelled", and the next leader goes on
// with the next one, as documented: once in make test the first leader's
// tick 5 was so dropped, and the file missed it).
func TestScheduleEachTickOnce(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	file := filepath.Join(t.TempDir(), "ticks")
	script := fmt.Sprintf(`echo "$SHEPHERD_TICK $SHEPHERD_ID" >> %s`, file)
	args := func(id string) []string {
		return []string{"schedule", "-every", "300ms", "-catch-up", "all:100", "-drain", "10s", "-id", id, path, "--", "sh", "-c", script}
	}
	procs := map[string]*exec.Cmd{}
	procs["A"], _ = start(t, nil, args("A")...)
	procs["B"], _ = start(t, nil, args("B")...)

	waitTicks := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { ticks, _ := ticksIn(t, file); return len(ticks) >= n },
			30*time.Second, 50*time.Millisecond, "waiting for %d ticks", n)
	}
	waitTicks(5)
	var st scheduleStatus
	require.Eventually(t, func() bool {
		var ok bool
		st, ok = readSchedule(t, path)
		return ok && st.Leader != nil
	}, 20*time.Second, 50*time.Millisecond)
	first := st.Leader.ID
	other := map[string]string{"A": "B", "B": "A"}[first]
	require.NoError(t, procs[first].Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, exitOf(t, procs[first]), "SIGTERM: a schedule stops with exit 0")
	ticks, _ := ticksIn(t, file)
	handedAt := len(ticks)
	waitTicks(handedAt + 5)

	// status: the last tick and the next due, epoch + (N+1) intervals.
	st, ok := readSchedule(t, path)
	require.True(t, ok)
	require.NotNil(t, st.Leader)
	require.Equal(t, other, st.Leader.ID, "the other process leads")
	require.Equal(t, "300ms", st.Every)
	require.GreaterOrEqual(t, st.Tick, int64(handedAt))
	require.Equal(t, st.Tick+1, st.NextTick)
	require.Equal(t, st.Epoch.Add(time.Duration(st.NextTick)*300*time.Millisecond), st.NextDue)
	r := shepherd(t, nil, "status", path)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, path+": schedule every 300ms")
	require.Regexp(t, `leader:\s+`+other+` \(term \d+`, r.stdout)
	require.Regexp(t, `last tick:\s+\d+ \((started|finished, ok)\), attempt 1`, r.stdout)
	require.Regexp(t, `next due:\s+tick \d+ at \d{4}-`, r.stdout)

	// Stop the other, wherever it is: a tick in flight runs to its end
	// (-drain) and is recorded finished.
	require.NoError(t, procs[other].Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, exitOf(t, procs[other]))

	ticks, ids := ticksIn(t, file)
	require.GreaterOrEqual(t, len(ticks), 10)
	for i, n := range ticks {
		require.Equal(t, int64(i), n, "each tick once, in order: %v", ticks)
	}
	// Before the handover the first leader ran them all, then the other.
	for i, id := range ids {
		if i < handedAt-1 {
			require.Equal(t, first, id, "tick %d", i)
		}
		if i >= handedAt+1 {
			require.Equal(t, other, id, "tick %d", i)
		}
	}
	st, ok = readSchedule(t, path)
	require.True(t, ok)
	require.Nil(t, st.Leader, "both left the election")
	require.Equal(t, "finished", st.State, "the last tick's end is recorded")
	require.Equal(t, "ok", st.Outcome)
	require.Equal(t, ticks[len(ticks)-1], st.Tick, "the last tick recorded is the last run")
}

// TestScheduleEnvironment: the schedule's CMD gets elect's variables and
// SHEPHERD_TICK, SHEPHERD_TICK_TIME and SHEPHERD_ATTEMPT; a failing CMD's
// exit status is the tick's outcome.
func TestScheduleEnvironment(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	dir := t.TempDir()
	script := fmt.Sprintf(`test "$SHEPHERD_TICK" = 0 || exit 3; env | grep ^SHEPHERD_ | grep -v ^SHEPHERD_ZK= | sort > %[1]s/env.tmp; mv %[1]s/env.tmp %[1]s/env; exit 3`, dir)
	cmd, _ := start(t, nil, "schedule", "-every", "1h", "-id", "S", path, "--", "sh", "-c", script)
	waitFile(t, filepath.Join(dir, "env"))
	b, err := os.ReadFile(filepath.Join(dir, "env"))
	require.NoError(t, err)
	env := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(l, "=")
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	require.ElementsMatch(t, []string{"SHEPHERD_ID", "SHEPHERD_NODE", "SHEPHERD_PATH", "SHEPHERD_SESSION", "SHEPHERD_TOKEN",
		"SHEPHERD_TERM", "SHEPHERD_TICK", "SHEPHERD_TICK_TIME", "SHEPHERD_ATTEMPT"}, keys, string(b))
	require.Equal(t, path, env["SHEPHERD_PATH"])
	require.Equal(t, "S", env["SHEPHERD_ID"])
	require.Equal(t, "0", env["SHEPHERD_TICK"])
	require.Equal(t, "1", env["SHEPHERD_ATTEMPT"])
	require.Equal(t, env["SHEPHERD_TOKEN"], env["SHEPHERD_TERM"])
	_, err = strconv.ParseInt(env["SHEPHERD_TOKEN"], 10, 64)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(env["SHEPHERD_NODE"], path+"/leader/"), env["SHEPHERD_NODE"])
	require.True(t, strings.HasPrefix(env["SHEPHERD_SESSION"], "0x"), env["SHEPHERD_SESSION"])
	tt, err := time.Parse(time.RFC3339Nano, env["SHEPHERD_TICK_TIME"])
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(env["SHEPHERD_TICK_TIME"], "Z"), "UTC")

	var st scheduleStatus
	require.Eventually(t, func() bool {
		var ok bool
		st, ok = readSchedule(t, path)
		return ok && st.Tick == 0 && st.State == "finished" // not the first record's (tick -1)
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, "error: exit 3", st.Outcome, "CMD's exit status is the outcome")
	require.True(t, tt.Equal(st.Epoch), "tick 0 is due at the epoch: %v, %v", tt, st.Epoch)
	require.Equal(t, int64(1), st.NextTick)
	require.Equal(t, st.Epoch.Add(time.Hour), st.NextDue)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, exitOf(t, cmd))
}

// TestScheduleStopsCMD: SIGTERM while CMD runs stops it (the process tree,
// as elect) and records the tick's end; the next leader does not rerun it.
func TestScheduleStopsCMD(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	dir := t.TempDir()
	script := fmt.Sprintf(`echo "$SHEPHERD_TICK $SHEPHERD_ATTEMPT" >> %[1]s/runs; touch %[1]s/started; exec sleep 60`, dir)
	cmd, _ := start(t, nil, "schedule", "-every", "1h", "-grace", "2s", "-id", "S", path, "--", "sh", "-c", script)
	waitFile(t, filepath.Join(dir, "started"))
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, exitOf(t, cmd))
	st, ok := readSchedule(t, path)
	require.True(t, ok)
	require.Equal(t, "finished", st.State)
	require.Equal(t, "cancelled: exit 143", st.Outcome, "SIGTERM ended CMD")
	// A new leader does not run tick 0 again: its end is recorded.
	cmd, stderr := start(t, nil, "schedule", "-v", "-every", "1h", "-id", "T", path, "--", "sh", "-c", script)
	// The new leader has decided once it waits for tick 1 (-v logs it); a
	// rerun of tick 0 would have started before, and would hold it in CMD
	// (sleep 60) instead.
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "schedule: waiting") },
		20*time.Second, 20*time.Millisecond, "the new leader never waited for tick 1:\n%s", stderr)
	b, err := os.ReadFile(filepath.Join(dir, "runs"))
	require.NoError(t, err)
	require.Equal(t, "0 1\n", string(b))
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, exitOf(t, cmd))
}

// TestStatusSemaphoreSlots: status shows each lease holder's slot.
func TestStatusSemaphoreSlots(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	start(t, nil, "semaphore", "-n", "3", "-id", "s0", path, "--", "sleep", "30")
	waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Holders) == 1 })
	start(t, nil, "semaphore", "-n", "3", "-id", "s1", path, "--", "sleep", "30")
	s := waitStatus(t, path, func(s admin.Snapshot) bool {
		return len(s.Holders) == 2 && s.Holders[0].Slot != nil && s.Holders[1].Slot != nil
	})
	got := map[string]int{}
	for _, h := range s.Holders {
		got[h.Data] = *h.Slot
	}
	require.Equal(t, map[string]int{"s0": 0, "s1": 1}, got)
	r := shepherd(t, nil, "status", path)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "SLOT")
	require.Regexp(t, `holder\s+s0\s+0x[0-9a-f]+\s+\S+\s+\d+\s+0\s`, r.stdout)
	require.Regexp(t, `holder\s+s1\s+0x[0-9a-f]+\s+\S+\s+\d+\s+1\s`, r.stdout)
}

// TestScheduleRunTimeout: -run-timeout stops CMD (SIGTERM) and the outcome
// says so; a candidate with another -every is refused (exit 6).
func TestScheduleRunTimeout(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	cmd, _ := start(t, nil, "schedule", "-every", "1h", "-run-timeout", "300ms", "-id", "S", path, "--", "sleep", "30")
	var st scheduleStatus
	require.Eventually(t, func() bool {
		var ok bool
		st, ok = readSchedule(t, path)
		// Tick 0's end: the record's first state (tick -1) says
		// finished too.
		return ok && st.Tick == 0 && st.State == "finished"
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, "timeout: exit 143", st.Outcome)
	r := shepherd(t, nil, "schedule", "-every", "2h", path, "--", "true")
	require.Equal(t, 6, r.code, r.stderr)
	require.Contains(t, r.stderr, "interval differs")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, exitOf(t, cmd))
}
