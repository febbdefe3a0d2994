package semaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// TestCtxDeadlineUnderStall: the semaphore's own cases of the contract's
// (TestHoldContract/CtxDeadlineUnderStall, where a client that has not read
// the limit yet acquires, and a waiter waits as the head of the line): every
// blocking call returns within its ctx's deadline (plus testutil.StallSlack)
// while its connection is stalled, for a client that has read the limit
// already, and for a waiter behind another waiter.
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
		t.Run(name+"/known limit", func(t *testing.T) {
			sem, _ := semaphore.New(s, path, 1)
			require.NoError(t, acquire(sem, true)(ctx))
			require.Error(t, testutil.Stalled(t, s, px, d, acquire(sem, try)))
		})
	}
	t.Run("Acquire/waiting behind", func(t *testing.T) {
		l, err := holder.Acquire(ctx)
		require.NoError(t, err)
		defer func() { require.NoError(t, l.Release(ctx)) }()
		// Another waiter heads the line: ours waits behind it.
		wctx, cancel := context.WithCancel(ctx)
		head := make(chan error, 1)
		go func() { head <- acquire(holder, false)(wctx) }()
		defer func() { cancel(); <-head }()
		require.Eventually(t, func() bool { return len(children(t, other, path+"/locks")) == 1 }, 10*time.Second, 5*time.Millisecond)
		const want = 2
		sem, _ := semaphore.New(s, path, 1)
		require.NoError(t, sem.SetMaxLeases(ctx, 1)) // reads the limit: the stall comes while waiting
		watching := watches(t)
		err = testutil.StalledWhileWaiting(t, s, px, d, acquire(sem, false), func() bool {
			return len(children(t, other, path+"/locks")) == want && watches(t) > watching
		})
		require.ErrorIs(t, err, context.Canceled)
		require.Eventually(t, func() bool { return len(children(t, other, path+"/locks")) == want-1 }, 10*time.Second,
			5*time.Millisecond, "the waiter's node is left behind")
	})
}
