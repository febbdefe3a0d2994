package mutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/mutex"
)

// TestPathIsAContainer: a lock's path (and its parents) are container nodes:
// once every holder and waiter has let go, the server removes the path
// (zktest checks containers every 200ms), and a later Lock creates it again.
func TestPathIsAContainer(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	s := open(t, zk.Servers())
	exists := func() bool {
		ep, err := s.Wait(ctx)
		require.NoError(t, err)
		ok, _, err := ep.Conn().Exists(path)
		require.NoError(t, err)
		return ok // (a client cannot see that a node is a container)
	}
	for round := 0; round < 2; round++ {
		a, err := mutex.New(s, path)
		require.NoError(t, err)
		b, err := mutex.New(open(t, zk.Servers()), path)
		require.NoError(t, err)
		require.NoError(t, a.Lock(ctx))
		require.True(t, exists())
		got := make(chan error, 1)
		go func() { got <- b.Lock(ctx) }()
		require.Eventually(t, func() bool { return len(children(t, s, path)) == 2 }, 5*time.Second, 5*time.Millisecond)
		require.NoError(t, a.Unlock(ctx))
		require.NoError(t, <-got)
		require.NoError(t, b.Unlock(ctx))
		require.Eventually(t, func() bool { return !exists() }, 10*time.Second, 20*time.Millisecond,
			"round %d: the unused path stayed", round)
	}
}

// TestNonFairPathIsPersistent: the non-fair lock's path is not a container.
// Its data version fences holds (a retried release deletes the lock's node
// only while the version is the one its hold set), and a container removed
// and created again would count from 0 again: a release retried across the
// two lives could remove the next holder's node. Checked against a fair
// lock's path used and released at the same time, whose removal shows the
// server's container check has run.
func TestNonFairPathIsPersistent(t *testing.T) {
	fairPath, nonFairPath := uniquePath(t), uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	s := open(t, zk.Servers())
	exists := func(p string) bool {
		ep, err := s.Wait(ctx)
		require.NoError(t, err)
		ok, _, err := ep.Conn().Exists(p)
		require.NoError(t, err)
		return ok
	}
	nf, err := mutex.New(s, nonFairPath, mutex.NonFair())
	require.NoError(t, err)
	f, err := mutex.New(s, fairPath)
	require.NoError(t, err)
	require.NoError(t, nf.Lock(ctx))
	require.NoError(t, f.Lock(ctx))
	require.NoError(t, nf.Unlock(ctx))
	require.NoError(t, f.Unlock(ctx))
	require.Eventually(t, func() bool { return !exists(fairPath) }, 10*time.Second, 20*time.Millisecond)
	require.True(t, exists(nonFairPath), "the non-fair lock's path was removed")
}
