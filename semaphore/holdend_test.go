package semaphore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A lease's two end signals: Release ends Context and leaves Lost open (also
// once the connection goes later); a loss (the connection stalled: the
// session manager suspends it) closes Lost and ends Context.
func TestLeaseLostOnlyOnLossContextOnEither(t *testing.T) {
	p, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	s := open(t, p.Addrs(), session.WithSessionTimeout(3*time.Second))
	ctx := ctxT(t, 30*time.Second)
	sem, err := semaphore.New(s, uniquePath(t), 2)
	require.NoError(t, err)

	a, err := sem.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, a.Release(ctx))
	require.Error(t, a.Context().Err(), "Release ends the lease's Context")
	require.False(t, isClosed(a.Lost()), "Release closed Lost: a release is no loss")

	b, err := sem.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, b.Validate(ctx))
	p.Stall()
	select {
	case <-b.Lost():
	case <-ctx.Done():
		t.Fatal("Lost not closed when the connection stalled")
	}
	require.Error(t, b.Context().Err(), "a loss ends Context too")
	require.False(t, isClosed(a.Lost()), "the epoch's end closed the Lost of a lease released before it")
	_, err = b.Fenced(ctx)
	require.ErrorIs(t, err, semaphore.ErrLost)
	p.Heal()
	require.ErrorIs(t, b.Release(ctx), semaphore.ErrLost)
}

// A lease's Token costs no request: the lease's own-node watch reads its
// node's Stat right after the grant (hold/ownwatch.go), and Token waits for
// that read rather than make one.
func TestLeaseTokenCost(t *testing.T) {
	s := open(t, zk.Servers())
	ctx := ctxT(t, 30*time.Second)
	path := uniquePath(t)
	sem, err := semaphore.New(s, path, 2)
	require.NoError(t, err)
	xid := func() int64 { return testutil.LastXid(t, zk, 0, s.SessionID()) }
	l, err := sem.Acquire(ctx) // creates the path: later rounds cost the same
	require.NoError(t, err)
	// Another client's lease keeps the path (a container) in place between
	// rounds, so that no round pays for creating it again.
	pin, err := semaphore.New(open(t, zk.Servers()), path, 2)
	require.NoError(t, err)
	pl, err := pin.Acquire(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, pl.Release(ctx)) }()
	require.NoError(t, l.Release(ctx))

	// The lease's own-node watch reads its node (its Stat: the token)
	// right after the grant, and Token waits for that read: a round with
	// one Token costs the read whether or not the caller asks, and a
	// second Token costs nothing. (Whether a lease released at once sends
	// the read depends on timing: the plain round asks once.)
	x0 := xid()
	l, err = sem.Acquire(ctx)
	require.NoError(t, err)
	tok0, err := l.Token(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	plain := xid() - x0

	x0 = xid()
	l, err = sem.Acquire(ctx)
	require.NoError(t, err)
	tok1, err := l.Token(ctx)
	require.NoError(t, err)
	first := xid()
	tok2, err := l.Token(ctx)
	require.NoError(t, err)
	second := xid()
	require.NoError(t, l.Release(ctx))
	require.Equal(t, tok1, tok2)
	require.Greater(t, int64(tok1), int64(tok0))
	require.Zero(t, second-first, "a second Token's requests")
	require.Equal(t, plain, xid()-x0, "Acquire+Token+Token+Release vs Acquire+Token+Release")
}
