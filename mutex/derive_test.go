package mutex_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/hold"
	"github.com/shepherdzk/shepherd/mutex"
)

// TestDeriveContext: a context derived from a hold (hold.Hold.DeriveContext,
// how a leadership makes its Context) ends by its own cancel alone, and
// with the hold's Context, with its cause: at a release (ErrReleased), and
// at a loss (its node deleted from outside) before Lost closes (whoever
// sees Lost closed sees it ended).
func TestDeriveContext(t *testing.T) {
	s := open(t, zk.Servers())
	ctx := ctxT(t, 30*time.Second)
	m, err := mutex.New(s, uniquePath(t))
	require.NoError(t, err)

	require.NoError(t, m.Lock(ctx))
	h := m.Hold()
	d1, cancel1 := h.DeriveContext()
	d2, _ := h.DeriveContext()
	mine := errors.New("mine")
	cancel1(mine)
	require.ErrorIs(t, context.Cause(d1), mine)
	require.NoError(t, d2.Err(), "one derived context's cancel ends no other")
	require.NoError(t, h.Context().Err(), "nor the hold's")
	require.NoError(t, m.Unlock(ctx))
	require.ErrorIs(t, context.Cause(d2), hold.ErrReleased, "the release ends it, with its cause")
	d3, _ := h.DeriveContext()
	require.ErrorIs(t, context.Cause(d3), hold.ErrReleased, "derived from a hold that has ended: ended")

	require.NoError(t, m.Lock(ctx))
	h = m.Hold()
	d4, _ := h.DeriveContext()
	lost := h.Lost()
	_, err = h.Token(ctx) // the hold watches its own node once this returns
	require.NoError(t, err)
	// A loss without a reconnect: an operator deletes the holder's node.
	other := open(t, zk.Servers())
	ep, err := other.Wait(ctx)
	require.NoError(t, err)
	require.NoError(t, ep.Conn().Delete(h.Node(), -1))
	select {
	case <-lost:
	case <-ctx.Done():
		t.Fatal("Lost not closed when the node was deleted")
	}
	require.Error(t, d4.Err(), "Lost closed: the derived context has ended")
	require.Equal(t, context.Cause(h.Context()), context.Cause(d4), "with the hold's cause")
}
