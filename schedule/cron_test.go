package schedule

import (
	"context"
	"log/slog"
	"testing"
	"time"
	_ "time/tzdata" // Europe/Paris wherever the test runs

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
)

// cronLeader is a leader of a cron schedule, for its decisions alone.
func cronLeader(t *testing.T, spec string, epoch time.Time, rec Record) *leader {
	t.Helper()
	sched, err := ParseCron(spec)
	require.NoError(t, err)
	return &leader{s: &Schedule{cron: &cronTimes{spec: spec, sched: sched}, log: slog.New(slog.DiscardHandler),
		cfg: config{misfire: RerunInterrupted, catchUp: CatchUpOnce}}, epoch: epoch.UnixNano(), rec: rec}
}

// TestCronDue: a daily cron in Paris. Tick 0 is the first activation at or
// after the epoch, each next tick the next day's, across the change to
// summer time (29 March 2026: 02:30 does not exist, and robfig/cron skips
// that day), counted from the epoch or from the record's tick and its due
// time, with the same answers; latest and decide agree with them.
func TestCronDue(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	spec := "CRON_TZ=Europe/Paris 30 2 * * *"
	epoch := time.Date(2026, 3, 26, 12, 0, 0, 0, paris)
	ld := cronLeader(t, spec, epoch, Record{N: -1, State: stateFinished})
	at := func(n int64) time.Time { return time.Unix(0, ld.due(n)).In(paris) }
	require.Equal(t, time.Date(2026, 3, 27, 2, 30, 0, 0, paris), at(0))
	require.Equal(t, time.Date(2026, 3, 28, 2, 30, 0, 0, paris), at(1))
	require.Equal(t, time.Date(2026, 3, 30, 2, 30, 0, 0, paris), at(2), "29 March, when 02:30 does not exist, has no tick")
	require.Equal(t, time.Date(2026, 3, 31, 2, 30, 0, 0, paris), at(3))
	require.Equal(t, time.Date(2026, 4, 10, 2, 30, 0, 0, paris), at(13))

	// From the record of tick 3 (its due time kept), the same times.
	rec := Record{N: 3, State: stateFinished, Due: at(3).UnixMilli()}
	from := cronLeader(t, spec, epoch, rec)
	for n := int64(3); n <= 13; n++ {
		require.Equal(t, at(n), time.Unix(0, from.due(n)).In(paris), "tick %d", n)
	}
	require.EqualValues(t, -1, ld.latest(epoch.UnixNano()))
	require.EqualValues(t, 2, ld.latest(at(2).UnixNano()))
	require.EqualValues(t, 2, ld.latest(at(3).UnixNano()-1))
	require.EqualValues(t, 13, from.latest(at(13).Add(time.Hour).UnixNano()))

	// Decisions: before tick 4, wait for it; ten days on, CatchUpOnce runs
	// the latest tick now.
	n, _, wait := from.decide(at(4).UnixNano() - int64(time.Minute))
	require.Zero(t, n)
	require.Equal(t, time.Minute, wait)
	n, attempt, wait := from.decide(at(13).Add(time.Hour).UnixNano())
	require.EqualValues(t, 13, n)
	require.Equal(t, 1, attempt)
	require.Zero(t, wait)
}

// TestCronBadExpression: a bad expression or zone is ErrInvalidArgument at
// NewCron, and nothing is written.
func TestCronBadExpression(t *testing.T) {
	sess := testutil.Open(t, zkc.Servers())
	for _, spec := range []string{"", "61 * * * *", "* * *", "CRON_TZ=Mars/Olympus 0 3 * * *", "@fortnightly"} {
		_, err := NewCron(sess, uniquePath(t), "a", spec)
		require.ErrorIs(t, err, ErrInvalidArgument, "%q", spec)
	}
}

// TestCronTicks: a cron schedule every second, two candidates whose host
// clocks are ten minutes apart: each tick runs exactly once, due on a whole
// second, one second after the last, by the server's clock; the record
// names the expression and each tick's due time; a candidate with an
// interval on the same path is refused (ErrIntervalMismatch), and one
// with another expression too.
func TestCronTicks(t *testing.T) {
	path := uniquePath(t)
	b := newBook()
	spec := "* * * * * *"
	var cands []*cand
	for i, skew := range []time.Duration{10 * time.Minute, -10 * time.Minute} {
		id := string(rune('a' + i))
		sess := testutil.Open(t, zkc.Servers())
		s, err := NewCron(sess, path, id, spec, withClock(skewed(skew)), withHooks(b.hooks(id)), WithCatchUp(noSkip))
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		c := &cand{s: s, sess: sess, cancel: cancel, done: make(chan error, 1)}
		go func() { c.done <- s.Run(ctx, b.job(id, nil)) }()
		t.Cleanup(func() { c.stop(t) })
		cands = append(cands, c)
	}
	first := b.waitTick(t, 0, 10*time.Second)
	b.waitTick(t, 3, 10*time.Second)
	b.exactlyOnce(t, 0, 3)
	runs := b.runsOf(0)
	for i, r := range runs[:4] {
		require.Zero(t, r.tick.Scheduled.Nanosecond(), "tick %d due on a whole second", r.tick.N)
		if i > 0 {
			require.Equal(t, time.Second, r.tick.Scheduled.Sub(runs[i-1].tick.Scheduled))
		}
	}
	rec, epoch := record(t, cands[0].s)
	require.Equal(t, spec, rec.Cron)
	require.Empty(t, rec.Every)
	require.False(t, first.tick.Scheduled.Before(epoch), "tick 0 is due at or after the epoch")
	require.Less(t, first.tick.Scheduled.Sub(epoch), time.Second)
	require.NotZero(t, rec.Due)

	for _, mk := range []func() (*Schedule, error){
		func() (*Schedule, error) { return New(cands[0].sess, path, "c", time.Second) },
		func() (*Schedule, error) { return NewCron(cands[0].sess, path, "c", "*/2 * * * * *") },
	} {
		s, err := mk()
		require.NoError(t, err)
		err = s.Run(testutil.Ctx(t, 10*time.Second), func(context.Context, Tick) error { return nil })
		require.ErrorIs(t, err, ErrIntervalMismatch)
	}
	st, ok, err := Inspect(testutil.Ctx(t, 10*time.Second), cands[0].sess, path)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, spec, st.Cron)
	require.Equal(t, time.Duration(0), st.Every)
	require.Equal(t, time.UnixMilli(st.Record.Due).Add(time.Second).UTC(), st.NextDue)
}
