package schedule

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// TestEveryTickOnce: one candidate, ten ticks: each runs exactly once, in
// order, each not before it is due, and the record says the last finished.
// The tests that count runs use CatchUpAll: on a loaded machine a tick may
// start more than an interval late, which CatchUpOnce (the default) would
// rightly treat as a miss.
func TestEveryTickOnce(t *testing.T) {
	path := uniquePath(t)
	b := newBook()
	every := 200 * time.Millisecond
	sess := testutil.Open(t, zkc.Servers())
	c := start(t, sess, path, "a", every, b.job("a", nil), withHooks(b.hooks("a")), WithCatchUp(noSkip))
	first := b.waitTick(t, 0, 10*time.Second)
	last := b.waitTick(t, 9, 10*time.Second)
	require.NoError(t, c.stop(t))
	require.EqualValues(t, 0, first.tick.N)
	b.exactlyOnce(t, 0, 9)
	for _, r := range b.runsOf(0) {
		require.Equal(t, 1, r.tick.Attempt)
		require.NotZero(t, r.tick.Term)
	}
	rec, epoch := record(t, c.s)
	require.Equal(t, stateFinished, rec.State)
	require.Equal(t, "ok", rec.Outcome)
	require.GreaterOrEqual(t, rec.N, int64(9))
	require.Equal(t, epoch.UnixMilli(), rec.Epoch)
	require.Equal(t, epoch.Add(9*every), last.tick.Scheduled)
	done := b.checkFinishes(t)
	for n := int64(0); n <= 9; n++ {
		require.Contains(t, done, n)
		// Started is the server's time when the leader decided to run it.
		require.GreaterOrEqual(t, done[n].rec.Started, epoch.Add(time.Duration(n)*every).UnixMilli(), "tick %d started early", n)
	}
}

// noSkip lets no tick be skipped in tests that count runs.
var noSkip = CatchUpAll(1000)

// TestSkewedHostClocks: two candidates whose host clocks are ten minutes
// fast and ten minutes slow: over 50 ticks every tick runs exactly once,
// numbered from 0, on time by the server's clock. Then a handover between
// them (the leader's Run ends) changes nothing.
func TestSkewedHostClocks(t *testing.T) {
	path := uniquePath(t)
	b := newBook()
	every := 100 * time.Millisecond
	sa := testutil.Open(t, zkc.Servers())
	sb := testutil.Open(t, zkc.Servers())
	cands := map[string]*cand{
		"fast": start(t, sa, path, "fast", every, b.job("fast", nil), withClock(skewed(10*time.Minute)), withHooks(b.hooks("fast")), WithCatchUp(noSkip)),
		"slow": start(t, sb, path, "slow", every, b.job("slow", nil), withClock(skewed(-10*time.Minute)), withHooks(b.hooks("slow")), WithCatchUp(noSkip)),
	}
	first := b.waitTick(t, 0, 10*time.Second)
	require.EqualValues(t, 0, first.tick.N, "the first tick of a new schedule is 0")
	r := b.waitTick(t, 49, 20*time.Second)
	b.exactlyOnce(t, 0, 49)
	_, epoch := record(t, cands[r.id].s)
	now := serverNow(t, sa, path)
	require.WithinDuration(t, now, epoch.Add(49*every), 3*time.Second, "tick 49 ran about 49 intervals after the epoch, by the server's clock, not minutes off")

	// The leader goes; the other one (the other clock) continues.
	leader := r.id
	require.NoError(t, cands[leader].stop(t))
	next := b.waitTick(t, r.tick.N+5, 10*time.Second)
	require.NotEqual(t, leader, next.id)
	b.exactlyOnce(t, 0, next.tick.N)
	b.checkFinishes(t)
}

