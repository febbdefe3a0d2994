package gocron_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	gocronv2 "github.com/go-co-op/gocron/v2"
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
	var last error
	require.Eventually(t, func() bool { last = el.IsLeader(ctx); return errors.Is(last, gocron.ErrPaused) }, 20*time.Second, 10*time.Millisecond, "IsLeader: %v", last)
	p.Refuse(false)
	require.Eventually(t, func() bool { return el.IsLeader(ctx) == nil }, 20*time.Second, 10*time.Millisecond, "resumed")

	// Cut off past the session timeout: lost, never leader again in that
	// session (a new one campaigns anew).
	p.Refuse(true)
	p.Sever()
	require.Eventually(t, func() bool { return errors.Is(el.IsLeader(ctx), gocron.ErrNotLeader) }, 20*time.Second, 10*time.Millisecond)
	p.Refuse(false)
}
