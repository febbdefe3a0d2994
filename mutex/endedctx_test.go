package mutex_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/mutex"
)

// TestReentrantLockEndedCtxFails: a Lock whose ctx has ended fails with
// ctx's error, also when the value holds the lock already (a reentrant
// Lock), every time, and leaves the hold count as it was. Issue 36 (5): on
// b9d4272 about 45% of such calls succeeded (a select between the value's
// turn and ctx.Done()).
func TestReentrantLockEndedCtxFails(t *testing.T) {
	ctx := ctxT(t, 30e9)
	for _, fair := range []bool{true, false} {
		var opts []mutex.Option
		if !fair {
			opts = append(opts, mutex.NonFair())
		}
		m, err := mutex.New(open(t, zk.Servers()), uniquePath(t), opts...)
		require.NoError(t, err)
		require.NoError(t, m.Lock(ctx))
		ended, cancel := context.WithCancel(ctx)
		cancel()
		succeeded := 0
		for range 200 {
			if err := m.Lock(ended); err == nil {
				succeeded++
			} else if !errors.Is(err, context.Canceled) {
				t.Fatalf("fair=%v: Lock with an ended ctx: %v, want context.Canceled", fair, err)
			}
			ok, err := m.TryLock(ended)
			if ok || err == nil {
				succeeded++
			}
		}
		require.Zero(t, succeeded, "fair=%v: Lock/TryLock with an ended ctx succeeded on a held value", fair)
		// The count is still 1: one Unlock releases.
		require.NoError(t, m.Unlock(ctx))
		require.ErrorIs(t, m.Unlock(ctx), mutex.ErrNotHeld)
	}
}
