package semaphore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
)

func exists(t *testing.T, s *session.Session, path string) bool {
	t.Helper()
	ep, err := s.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	ok, _, err := ep.Conn().Exists(path)
	require.NoError(t, err)
	return ok
}

// TestPathIsAContainer: the semaphore's path and its locks and leases
// children are container nodes: once no one holds or waits, the server
// removes them (zktest checks containers every 200ms), limit record
// included. The next client creates the path again with its own limit, and
// a client that knew the old path's limit reads the new one before it takes
// a lease: it is refused (ErrMaxLeasesMismatch), never admitted under a limit
// the path does not record.
func TestPathIsAContainer(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	sa, sb := open(t, zk.Servers()), open(t, zk.Servers())
	a, err := semaphore.New(sa, path, 2)
	require.NoError(t, err)

	// Two leases and a waiter: every node a semaphore makes.
	l1, err := a.Acquire(ctx)
	require.NoError(t, err)
	l2, err := a.Acquire(ctx)
	require.NoError(t, err)
	a2, err := semaphore.New(sb, path, 2)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		l, err := a2.Acquire(ctx)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	require.Eventually(t, func() bool { return len(children(t, sa, path+"/locks")) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, l1.Release(ctx))
	require.NoError(t, <-got)
	require.NoError(t, l2.Release(ctx))
	require.Eventually(t, func() bool { return !exists(t, sa, path) }, 10*time.Second, 20*time.Millisecond,
		"the unused semaphore stayed")

	// Another client comes with another limit: the path is its now.
	b, err := semaphore.New(sb, path, 3)
	require.NoError(t, err)
	lb, err := b.Acquire(ctx)
	require.NoError(t, err)
	// The first client knew limit 2 at version 0 of the old path; the new
	// path is at version 0 too. It must read the limit again.
	_, err = a.Acquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrMaxLeasesMismatch)
	_, err = a.TryAcquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrMaxLeasesMismatch)
	require.Empty(t, children(t, sa, path+"/locks"), "a refused client left its node behind")
	require.NoError(t, lb.Release(ctx))
	require.Eventually(t, func() bool { return !exists(t, sa, path) }, 10*time.Second, 20*time.Millisecond)

	// And the first client, alone again, recreates it with its limit.
	l, err := a.Acquire(ctx)
	require.NoError(t, err)
	_, err = b.Acquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrMaxLeasesMismatch)
	require.NoError(t, l.Release(ctx))
}
