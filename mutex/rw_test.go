package mutex_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// TestDowngradeWithQueuedWriter: the holder of the write lock takes the read
// lock on the same value while another writer (W3) waits. The read is
// granted at once (it used to queue behind W3, which waits for our write
// hold: a deadlock until ctx's deadline). W3 is not granted while the
// downgraded read is held, even after the write lock is released, and is
// granted once the read lock is released too.
func TestDowngradeWithQueuedWriter(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	s := open(t, zk.Servers())
	rw, err := mutex.NewRW(s, path)
	require.NoError(t, err)
	w3, err := mutex.NewRW(open(t, zk.Servers()), path)
	require.NoError(t, err)

	require.NoError(t, rw.Lock(ctx))
	w3Got := make(chan error, 1)
	go func() { w3Got <- w3.Lock(ctx) }()
	require.Eventually(t, func() bool { return len(children(t, s, path)) == 2 }, 5*time.Second, 5*time.Millisecond)

	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, rw.RLock(rctx), "the write holder's RLock must be granted at once")
	t.Logf("downgrade granted in %v", time.Since(start))
	require.True(t, rw.Reader().IsHeld())
	require.True(t, rw.Writer().IsHeld())

	// Reentrant, and TryRLock is granted the same way.
	require.NoError(t, rw.RLock(ctx))
	require.NoError(t, rw.RUnlock(ctx))
	ok, err := rw.TryRLock(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, rw.RUnlock(ctx))
	require.True(t, rw.Reader().IsHeld())

	// The write lock is released; the read lock is still held: W3 must
	// wait. Our writer's node stays in line ahead of W3 (W3 is granted
	// only when its predecessor is deleted), and W3 holds nothing.
	ours := children(t, s, path)
	require.NoError(t, rw.Unlock(ctx))
	require.False(t, rw.Writer().IsHeld())
	require.True(t, rw.Reader().IsHeld())
	select {
	case <-rw.Reader().Lost():
		t.Fatal("the downgraded read hold was lost with the write lock's release")
	default:
	}
	require.Equal(t, ours, children(t, s, path), "the downgraded read must keep its place ahead of W3")
	require.False(t, w3.Writer().IsHeld())
	select {
	case err := <-w3Got:
		t.Fatalf("W3 was granted (%v) while the downgraded read is held", err)
	default:
	}

	// Upgrading back while the downgraded read holds the writer's place is
	// granted at once as well (the place is still the head of the line).
	require.NoError(t, rw.Lock(rctx))
	require.NoError(t, rw.Unlock(ctx))

	require.NoError(t, rw.RUnlock(ctx))
	require.NoError(t, <-w3Got)
	require.True(t, w3.Writer().IsHeld())
	line := children(t, s, path)
	require.Len(t, line, 1)
	require.True(t, strings.Contains(line[0], "__WRIT__"), line)
	require.NoError(t, w3.Unlock(ctx))
	require.Empty(t, children(t, s, path))
}

// TestReadSideHoldEnds: the read side of a read-write lock keeps the hold's
// two end signals (readers share, so the contract's table, which sets
// contenders against each other, runs for the write side: TestHoldContract).
// RUnlock ends Context and leaves Lost open (a release is no loss, even when
// the session is lost later); a loss (the session expired) closes Lost and
// ends Context.
func TestReadSideHoldEnds(t *testing.T) {
	tap := zktest.NewTap()
	s := open(t, zk.Servers(), session.WithSessionTimeout(2*time.Second), session.WithDialer(tap.Dialer(nil)))
	ctx := ctxT(t, 30*time.Second)
	rw, err := mutex.NewRW(s, uniquePath(t))
	require.NoError(t, err)
	r := rw.Reader()

	require.NoError(t, rw.RLock(ctx))
	lost1, ctx1 := r.Lost(), r.Context()
	require.False(t, testutil.IsClosed(lost1))
	require.NoError(t, ctx1.Err())
	require.NoError(t, rw.RUnlock(ctx))
	require.Error(t, ctx1.Err(), "RUnlock ends the hold's Context")
	require.False(t, testutil.IsClosed(lost1), "RUnlock closed Lost: a release is no loss")

	require.NoError(t, rw.RLock(ctx))
	lost2, ctx2 := r.Lost(), r.Context()
	cred, ok := tap.Credentials(s.SessionID())
	require.True(t, ok)
	require.NoError(t, zktest.ExpireSession(ctx, zk.Servers(), cred))
	select {
	case <-lost2:
	case <-ctx.Done():
		t.Fatal("Lost not closed on expiry")
	}
	require.Error(t, ctx2.Err(), "a loss ends Context too")
	require.False(t, testutil.IsClosed(lost1), "the epoch's end closed the Lost of a hold released before it")
	require.ErrorIs(t, rw.RUnlock(ctx), mutex.ErrLost)
}

// TestReadSideTopLevelPath: a read lock directly under the root, and
// directly under a namespace's own root (a path with no parent of its own to
// create), is taken, held and released like any other, and leaves nothing
// behind but its container nodes (the write side: TestHoldContract).
func TestReadSideTopLevelPath(t *testing.T) {
	for _, namespaced := range []bool{false, true} {
		t.Run(fmt.Sprintf("namespace=%v", namespaced), func(t *testing.T) {
			s, path, top := testutil.OpenTopLevel(t, zk.Servers(), "lock", namespaced)
			ctx := ctxT(t, 10*time.Second)
			rw, err := mutex.NewRW(s, path)
			require.NoError(t, err)
			require.NoError(t, rw.RLock(ctx))
			m := rw.Reader()
			require.True(t, m.IsHeld())
			require.NoError(t, m.Validate(ctx), "the lock is not held")
			full := m.Path()
			require.NotEmpty(t, testutil.Leftovers(t, s, top, top, full), "no node holds the lock")
			require.NoError(t, rw.RUnlock(ctx))
			require.False(t, m.IsHeld())
			require.Empty(t, testutil.Leftovers(t, s, top, top, full), "left behind")
		})
	}
}
