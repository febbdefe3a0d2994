package semaphore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/semaphore"
)

// TestReleaseWithDoneCtxLetsGo: Release with a cancelled or expired ctx
// gives the lease back all the same: a waiter on another session gets it.
func TestReleaseWithDoneCtxLetsGo(t *testing.T) {
	for _, how := range []string{"cancelled", "expired"} {
		t.Run(how, func(t *testing.T) {
			path := uniquePath(t)
			ctx := ctxT(t, 30*time.Second)
			sem, err := semaphore.New(open(t, zk.Servers()), path, 1)
			require.NoError(t, err)
			other, err := semaphore.New(open(t, zk.Servers()), path, 1)
			require.NoError(t, err)
			l, err := sem.Acquire(ctx)
			require.NoError(t, err)
			var done context.Context
			var cancel context.CancelFunc
			if how == "cancelled" {
				done, cancel = context.WithCancel(ctx)
			} else {
				done, cancel = context.WithDeadline(ctx, time.Now().Add(-time.Second))
			}
			cancel()
			if err := l.Release(done); err != nil {
				require.True(t, errors.Is(err, done.Err()), "Release: %v", err)
			}
			select {
			case <-l.Lost():
			default:
				t.Fatal("the released lease's Lost is open")
			}
			octx, ocancel := context.WithTimeout(ctx, 10*time.Second)
			defer ocancel()
			l2, err := other.Acquire(octx)
			require.NoError(t, err, "the lease was not given back")
			require.NoError(t, l2.Release(ctx))
		})
	}
}
