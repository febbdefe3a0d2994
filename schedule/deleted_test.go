package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/testutil"
)

// TestRecordDeletedUnderLeader: the record is deleted by hand under a live
// leader. The leadership, which has read it, writes it back from what it
// knows: the epoch is the same, tick 0 does not run again, no tick runs
// twice, and MinSpacing still spaces the next start from the last one
// (before, the leader created a new record with a new epoch and ran tick 0
// again at once).
func TestRecordDeletedUnderLeader(t *testing.T) {
	path := uniquePath(t)
	b := newBook()
	every := 100 * time.Millisecond
	spacing := 400 * time.Millisecond
	sess := testutil.Open(t, zkc.Servers())
	c := start(t, sess, path, "a", every, b.job("a", nil), withHooks(b.hooks("a")), WithMinSpacing(spacing), WithCatchUp(noSkip))
	r := b.waitTick(t, 3, 10*time.Second)
	before, _ := record(t, c.s)

	other := testutil.Open(t, zkc.Servers())
	ep, err := other.Wait(testutil.Ctx(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, ep.Conn().Delete(other.Path(path+"/"+layout.ScheduleState), -1))

	next := b.waitRun(t, func(x run) bool { return x.at.After(r.at) && x.tick.N != r.tick.N }, 10*time.Second)
	after := b.waitTick(t, next.tick.N+2, 10*time.Second)
	require.NoError(t, c.stop(t))
	require.Greater(t, next.tick.N, r.tick.N, "the first tick run after the deletion (runs:%s)", b.summary())
	b.exactlyOnce(t, r.tick.N, after.tick.N)
	require.Equal(t, 1, b.counts()[0], "tick 0 ran again (runs:%s)", b.summary())
	rec, _ := record(t, c.s)
	require.Equal(t, before.Epoch, rec.Epoch, "the epoch changed")
	done := b.checkFinishes(t)
	var prev int64
	for n := r.tick.N; n <= after.tick.N; n++ {
		if f, ok := done[n]; ok {
			if prev != 0 {
				require.GreaterOrEqual(t, f.rec.Started-prev, spacing.Milliseconds(), "tick %d started %dms after the previous one", n, f.rec.Started-prev)
			}
			prev = f.rec.Started
		}
	}
}
