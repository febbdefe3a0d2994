package semaphore_test

import (
	"context"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// TestCtxDeadlineUnderStall: every blocking call of a semaphore returns
// within its ctx's deadline (plus testutil.StallSlack) while its connection
// is stalled: before the call (a client that has not read the limit yet, and
// one that has), while it waits behind another waiter, and while it waits as
// the head of the line for a lease to be released.
func TestCtxDeadlineUnderStall(t *testing.T) {
	const d = 300 * time.Millisecond
	path := uniquePath(t)
	ctx := ctxT(t, 2*time.Minute)
	px, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { px.Close() })
	s := open(t, px.Addrs(), session.WithSessionTimeout(6*time.Second))
	other := open(t, zk.Servers())
	holder, _ := semaphore.New(other, path, 1)
	acquire := func(sem *semaphore.Semaphore, try bool) func(context.Context) error {
		return func(ctx context.Context) error {
			var l *semaphore.Lease
			var err error
			if try {
				l, err = sem.TryAcquire(ctx)
			} else {
				l, err = sem.Acquire(ctx)
			}
			if err == nil {
				_ = l.Release(ctx)
			}
			return err
		}
	}

	for _, try := range []bool{false, true} {
		name := "Acquire"
		if try {
			name = "TryAcquire"
		}
		t.Run(name+"/unread limit", func(t *testing.T) {
			sem, _ := semaphore.New(s, path, 1)
			require.Error(t, testutil.Stalled(t, s, px, d, acquire(sem, try)))
		})
		t.Run(name+"/known limit", func(t *testing.T) {
			sem, _ := semaphore.New(s, path, 1)
			require.NoError(t, acquire(sem, true)(ctx))
			require.Error(t, testutil.Stalled(t, s, px, d, acquire(sem, try)))
		})
	}
	waiting := func(t *testing.T, behind bool) {
		l, err := holder.Acquire(ctx)
		require.NoError(t, err)
		defer func() { require.NoError(t, l.Release(ctx)) }()
		want := 1
		if behind {
			// Another waiter heads the line: ours waits behind it.
			wctx, cancel := context.WithCancel(ctx)
			head := make(chan error, 1)
			go func() { head <- acquire(holder, false)(wctx) }()
			defer func() { cancel(); <-head }()
			require.Eventually(t, func() bool { return len(children(t, other, path+"/locks")) == 1 }, 10*time.Second, 5*time.Millisecond)
			want = 2
		}
		sem, _ := semaphore.New(s, path, 1)
		require.NoError(t, sem.SetMaxLeases(ctx, 1)) // reads the limit: the stall comes while waiting
		watching := watches(t)
		err = testutil.StalledWhileWaiting(t, s, px, d, acquire(sem, false), func() bool {
			return len(children(t, other, path+"/locks")) == want && watches(t) > watching
		})
		require.ErrorIs(t, err, context.Canceled)
		require.Eventually(t, func() bool { return len(children(t, other, path+"/locks")) == want-1 }, 10*time.Second,
			5*time.Millisecond, "the waiter's node is left behind")
	}
	t.Run("Acquire/waiting as the head", func(t *testing.T) { waiting(t, false) })
	t.Run("Acquire/waiting behind", func(t *testing.T) { waiting(t, true) })

	held := func(t *testing.T, call func(l *semaphore.Lease, ctx context.Context) error) {
		sem, _ := semaphore.New(s, path, 1)
		l, err := sem.Acquire(ctx)
		require.NoError(t, err)
		require.Error(t, testutil.Stalled(t, s, px, d, func(ctx context.Context) error { return call(l, ctx) }))
		_ = l.Release(ctx) // lost in the stall (Suspended): ErrLost
	}
	t.Run("Token", func(t *testing.T) {
		held(t, func(l *semaphore.Lease, ctx context.Context) error {
			_, err := l.Token(ctx)
			return err
		})
	})
	t.Run("Validate", func(t *testing.T) {
		held(t, func(l *semaphore.Lease, ctx context.Context) error { return l.Hold().Validate(ctx) })
	})
	t.Run("Fenced", func(t *testing.T) {
		held(t, func(l *semaphore.Lease, ctx context.Context) error {
			_, err := l.Hold().Fenced(ctx, fence.Raw(&gozk.SetDataRequest{Path: l.Nodes()[0], Data: []byte("x"), Version: -1}))
			return err
		})
	})
}
