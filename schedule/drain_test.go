package schedule

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
)

// TestDrainRollingDeploy: three candidates are replaced one after the
// other, each stopped (Run's ctx ends, as at SIGTERM) while it runs a tick,
// as in a rolling deploy. With a drain longer than the job, the tick in
// flight finishes ("ok") before the handover: every tick runs exactly once
// and none is cancelled. With a drain shorter than the job, the tick in
// flight is recorded interrupted and the next leader runs it again (attempt
// 2): no tick is lost (each ends "ok" exactly once), and a tick is run
// again only after an interruption recorded by its first run. (Before
// WithDrain, the stopped leader's tick was recorded "cancelled" and never
// run again.)
func TestDrainRollingDeploy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drain time.Duration
	}{{"within", 10 * time.Second}, {"past", 20 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) { rollingDeploy(t, tc.drain) })
	}
}

func rollingDeploy(t *testing.T, drain time.Duration) {
	path := uniquePath(t)
	b := newBook()
	every := 100 * time.Millisecond
	work := 300 * time.Millisecond // the job's work, longer than an interval
	job := func(ctx context.Context, _ Tick) error {
		select {
		case <-time.After(work):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	cands := map[string]*cand{}
	add := func(id string) {
		sess := testutil.Open(t, zkc.Servers())
		cands[id] = start(t, sess, path, id, every, b.job(id, job), withHooks(b.hooks(id)),
			WithCatchUp(noSkip), WithDrain(drain))
	}
	for i := range 3 {
		add(fmt.Sprintf("v1-%d", i))
	}
	// Replace each of the three, stopping each while it runs a tick (the
	// election is fair: the v1s lead in turn before any v2).
	for i := range 3 {
		r := b.waitRun(t, func(r run) bool { return strings.HasPrefix(r.id, "v1-") && cands[r.id] != nil }, 20*time.Second)
		require.NoError(t, cands[r.id].stop(t))
		delete(cands, r.id)
		add(fmt.Sprintf("v2-%d", i))
	}
	last := b.waitRun(t, func(r run) bool { return strings.HasPrefix(r.id, "v2-") && r.tick.N >= 5 }, 20*time.Second)
	for _, c := range cands {
		require.NoError(t, c.stop(t))
	}
	done := b.checkFinishes(t)
	interrupted := map[int64]int{}
	b.mu.Lock()
	for _, f := range b.finishes {
		if f.err == nil && strings.HasPrefix(f.rec.Outcome, outcomeInterrupted) {
			require.Equal(t, stateStarted, f.rec.State)
			interrupted[f.rec.N]++
		}
	}
	b.mu.Unlock()
	counts := b.counts()
	for n := int64(0); n < last.tick.N; n++ {
		f, ok := done[n]
		require.Truef(t, ok, "tick %d has no end recorded (runs:%s)", n, b.summary())
		require.Equalf(t, stateFinished, f.rec.State, "tick %d", n)
		require.Equalf(t, "ok", f.rec.Outcome, "tick %d: its job was cut short (runs:%s)", n, b.summary())
		require.Equalf(t, 1+interrupted[n], counts[n], "tick %d: runs, and interruptions recorded", n)
		if drain > work {
			require.Zerof(t, interrupted[n], "tick %d interrupted within the drain", n)
		}
	}
	if drain < work {
		var total int
		for _, k := range interrupted {
			total += k
		}
		require.GreaterOrEqual(t, total, 3, "each of the three stops came while a tick ran (runs:%s)", b.summary())
	}
}
