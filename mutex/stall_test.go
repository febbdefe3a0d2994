package mutex_test

import (
	"context"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
)

// TestCtxDeadlineUnderStall: every blocking call of a fair mutex returns
// within its ctx's deadline (plus testutil.StallSlack) while its connection
// is stalled, whether the stall came before the call or while it waited in
// line: go-zookeeper's own read timeout (4 s here) must never be what ends it.
func TestCtxDeadlineUnderStall(t *testing.T) {
	const d = 300 * time.Millisecond
	path := uniquePath(t)
	ctx := ctxT(t, 2*time.Minute)
	s, p := proxied(t, 6*time.Second)
	other := open(t, zk.Servers())
	holder, _ := mutex.New(other, path)

	t.Run("Lock", func(t *testing.T) {
		m, _ := mutex.New(s, path)
		require.Error(t, testutil.Stalled(t, s, p, d, m.Lock))
	})
	t.Run("TryLock", func(t *testing.T) {
		m, _ := mutex.New(s, path)
		require.Error(t, testutil.Stalled(t, s, p, d, func(ctx context.Context) error {
			_, err := m.TryLock(ctx)
			return err
		}))
	})
	t.Run("Lock/waiting", func(t *testing.T) {
		require.NoError(t, holder.Lock(ctx))
		defer func() { require.NoError(t, holder.Unlock(ctx)) }()
		m, _ := mutex.New(s, path)
		watching := watches(t)
		err := testutil.StalledWhileWaiting(t, s, p, d, m.Lock, func() bool {
			return len(children(t, other, path)) == 2 && watches(t) > watching
		})
		require.ErrorIs(t, err, context.Canceled)
		require.Eventually(t, func() bool { return len(children(t, other, path)) == 1 }, 10*time.Second, 5*time.Millisecond,
			"the waiter's node is left behind")
	})
	t.Run("NonFair/Lock", func(t *testing.T) {
		m, _ := mutex.New(s, path+"-nf", mutex.NonFair())
		require.Error(t, testutil.Stalled(t, s, p, d, m.Lock))
	})
	t.Run("NonFair/Lock/waiting", func(t *testing.T) {
		nf, _ := mutex.New(other, path+"-nf", mutex.NonFair())
		require.NoError(t, nf.Lock(ctx))
		defer func() { require.NoError(t, nf.Unlock(ctx)) }()
		m, _ := mutex.New(s, path+"-nf", mutex.NonFair())
		watching := watches(t)
		err := testutil.StalledWhileWaiting(t, s, p, d, m.Lock, func() bool { return watches(t) > watching })
		require.ErrorIs(t, err, context.Canceled)
	})
	held := func(t *testing.T, call func(m *mutex.Mutex, ctx context.Context) error) {
		m, _ := mutex.New(s, path)
		require.NoError(t, m.Lock(ctx))
		require.Error(t, testutil.Stalled(t, s, p, d, func(ctx context.Context) error { return call(m, ctx) }))
		_ = m.Unlock(ctx) // lost in the stall (Suspended): ErrLost
	}
	t.Run("Token", func(t *testing.T) {
		held(t, func(m *mutex.Mutex, ctx context.Context) error {
			_, err := m.Token(ctx)
			return err
		})
	})
	t.Run("Validate", func(t *testing.T) {
		held(t, func(m *mutex.Mutex, ctx context.Context) error { return m.Validate(ctx) })
	})
	t.Run("Fenced", func(t *testing.T) {
		held(t, func(m *mutex.Mutex, ctx context.Context) error {
			_, err := m.Fenced(ctx, fence.Raw(&gozk.SetDataRequest{Path: s.Path(path), Data: []byte("x"), Version: -1}))
			return err
		})
	})
}
