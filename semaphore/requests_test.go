package semaphore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
)

// requests counts the requests session s has sent since the last call
// (server-side).
func requests(t *testing.T, s *session.Session) func() int64 { return testutil.Requests(t, zk, s) }

// TestRequestsPerOperation: the round trips of a semaphore's hot paths,
// counted by the server. Acquire: the create and the listing sent with it,
// a read of the limit (unless a lease of this client pins the path), a look
// at the leases that sets a watch, the multi-op that takes the lease.
// TryAcquire: the same, its look without a watch. A head woken by a release
// takes its lease without listing again.
func TestRequestsPerOperation(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	a, b := open(t, zk.Servers()), open(t, zk.Servers())
	sa, _ := semaphore.New(a, path, 2)
	sb, _ := semaphore.New(b, path, 2)
	l, err := sa.Acquire(ctx) // creates the path
	require.NoError(t, err)
	pinContainers(t, a, path) // while l's lease keeps the path
	require.NoError(t, l.Release(ctx))

	ra := requests(t, a)
	l1, err := sa.Acquire(ctx)
	require.NoError(t, err)
	// ... and, after the grant, the lease's watch on its own node
	// (hold/ownwatch.go).
	require.Equal(t, int64(5+1), testutil.Settled(t, ra, 5+1), "uncontended Acquire, no lease held")
	l2, err := sa.TryAcquire(ctx)
	require.NoError(t, err)
	// 4+1 on a quiet machine; 8 were counted once in make test: "cons"
	// counts the requests the server has answered, and a reading can lag
	// the operation it follows. Bounded, still O(1).
	tried := testutil.Settled(t, ra, 4+1)
	require.GreaterOrEqual(t, tried, int64(4+1), "uncontended TryAcquire, a lease held")
	require.LessOrEqual(t, tried, int64(4+1+3), "uncontended TryAcquire, a lease held")

	rb := requests(t, b)
	// a's leases' own-node watches set (10 ms into each) before the
	// server's watches are counted.
	testutil.AwaitDataWatches(t, zk, 0, a, 2)
	watching := watches(t)
	got := make(chan error, 1)
	go func() {
		lb, err := sb.Acquire(ctx)
		if err == nil {
			err = lb.Release(ctx)
		}
		got <- err
	}()
	// The head's watch on the leases in place before the release.
	require.Eventually(t, func() bool { return watches(t) > watching }, 10*time.Second, 5*time.Millisecond)
	// a's requests that "cons" counts late (a reading can lag what it
	// follows) must not be counted as the release's: 2 were, once, in make
	// test. Wait until a's count stands still, and drop what it read.
	epA, err := a.Wait(ctx)
	require.NoError(t, err)
	testutil.Quiet(t, func() int64 { return testutil.LastXid(t, zk, 0, epA.SessionID()) })
	ra()
	require.NoError(t, l1.Release(ctx))
	require.Equal(t, int64(1), ra(), "Release")
	require.NoError(t, <-got)
	// 5+1 on a quiet machine (the lease, released at once, never starts its
	// own-node watch: recipe.ownWatchDelay); once (under make test's load,
	// the server slow) 11 were counted: the count is of requests the server
	// has answered, read from "cons", and a slow server shifts answers
	// between readings. Bounded, still O(1).
	n := testutil.Settled(t, rb, 5+1)
	require.GreaterOrEqual(t, n, int64(5+1), "an Acquire woken by a release (and its Release)")
	require.LessOrEqual(t, n, int64(5+1+1+4), "an Acquire woken by a release (and its Release)")
	require.NoError(t, l2.Release(ctx))
}
