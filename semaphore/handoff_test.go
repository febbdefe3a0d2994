package semaphore_test

import (
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/semaphore"
)

// TestLongLineHandoffCostsTheSame: behind a line of a thousand, each new
// head of the semaphore's line takes over from the last without listing the
// line (the head that waited marks its node in its take;
// line.AwaitOptions.MarkOnRelease): an acquisition costs a few hundred
// bytes, counted by the server. Without the mark each new head lists the
// whole line (about 50 KB here).
func TestLongLineHandoffCostsTheSame(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 60*time.Second)
	const chain, tail = 6, 1000
	hs := open(t, zk.Servers())
	holder, err := semaphore.New(hs, path, 1)
	require.NoError(t, err)
	held, err := holder.Acquire(ctx)
	require.NoError(t, err)
	// The holder's own-node watch set (10 ms into its hold) before the
	// server's watches are counted to tell when each waiter is in line.
	testutil.AwaitDataWatches(t, zk, 0, hs, 1)
	type result struct {
		l   *semaphore.Lease
		err error
	}
	got := make(chan result, chain)
	for range chain {
		s, err := semaphore.New(open(t, zk.Servers()), path, 1)
		require.NoError(t, err)
		before := watches(t)
		go func() {
			l, err := s.Acquire(ctx)
			got <- result{l, err}
		}()
		require.Eventually(t, func() bool { return watches(t) > before }, 10*time.Second, 2*time.Millisecond)
	}
	// A thousand more contenders behind them (nodes only).
	fill := open(t, zk.Servers())
	ep, err := fill.Wait(ctx)
	require.NoError(t, err)
	for range tail {
		_, err := ep.Conn().Create(path+"/locks/"+line.ProtectedPrefix(line.NewGUID(), recipe.KindLock), nil,
			gozk.FlagEphemeral|gozk.FlagSequence, gozk.WorldACL(gozk.PermAll))
		require.NoError(t, err)
	}

	p0, b0 := testutil.Traffic(t, zk, 0)
	require.NoError(t, held.Release(ctx))
	for range chain {
		r := <-got
		require.NoError(t, r.err)
		require.NoError(t, r.l.Release(ctx))
	}
	p1, b1 := testutil.Traffic(t, zk, 0)
	listing := testutil.ListingBytes(t, zk, fill, path+"/locks")
	perBytes := float64(b1-b0) / chain
	perReq := float64(p1-p0-1) / chain
	t.Logf("line of %d: %d acquisitions cost %d bytes (%.0f each) and %d requests (%.2f each); one listing of the line costs %d",
		chain+tail, chain, b1-b0, perBytes, p1-p0-1, perReq, listing)
	// At most one listing of the line in the six handoffs: on a loaded
	// machine (make test runs two packages and the chaos suite at once)
	// one handoff in a run now and then looks at the line again (seen
	// twice: 10,802 bytes each); every handoff listing it, as without the
	// mark, costs six listings.
	require.Less(t, float64(b1-b0-listing)/chain, 2048.0, "bytes per acquisition behind a line of %d, less one listing", chain+tail)
}