// TestGracefulHandover: the leader's Run ends while its job runs: the job's
// ctx is cancelled, its end is recorded (cancelled), and the next leader
// continues with the next tick; nothing runs twice.
func TestGracefulHandover(t *testing.T) {
	path := uniquePath(t)
	b := newBook()
	every := 200 * time.Millisecond
	inTick := make(chan string, 10)
	blocking := func(id string) func(ctx context.Context, t Tick) error {
		return func(ctx context.Context, t Tick) error {
			if t.N == 3 {
				inTick <- id
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}
	}
	cands := map[string]*cand{}
	for _, id := range []string{"a", "b"} {
		sess := testutil.Open(t, zkc.Servers())
		cands[id] = start(t, sess, path, id, every, b.job(id, blocking(id)), withHooks(b.hooks(id)), WithCatchUp(noSkip))
	}
	var leader string
	select {
	case leader = <-inTick:
	case <-time.After(10 * time.Second):
		t.Fatalf("tick 3 never ran: %s", b.summary())
	}
	require.NoError(t, cands[leader].stop(t))
	next := b.waitTick(t, 4, 10*time.Second)
	require.NotEqual(t, leader, next.id)
	require.EqualValues(t, 4, next.tick.N, "the next leader continues with the next tick")
	b.waitTick(t, 6, 10*time.Second)
	b.exactlyOnce(t, 0, 6)
	done := b.checkFinishes(t)
	require.Equal(t, leader, done[3].id)
	require.Contains(t, done[3].rec.Outcome, "cancelled")
}

// TestLeaderExpiredMidTick: the leader's session expires while its job runs
// tick 3. Each misfire policy does what it says; no tick is finished twice;
// the old leader's job, returning only after the new leader has gone on,
// cannot record its end (ErrLost).
func TestLeaderExpiredMidTick(t *testing.T) {
	for _, policy := range []Misfire{RerunInterrupted, SkipInterrupted} {
		t.Run(policy.String(), func(t *testing.T) {
			path := uniquePath(t)
			b := newBook()
			every := 200 * time.Millisecond
			inTick := make(chan string, 10)
			release := make(chan struct{})
			job := func(id string) func(ctx context.Context, t Tick) error {
				return func(ctx context.Context, t Tick) error {
					if t.N == 3 && t.Attempt == 1 {
						inTick <- id
						<-release // ignores its ctx: a job that does not stop at once
					}
					return nil
				}
			}
			proxies := map[string]*zktest.Proxy{}
			sessions := map[string]*session.Session{}
			for _, id := range []string{"a", "b"} {
				p, err := zktest.NewProxy(zkc.Servers()...)
				require.NoError(t, err)
				t.Cleanup(func() { p.Close() })
				proxies[id] = p
				sessions[id] = testutil.Open(t, p.Addrs(), session.WithSessionTimeout(2*time.Second))
				// noSkip: a tick started late (a loaded machine) is run, not
				// skipped by the catch-up: tick 3 is the one under test.
				start(t, sessions[id], path, id, every, b.job(id, job(id)), withHooks(b.hooks(id)), WithMisfire(policy),
					WithCatchUp(noSkip))
			}
			t.Cleanup(func() {
				select {
				case <-release:
				default:
					close(release)
				}
			})
			var old string
			select {
			case old = <-inTick:
			case <-time.After(10 * time.Second):
				t.Fatalf("tick 3 never ran: %s", b.summary())
			}
			require.NoError(t, proxies[old].ExpireSession(testutil.Ctx(t, 10*time.Second), sessions[old].SessionID()))
			next := b.waitRun(t, func(r run) bool { return r.tick.N >= 3 && r.id != old }, 10*time.Second)
			switch policy {
			case RerunInterrupted:
				require.EqualValues(t, 3, next.tick.N)
				require.Equal(t, 2, next.tick.Attempt)
			case SkipInterrupted:
				require.Greater(t, next.tick.N, int64(3))
			}
			after := b.waitTick(t, 6, 10*time.Second)
			close(release) // the old leader's job returns now: its end must be refused
			require.Eventually(t, func() bool {
				b.mu.Lock()
				defer b.mu.Unlock()
				for _, f := range b.finishes {
					if f.id == old && f.rec.N == 3 {
						return true
					}
				}
				return false
			}, 10*time.Second, 5*time.Millisecond)
			b.mu.Lock()
			for _, f := range b.finishes {
				if f.id == old && f.rec.N == 3 {
					require.ErrorIs(t, f.err, ErrLost, "the stale leader's finish")
				}
			}
			b.mu.Unlock()
			done := b.checkFinishes(t)
			c := b.counts()
			switch policy {
			case RerunInterrupted:
				require.Equal(t, 2, c[3], "tick 3: the interrupted run and its rerun")
				require.Equal(t, next.id, done[3].id)
				require.Equal(t, 2, done[3].rec.Attempt)
			case SkipInterrupted:
				require.Equal(t, 1, c[3], "tick 3 is not run again")
				require.NotContains(t, done, int64(3), "tick 3 is never finished")
			}
			for n := int64(0); n <= after.tick.N; n++ {
				if n != 3 {
					require.LessOrEqual(t, c[n], 1, "tick %d", n)
				}
			}
		})
	}
}

// TestCatchUp: the only candidate stops after tick 2 and is back five and
// a half intervals later: each catch-up policy runs what it says, counted
// from D, the latest tick due at the new leader's first decision (by the
// server's time of that decision): that decision skips the missed ticks
// the policy drops and runs the first it keeps. The second run after the
// gap takes two and a half intervals, so the policy is applied again
// (CatchUpSkip and CatchUpOnce skip the tick after it). From there on
// every tick runs once or is reported skipped, never both, never neither:
// on a loaded machine any decision may come more than an interval late,
// and the policy then rightly skips (CatchUpOnce ran 9 then 14 in a CI
// run), so the test does not expect a tick it did not make late to run.
func TestCatchUp(t *testing.T) {
	every := 300 * time.Millisecond
	for _, tc := range []struct {
		policy CatchUp
		first  int64 // the first tick run after the gap, relative to D
	}{
		{CatchUpSkip, 1},
		{CatchUpOnce, 0},
		{CatchUpAll(3), -2},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			path := uniquePath(t)
			b := newBook()
			skips := &testutil.Recorder{}
			sess := testutil.Open(t, zkc.Servers(), session.WithObserver(skips))
			c := start(t, sess, path, "a", every, b.job("a", nil), WithCatchUp(tc.policy))
			b.waitTick(t, 2, 10*time.Second)
			require.NoError(t, c.stop(t))
			// The record's last tick: 2, or later if the stop took more
			// than an interval (a loaded machine ran 5 before it ended);
			// what follows counts from it.
			rec, epoch := record(t, c.s)
			require.GreaterOrEqual(t, rec.N, int64(2))
			// Nobody leads for five and a half intervals.
			time.Sleep(5*every + every/2) // the outage: its length is the fault
			skips.Reset()                 // what the first leadership skipped is not this test's
			decisions := make(chan time.Time, 100)
			var after atomic.Int32
			slowSecond := func(context.Context, Tick) error {
				if after.Add(1) == 2 {
					time.Sleep(every * 5 / 2) // the job's work: it overruns two intervals
				}
				return nil
			}
			start(t, sess, path, "a", every, b.job("a", slowSecond), WithCatchUp(tc.policy),
				withHooks(hooks{decided: func(now time.Time) { decisions <- now }}))
			var first time.Time
			select {
			case first = <-decisions:
			case <-time.After(10 * time.Second):
				t.Fatal("no decision")
			}
			d := int64(first.Sub(epoch) / every)
			require.GreaterOrEqual(t, d, rec.N+5)
			b.waitTick(t, d+tc.first+4, 10*time.Second)
			var got []int64
			for _, r := range b.runsOf(rec.N + 1) {
				got = append(got, r.tick.N)
			}
			skipped := skippedTicks(skips, path)
			require.NotEmpty(t, skipped, "the first decision skips the missed ticks the policy drops")
			require.Equal(t, [2]int64{rec.N + 1, d + tc.first - 1}, skipped[0],
				"ticks skipped at the first decision (latest due then: %d)", d)
			require.Equal(t, d+tc.first, got[0], "the first tick run after the gap (latest due at the first decision: %d; runs %v, skipped %v)", d, got, skipped)
			fate := map[int64]string{}
			for _, n := range got {
				require.Empty(t, fate[n], "tick %d run twice (runs %v, skipped %v)", n, got, skipped)
				fate[n] = "run"
			}
			for _, s := range skipped {
				for n := s[0]; n <= s[1]; n++ {
					require.Empty(t, fate[n], "tick %d skipped after it was %s (runs %v, skipped %v)", n, fate[n], got, skipped)
					fate[n] = "skipped"
				}
			}
			for n := rec.N + 1; n <= got[len(got)-1]; n++ {
				require.NotEmpty(t, fate[n], "tick %d neither run nor reported skipped (runs %v, skipped %v)", n, got, skipped)
			}
			if tc.policy != CatchUpAll(3) { // two missed ticks are within its three
				require.Equal(t, "skipped", fate[got[1]+1], "the tick after the overrun (runs %v, skipped %v)", got, skipped)
			}
		})
	}
}

