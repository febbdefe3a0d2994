package gocron_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	gocronv2 "github.com/go-co-op/gocron/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/contrib/gocron"
	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

func open(t *testing.T, servers []string, opts ...session.Option) *session.Session {
	t.Helper()
	s, err := session.Open(testCtx(30*time.Second), servers, append(opts, session.WithSessionTimeout(2*time.Second))...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func uniquePath(t *testing.T) string {
	return fmt.Sprintf("/gocron-test/%s-%d", t.Name(), time.Now().UnixNano())
}

// TestElectorOnlyLeaderRuns: three gocron schedulers with shepherd's
// Elector run a job every 100 ms: only the leader's runs; when the leader
// leaves (Close), another one's runs, and the first's no more.
func TestElectorOnlyLeaderRuns(t *testing.T) {
	path := uniquePath(t)
	var mu sync.Mutex
	var runs []string
	type inst struct {
		el *gocron.Elector
		s  gocronv2.Scheduler
	}
	insts := map[string]inst{}
	for _, id := range []string{"a", "b", "c"} {
		el, err := gocron.StartElector(context.Background(), open(t, zkc.Servers()), path, id)
		require.NoError(t, err)
		s, err := gocronv2.NewScheduler(gocronv2.WithDistributedElector(el))
		require.NoError(t, err)
		_, err = s.NewJob(gocronv2.DurationJob(100*time.Millisecond), gocronv2.NewTask(func() {
			mu.Lock()
			runs = append(runs, id)
			mu.Unlock()
		}))
		require.NoError(t, err)
		s.Start()
		insts[id] = inst{el, s}
		t.Cleanup(func() { _ = s.Shutdown(); _ = el.Close() })
	}
	ran := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), runs...) }
	require.Eventually(t, func() bool { return len(ran()) >= 5 }, 20*time.Second, 10*time.Millisecond)
	first := ran()
	for _, id := range first {
		require.Equal(t, first[0], id, "only the leader runs: %v", first)
	}
	leader := first[0]
	require.NoError(t, insts[leader].el.Close())
	n := len(ran())
	require.Eventually(t, func() bool { return len(ran()) >= n+5 }, 20*time.Second, 10*time.Millisecond)
	require.NoError(t, insts[leader].s.Shutdown())
	after := ran()
	m := len(after)
	require.Eventually(t, func() bool { return len(ran()) >= m+5 }, 20*time.Second, 10*time.Millisecond)
	next := ran()[m:]
	for _, id := range next {
		require.NotEqual(t, leader, id, "the old leader runs no more: %v", next)
		require.Equal(t, next[0], id, "one leader at a time: %v", next)
	}
}

// TestElectorPaused: IsLeader is nil while the leadership holds, ErrPaused
// while it is paused by a lost connection (PauseOnDisconnect), nil again
// once it resumes, and ErrNotLeader once the session is lost.
func TestElectorPaused(t *testing.T) {
	path := uniquePath(t)
	p, err := zktest.NewProxy(zkc.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	sess := open(t, p.Addrs())
	el, err := gocron.StartElector(context.Background(), sess, path, "a",
		election.WithDisconnectPolicy(session.PauseOnDisconnect))
	require.NoError(t, err)
	t.Cleanup(func() { _ = el.Close() })
	ctx := testCtx(30 * time.Second)
	require.Eventually(t, func() bool { return el.IsLeader(ctx) == nil }, 20*time.Second, 10*time.Millisecond)

	p.Refuse(true)
	p.Sever()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.ErrorIs(c, el.IsLeader(ctx), gocron.ErrPaused, "IsLeader")
	}, 20*time.Second, 10*time.Millisecond)
	p.Refuse(false)
	require.Eventually(t, func() bool { return el.IsLeader(ctx) == nil }, 20*time.Second, 10*time.Millisecond, "resumed")

	// Cut off past the session timeout: lost, never leader again in that
	// session (a new one campaigns anew).
	p.Refuse(true)
	p.Sever()
	require.Eventually(t, func() bool { return errors.Is(el.IsLeader(ctx), gocron.ErrNotLeader) }, 20*time.Second, 10*time.Millisecond)
	p.Refuse(false)
}

// TestElectorProcesses: three processes run gocron's scheduler with the
// Elector, a job every 200 ms, their clocks skewed. Only the leader's runs
// start. Its process is killed (SIGKILL) mid-run: another leads once the
// session has expired. That one is stopped (SIGSTOP) mid-run for longer than
// its session timeout, and continued: another leads meanwhile, and the
// continued process starts no run after it (its IsLeader asks the server,
// which says its session is gone), though its leadership was never paused.
func TestElectorProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("three processes, about 15 s")
	}
	path := uniquePath(t)
	file := filepath.Join(t.TempDir(), "runs")
	procs := map[string]*helper{}
	for i, skew := range []time.Duration{300 * time.Millisecond, 0, -300 * time.Millisecond} {
		id := fmt.Sprintf("e%d", i)
		procs[id] = startHelper(t, id, path, file, skew, modeEnv+"=elector")
	}
	runsSince := func(n int) []claim {
		cs := claims(t, file)
		if n > len(cs) {
			return nil
		}
		return cs[n:]
	}
	waitRuns := func(from int, ok func([]claim) bool, what string) {
		t.Helper()
		require.Eventually(t, func() bool { return ok(runsSince(from)) }, 60*time.Second, 10*time.Millisecond,
			"%s: %v", what, runsSince(from))
	}
	byOther := func(id string, k int) func([]claim) bool {
		return func(cs []claim) bool {
			var n int
			for _, c := range cs {
				if c.id != id {
					n++
				}
			}
			return n >= k
		}
	}
	waitRuns(0, func(cs []claim) bool { return len(cs) >= 5 }, "the first runs")
	cs := claims(t, file)
	leader := cs[len(cs)-1].id
	for _, c := range cs {
		require.Equal(t, leader, c.id, "one leader runs: %v", cs)
	}

	require.NoError(t, procs[leader].cmd.Process.Kill())
	_ = procs[leader].cmd.Wait()
	delete(procs, leader)
	n := len(claims(t, file))
	waitRuns(n, byOther(leader, 5), "another leads after the kill")
	cs = claims(t, file)
	stopped := cs[len(cs)-1].id

	require.NoError(t, procs[stopped].cmd.Process.Signal(syscall.SIGSTOP))
	n = len(claims(t, file))
	waitRuns(n, byOther(stopped, 5), "another leads while "+stopped+" is stopped")
	require.NoError(t, procs[stopped].cmd.Process.Signal(syscall.SIGCONT))
	thawed := len(claims(t, file))
	waitRuns(thawed, func(cs []claim) bool { return len(cs) >= 10 }, "runs after the thaw")
	for _, c := range runsSince(thawed) {
		require.NotEqual(t, stopped, c.id, "%s started a run after it was continued, beside the new leader: %v", stopped, runsSince(n))
	}
	// Before the kill, between the kill and the stop, and after: one leader
	// at a time.
	for id, h := range procs {
		require.NoError(t, h.cmd.Process.Signal(syscall.SIGTERM), id)
	}
	for id, h := range procs {
		require.NoError(t, h.cmd.Wait(), "helper %s", id)
	}
}
