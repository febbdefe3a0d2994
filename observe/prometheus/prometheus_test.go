package prometheus_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	promobs "github.com/shepherdzk/shepherd/observe/prometheus"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

var zk *zktest.Cluster

func TestMain(m *testing.M) { os.Exit(testutil.Main(m, &zk, 1)) }

func uniquePath(t *testing.T) string { return testutil.UniquePath(t, "metrics-test") }

// open opens a session with a 2s timeout, closed with the test.
// open opens a session of 2 s, unless opts set another timeout.
func open(t *testing.T, servers []string, opts ...session.Option) *session.Session {
	return testutil.Open(t, servers, append([]session.Option{session.WithSessionTimeout(2 * time.Second)}, opts...)...)
}

// metric gathers one series from reg (0 when absent); for histograms it
// returns the sample count.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for k, v := range labels {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == k && lp.GetValue() == v {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}

// TestScenario: acquire, contend, expire a session, fail over — and the
// metrics say so.
func TestScenario(t *testing.T) {
	reg := prometheus.NewRegistry()
	obs, err := promobs.New(reg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	defer p.Close()
	a := open(t, p.Addrs(), session.WithObserver(obs))
	b := open(t, zk.Servers(), session.WithObserver(obs))
	require.Eventually(t, func() bool {
		return metric(t, reg, "shepherd_session_state", map[string]string{"state": "Connected"}) == 1
	}, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, 2.0, metric(t, reg, "shepherd_session_epochs_total", nil))

	// Acquire and release a lock.
	path := uniquePath(t)
	ma, _ := mutex.New(a, path)
	mb, _ := mutex.New(b, path)
	require.NoError(t, ma.Lock(ctx))
	require.Equal(t, 1.0, metric(t, reg, "shepherd_holds", map[string]string{"recipe": "mutex"}))
	require.Equal(t, 1.0, metric(t, reg, "shepherd_acquire_wait_seconds", map[string]string{"recipe": "mutex"}))
	// Contend: b waits in line at position 1.
	got := make(chan error, 1)
	go func() { got <- mb.Lock(ctx) }()
	require.Eventually(t, func() bool { return len(mustChildren(t, b, path)) == 2 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, ma.Unlock(ctx))
	require.NoError(t, <-got)
	require.Equal(t, 2.0, metric(t, reg, "shepherd_acquire_queue_position", map[string]string{"recipe": "mutex"}))
	require.Equal(t, 1.0, metric(t, reg, "shepherd_hold_duration_seconds", map[string]string{"recipe": "mutex", "outcome": "released"}))
	require.NoError(t, mb.Unlock(ctx))
	require.Equal(t, 0.0, metric(t, reg, "shepherd_holds", map[string]string{"recipe": "mutex"}))

	// A semaphore lease.
	sem, _ := semaphore.New(a, uniquePath(t), 2)
	l, err := sem.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, 1.0, metric(t, reg, "shepherd_holds", map[string]string{"recipe": "semaphore"}))
	require.NoError(t, l.Release(ctx))
	require.Equal(t, 0.0, metric(t, reg, "shepherd_holds", map[string]string{"recipe": "semaphore"}))

	// Expire a's session while it holds the lock: the hold is lost, the
	// session goes Suspended, then Lost, then a new session is Connected.
	require.NoError(t, ma.Lock(ctx))
	sid := a.SessionID()
	require.NoError(t, p.ExpireSession(ctx, sid))
	require.Eventually(t, func() bool { s := a.SessionID(); return s != 0 && s != sid }, 10*time.Second, 5*time.Millisecond)
	// At least one epoch more (a's new session's); a loaded machine may
	// add reconnects of either session, which are epochs too.
	values := func() (lost, lostSessions, epochs float64) {
		return metric(t, reg, "shepherd_hold_lost_total", map[string]string{"recipe": "mutex"}),
			metric(t, reg, "shepherd_session_transitions_total", map[string]string{"state": "Lost"}),
			metric(t, reg, "shepherd_session_epochs_total", nil)
	}
	if !assert.Eventually(t, func() bool {
		lost, lostSessions, epochs := values()
		return lost == 1 && lostSessions == 1 && epochs >= 3
	}, 10*time.Second, 5*time.Millisecond) {
		lost, lostSessions, epochs := values()
		t.Fatalf("holds lost %v (want 1), sessions lost %v (want 1), epochs %v (want 3 or more)", lost, lostSessions, epochs)
	}
	require.Equal(t, 0.0, metric(t, reg, "shepherd_holds", map[string]string{"recipe": "mutex"}))
	require.GreaterOrEqual(t, metric(t, reg, "shepherd_session_suspended_seconds", nil), 1.0)
	_ = ma.Unlock(ctx)

	// Fail over: two candidates; the leader's Run ends; the other leads.
	epath := uniquePath(t)
	full := a.Path(epath)
	runs := map[string]context.CancelFunc{}
	dones := map[string]chan error{}
	elected := make(chan string, 10)
	for id, s := range map[string]*session.Session{"a": a, "b": b} {
		e, err := election.New(s, epath, id)
		require.NoError(t, err)
		rctx, rcancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		runs[id], dones[id] = rcancel, done
		go func() {
			done <- e.Run(rctx, election.Callbacks{OnElected: func(c context.Context, _ election.Term) {
				elected <- id
				<-c.Done()
			}})
		}()
	}
	first := <-elected
	require.Eventually(t, func() bool {
		return metric(t, reg, "shepherd_leader", map[string]string{"path": full}) == 1
	}, 5*time.Second, 5*time.Millisecond)
	term1 := metric(t, reg, "shepherd_leader_term", map[string]string{"path": full})
	require.NotZero(t, term1)
	runs[first]()
	require.NoError(t, <-dones[first])
	second := <-elected
	require.NotEqual(t, first, second)
	require.Eventually(t, func() bool {
		return metric(t, reg, "shepherd_leadership_changes_total", map[string]string{"path": full, "change": "elected"}) == 2 &&
			metric(t, reg, "shepherd_leadership_changes_total", map[string]string{"path": full, "change": "revoked"}) == 1
	}, 5*time.Second, 5*time.Millisecond)
	require.Greater(t, metric(t, reg, "shepherd_leader_term", map[string]string{"path": full}), term1)
	require.Equal(t, 1.0, metric(t, reg, "shepherd_leader_stop_seconds", map[string]string{"path": full}))
	require.Equal(t, 1.0, metric(t, reg, "shepherd_leader", map[string]string{"path": full}))
	runs[second]()
	require.NoError(t, <-dones[second])
	require.Equal(t, 0.0, metric(t, reg, "shepherd_leader", map[string]string{"path": full}))
}

func mustChildren(t *testing.T, s *session.Session, path string) []string {
	ep, err := s.Wait(context.Background())
	require.NoError(t, err)
	names, _, err := ep.Conn().Children(s.Path(path))
	if err != nil {
		return nil
	}
	return names
}

// TestHealth: the leader's connection is stalled and its OnElected ignores
// its ctx: election.Healthy turns unhealthy; when the callback returns and the
// connection heals, it recovers.
func TestHealth(t *testing.T) {
	p, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	defer p.Close()
	s := open(t, p.Addrs())
	e, err := election.New(s, uniquePath(t), "stuck", election.WithStopDeadline(300*time.Millisecond))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	leading := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, election.Callbacks{OnElected: func(context.Context, election.Term) {
			leading <- struct{}{}
			<-release // ignores its ctx: a leader that cannot stop
		}})
	}()
	<-leading
	require.NoError(t, e.Healthy(500*time.Millisecond))
	p.Stall()
	require.Eventually(t, func() bool { return e.Healthy(500*time.Millisecond) != nil }, 10*time.Second, 10*time.Millisecond)
	t.Logf("unhealthy: %v", e.Healthy(500*time.Millisecond))
	require.ErrorIs(t, e.Healthy(500*time.Millisecond), election.ErrStopDeadline)
	close(release)
	p.Heal()
	require.Eventually(t, func() bool { return e.Healthy(500*time.Millisecond) == nil }, 15*time.Second, 10*time.Millisecond)
	cancel()
	<-done
}