// TestInvalid: bad arguments fail at New; a candidate with another interval
// fails at Run with ErrIntervalMismatch.
func TestInvalid(t *testing.T) {
	sess := testutil.Open(t, zkc.Servers())
	path := uniquePath(t)
	for _, tc := range []struct {
		every time.Duration
		opts  []Option
	}{
		{0, nil},
		{time.Microsecond, nil},
		{time.Second, []Option{WithCatchUp(CatchUpAll(0))}},
		{time.Second, []Option{WithCatchUp(CatchUp{})}},
		{time.Second, []Option{WithMisfire(0)}},
		{time.Second, []Option{WithMinSpacing(-1)}},
		{time.Second, []Option{WithRunTimeout(-1)}},
		{time.Second, []Option{nil}},
	} {
		_, err := New(sess, path, "a", tc.every, tc.opts...)
		require.ErrorIs(t, err, ErrInvalidArgument)
	}
	_, err := New(sess, "bad", "a", time.Second)
	require.ErrorIs(t, err, ErrInvalidPath)
	_, err = New(sess, path, "a/b", time.Second)
	require.Error(t, err)

	s1, err := New(sess, path, "a", time.Second)
	require.NoError(t, err)
	_, err = s1.Record(testutil.Ctx(t, 10*time.Second))
	require.ErrorIs(t, err, ErrNoRecord)
	b := newBook()
	c := start(t, sess, path, "a", time.Second, b.job("a", nil))
	b.waitTick(t, 0, 10*time.Second)
	require.NoError(t, c.stop(t))
	s2, err := New(sess, path, "b", 2*time.Second)
	require.NoError(t, err)
	err = s2.Run(testutil.Ctx(t, 10*time.Second), func(context.Context, Tick) error { return nil })
	require.ErrorIs(t, err, ErrIntervalMismatch)
	require.False(t, errors.Is(err, ErrBadRecord))
}

