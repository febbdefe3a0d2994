package holdtest

// A stalled connection: every blocking call honours its ctx.

import (
	"context"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/internal/testutil"
)

// ctxDeadlineUnderStall: every blocking call returns within its ctx's
// deadline (plus testutil.StallSlack) while its connection is stalled,
// whether the stall came before the call or while it waited in line:
// go-zookeeper's own read timeout (4 s here) must never be what ends it.
// A waiter that gives up leaves the line.
func (x *contract) ctxDeadlineUnderStall(t *testing.T) {
	const d = 300 * time.Millisecond
	path := x.path(t)
	ctx := testutil.Ctx(t, 2*time.Minute)
	s, p := x.proxied(t, 6*time.Second)
	other := x.open(t)
	holder := x.r.New(t, other, path, "holder")
	target := path + "-target"
	require.NoError(t, fence.Ensure(ctx, other, target, nil))
	acq := func(c Contender) func(context.Context) error {
		return func(ctx context.Context) error {
			h, err := c.Acquire(ctx)
			if err == nil {
				_ = h.Release(ctx)
			}
			return err
		}
	}

	t.Run("Acquire", func(t *testing.T) {
		require.Error(t, testutil.Stalled(t, s, p, d, acq(x.r.New(t, s, path, "me"))))
	})
	if try := x.r.New(t, s, path, "me").Try; try != nil {
		t.Run("Try", func(t *testing.T) {
			require.Error(t, testutil.Stalled(t, s, p, d, func(ctx context.Context) error {
				h, err := try(ctx)
				if h != nil {
					_ = h.Release(ctx)
				}
				return err
			}))
		})
	}
	t.Run("Acquire/waiting", func(t *testing.T) {
		h := acquire(t, ctx, holder)
		defer func() { require.NoError(t, h.Release(ctx)) }()
		// The holder's own-node watch set before the server's watches are
		// counted to tell when the waiter waits.
		testutil.AwaitDataWatches(t, x.c, 0, other, 1)
		before := x.lineLen(t, other, path)
		me := x.r.New(t, s, path, "me")
		watching := testutil.WatchCount(t, x.c, 0)
		err := testutil.StalledWhileWaiting(t, s, p, d, acq(me), func() bool {
			return (x.r.NonFair || x.lineLen(t, other, path) == before+1) && testutil.WatchCount(t, x.c, 0) > watching
		})
		require.ErrorIs(t, err, context.Canceled)
		require.Eventually(t, func() bool { return x.lineLen(t, other, path) == before }, 10*time.Second, 5*time.Millisecond,
			"the waiter's node is left behind")
	})
	whileHeld := func(t *testing.T, call func(h Hold, ctx context.Context) error) {
		h := acquire(t, ctx, x.r.New(t, s, path, "me"))
		defer func() { _ = h.Release(ctx) }() // lost in the stall (Suspended)
		require.Error(t, testutil.Stalled(t, s, p, d, func(ctx context.Context) error { return call(h, ctx) }))
	}
	t.Run("Token", func(t *testing.T) {
		if x.r.TokenAtGrant {
			// The grant knows the token: Token returns it, stall or not.
			h := acquire(t, ctx, x.r.New(t, s, path, "me"))
			defer func() { _ = h.Release(ctx) }()
			require.NoError(t, testutil.Stalled(t, s, p, d, func(ctx context.Context) error {
				_, err := h.Token(ctx)
				return err
			}))
			return
		}
		whileHeld(t, func(h Hold, ctx context.Context) error {
			_, err := h.Token(ctx)
			return err
		})
	})
	t.Run("Validate", func(t *testing.T) {
		whileHeld(t, func(h Hold, ctx context.Context) error { return h.Validate(ctx) })
	})
	t.Run("Fenced", func(t *testing.T) {
		whileHeld(t, func(h Hold, ctx context.Context) error {
			_, err := h.Fenced(ctx, fence.Raw(&gozk.SetDataRequest{Path: s.Path(target), Data: []byte("x"), Version: -1}))
			return err
		})
	})
}