// TestPauseMetrics: a lock and a leadership riding through a disconnect
// (PauseOnDisconnect) are counted as paused and resumed, not lost; a paused
// lock lost to an expiry is counted as lost after a pause.
func TestPauseMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	obs, err := promobs.New(reg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	defer p.Close()
	s := testutil.Open(t, p.Addrs(), session.WithObserver(obs), session.WithSessionTimeout(8*time.Second),
		session.WithDisconnectPolicy(session.PauseOnDisconnect))
	m, _ := mutex.New(s, uniquePath(t))
	require.NoError(t, m.Lock(ctx))
	e, err := election.New(s, uniquePath(t), "a")
	require.NoError(t, err)
	elected := make(chan struct{})
	go func() {
		_ = e.Run(ctx, election.Callbacks{OnElected: func(c context.Context, _ election.Term) { close(elected); <-c.Done() }})
	}()
	<-elected
	mutexL := map[string]string{"recipe": "mutex"}
	electionL := map[string]string{"recipe": "election"}

	p.Sever() // a blip: the same session comes back
	require.Eventually(t, func() bool {
		return metric(t, reg, "shepherd_hold_resumes_total", mutexL) == 1 &&
			metric(t, reg, "shepherd_hold_resumes_total", electionL) == 1
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, 1.0, metric(t, reg, "shepherd_hold_pauses_total", mutexL))
	require.Equal(t, 1.0, metric(t, reg, "shepherd_hold_pauses_total", electionL))
	require.Equal(t, 1.0, metric(t, reg, "shepherd_hold_pause_seconds", map[string]string{"recipe": "mutex", "outcome": "resumed"}))
	require.Equal(t, 0.0, metric(t, reg, "shepherd_hold_lost_total", mutexL))
	require.Equal(t, 1.0, metric(t, reg, "shepherd_holds", mutexL))

	p.Stall()
	p.Sever()
	require.Eventually(t, func() bool { return metric(t, reg, "shepherd_hold_pauses_total", mutexL) == 2 },
		10*time.Second, 5*time.Millisecond)
	cred, ok := p.Credentials(m.Hold().SessionID())
	require.True(t, ok)
	require.NoError(t, zktest.ExpireSession(ctx, zk.Servers(), cred))
	p.Heal()
	require.Eventually(t, func() bool {
		return metric(t, reg, "shepherd_hold_lost_after_pause_total", mutexL) == 1 &&
			metric(t, reg, "shepherd_hold_lost_total", mutexL) == 1
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, 1.0, metric(t, reg, "shepherd_hold_pause_seconds", map[string]string{"recipe": "mutex", "outcome": "lost"}))
	require.Equal(t, 1.0, metric(t, reg, "shepherd_hold_resumes_total", mutexL))
	_ = m.Unlock(ctx)
}

// series reports whether reg has a series of name with exactly these labels'
// values (among others), and its value.
func series(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			match := true
			for k, v := range labels {
				match = match && have[k] == v
			}
			if match {
				return m.GetGauge().GetValue() + m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}

// TestFollowerExportsZero: each process (here: each session with a registry
// of its own) exports shepherd_leader{path} from Run's start, 0 while it
// follows and after its Run ended, so that sum by (path) counts the leaders;
// the leadership counters start at 0.
func TestFollowerExportsZero(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := uniquePath(t)
	type candidate struct {
		reg     *prometheus.Registry
		stop    context.CancelFunc
		done    chan error
		elected chan struct{}
	}
	var full string
	start := func(id string) *candidate {
		c := &candidate{reg: prometheus.NewRegistry(), done: make(chan error, 1), elected: make(chan struct{}, 1)}
		obs, err := promobs.New(c.reg)
		require.NoError(t, err)
		s := open(t, zk.Servers(), session.WithObserver(obs))
		full = s.Path(path)
		e, err := election.New(s, path, id)
		require.NoError(t, err)
		rctx, rcancel := context.WithCancel(ctx)
		c.stop = rcancel
		go func() {
			c.done <- e.Run(rctx, election.Callbacks{OnElected: func(lc context.Context, _ election.Term) {
				c.elected <- struct{}{}
				<-lc.Done()
			}})
		}()
		return c
	}
	leader := func(c *candidate) (float64, bool) {
		return series(t, c.reg, "shepherd_leader", map[string]string{"path": full})
	}
	a := start("a")
	<-a.elected
	require.Eventually(t, func() bool { v, ok := leader(a); return ok && v == 1 }, 5*time.Second, 5*time.Millisecond)
	b := start("b")
	// b follows: its series is there, at 0, and so are its counters.
	require.Eventually(t, func() bool { _, ok := leader(b); return ok }, 5*time.Second, 5*time.Millisecond)
	v, _ := leader(b)
	require.Equal(t, 0.0, v)
	for _, l := range []map[string]string{{"path": full, "change": "elected"}, {"path": full, "change": "revoked"}} {
		v, ok := series(t, b.reg, "shepherd_leadership_changes_total", l)
		require.True(t, ok, "%v", l)
		require.Equal(t, 0.0, v)
	}
	v, ok := series(t, b.reg, "shepherd_leader_callback_stuck_total", map[string]string{"path": full})
	require.True(t, ok)
	require.Equal(t, 0.0, v)

	// a's Run ends: a exports 0, b leads.
	a.stop()
	require.NoError(t, <-a.done)
	<-b.elected
	require.Eventually(t, func() bool { v, ok := leader(b); return ok && v == 1 }, 5*time.Second, 5*time.Millisecond)
	v, ok = leader(a)
	require.True(t, ok)
	require.Equal(t, 0.0, v)

	// b's Run ends too: 0 everywhere.
	b.stop()
	require.NoError(t, <-b.done)
	v, ok = leader(b)
	require.True(t, ok)
	require.Equal(t, 0.0, v)
}