// TestPauseRidesThrough: under PauseOnDisconnect the leader's connection
// drops while its job runs a tick (the first from tick 3 on that runs: a
// busy machine may start one late enough that the catch-up policy skips
// it) and stays down for several intervals: the job's ctx is not
// cancelled, its end is recorded once the same session is back, no tick
// starts during the pause, and none runs twice.
func TestPauseRidesThrough(t *testing.T) {
	path := uniquePath(t)
	b := newBook()
	every := 200 * time.Millisecond
	p, err := zktest.NewProxy(zkc.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	sess := testutil.Open(t, p.Addrs(), session.WithSessionTimeout(6*time.Second))
	inTick := make(chan int64, 1) // the tick held
	release := make(chan struct{})
	var jobErr error
	var holding atomic.Bool
	job := func(ctx context.Context, tk Tick) error {
		if tk.N >= 3 && holding.CompareAndSwap(false, true) {
			inTick <- tk.N
			<-release
			jobErr = ctx.Err() // read by the test once the held tick's end is recorded
		}
		return nil
	}
	c := start(t, sess, path, "a", every, b.job("a", job), withHooks(b.hooks("a")),
		WithElection(election.WithDisconnectPolicy(session.PauseOnDisconnect)))
	var held int64
	select {
	case held = <-inTick:
	case <-time.After(10 * time.Second):
		t.Fatalf("no tick from 3 on ran: %s", b.summary())
	}
	l := c.s.e.Leadership()
	require.NotNil(t, l)
	p.Refuse(true)
	p.Sever()
	select {
	case <-l.Paused():
	case <-time.After(10 * time.Second):
		t.Fatal("leadership did not pause")
	}
	paused := time.Now()
	close(release) // the job returns while paused: its end waits at the gate
	// Several ticks come due during the pause.
	time.Sleep(4 * every) // the pause's length: the fault under test
	require.Len(t, b.runsOf(held+1), 0, "no tick starts during a pause")
	healed := time.Now() // no tick can start before: the session cannot be back
	p.Refuse(false)
	require.NoError(t, l.Gate(testutil.Ctx(t, 20*time.Second)), "leadership resumes with the same session")
	resumed := time.Now()
	next := b.waitTick(t, held+1, 10*time.Second)
	b.waitTick(t, next.tick.N+2, 10*time.Second)
	require.NoError(t, c.stop(t))
	require.NoError(t, jobErr, "a pause does not cancel the job's ctx")
	for _, r := range b.runsOf(0) {
		require.Falsef(t, r.at.After(paused) && r.at.Before(healed), "tick %d started during the pause", r.tick.N)
	}
	c3 := b.counts()
	for n, k := range c3 {
		require.Equalf(t, 1, k, "tick %d ran %d times", n, k)
	}
	done := b.checkFinishes(t)
	require.Contains(t, done, held, "the held tick's end is recorded after the resume")
	require.Equal(t, l.Term(), next.tick.Term, "same leadership, same term")
	t.Logf("paused %v; first tick after the pause: %d (scheduled %v before it ran)", resumed.Sub(paused).Round(time.Millisecond),
		next.tick.N, next.at.Sub(next.tick.Scheduled).Round(time.Millisecond))
}

// TestRunTimeout: the job's ctx ends after the run timeout; the tick is
// recorded finished ("timeout") and not run again; the next one runs.
func TestRunTimeout(t *testing.T) {
	path := uniquePath(t)
	b := newBook()
	every := 200 * time.Millisecond
	sess := testutil.Open(t, zkc.Servers())
	job := func(ctx context.Context, tk Tick) error {
		if tk.N == 1 {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	c := start(t, sess, path, "a", every, b.job("a", job), withHooks(b.hooks("a")), WithRunTimeout(50*time.Millisecond), WithCatchUp(noSkip))
	b.waitTick(t, 3, 10*time.Second)
	require.NoError(t, c.stop(t))
	b.exactlyOnce(t, 0, 3)
	done := b.checkFinishes(t)
	require.Contains(t, done[1].rec.Outcome, "timeout")
	require.Equal(t, "ok", done[2].rec.Outcome)
}

// TestMinSpacing: with ticks every 100ms and a minimum spacing of 250ms, no
// two starts are closer than 250ms (by the server's clock: the record's
// start times), no tick runs twice, and the skipped ones are the catch-up
// policy's (the latest due runs).
func TestMinSpacing(t *testing.T) {
	path := uniquePath(t)
	b := newBook()
	every := 100 * time.Millisecond
	sess := testutil.Open(t, zkc.Servers())
	starts := make(chan int64, 100)
	c := start(t, sess, path, "a", every, b.job("a", nil), WithMinSpacing(250*time.Millisecond),
		withHooks(hooks{finished: func(r Record, err error) {
			if err == nil {
				starts <- r.Started
			}
		}}))
	b.waitTick(t, 12, 10*time.Second)
	require.NoError(t, c.stop(t))
	close(starts)
	var prev int64
	var n int
	for s := range starts {
		if prev != 0 {
			require.GreaterOrEqual(t, s-prev, int64(250), "a start %dms after the previous one", s-prev)
		}
		prev = s
		n++
	}
	require.GreaterOrEqual(t, n, 4)
	for k, v := range b.counts() {
		require.Equalf(t, 1, v, "tick %d", k)
	}
}

// TestLongestInterval: with the largest Duration as the interval, the next
// tick's due time is past what an int64 of nanoseconds holds; after tick 0
// the leader waits (a positive wait, for as long as the true distance to
// the next tick), and decides no run. (The due time wraps around int64, and
// the wait, due minus now, wraps back: right as long as the true wait fits
// in a Duration, which it always does.) A decision, not a server: no sleep.
func TestLongestInterval(t *testing.T) {
	every := time.Duration(math.MaxInt64)
	epoch := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC).UnixNano()
	ld := &leader{s: &Schedule{every: every, cfg: config{misfire: RerunInterrupted, catchUp: CatchUpOnce}},
		epoch: epoch, rec: Record{N: 0, State: stateFinished}}
	for _, since := range []time.Duration{0, time.Hour, 100 * 365 * 24 * time.Hour} {
		n, attempt, wait := ld.decide(epoch + int64(since))
		require.Zero(t, n, "after %v", since)
		require.Zero(t, attempt, "after %v: a run decided", since)
		require.Equal(t, every-since, wait, "after %v: the wait for tick 1", since)
	}
}
