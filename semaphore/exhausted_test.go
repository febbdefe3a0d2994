package semaphore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/semaphore"
)

// TestSequenceExhausted: the semaphore's waiting line (its "locks" child)
// has a sequence counter stuck at 2^31−1. The waiter numbered …46 behind the
// holder keeps its place; every later contender (…47, then …47 again) fails
// closed with ErrSequenceExhausted naming the path and leaves nothing behind.
func TestSequenceExhausted(t *testing.T) {
	path := "/exhausted/sem"
	c := testutil.ExhaustedCounter(t, path+"/locks")
	ctx := testutil.Ctx(t, 60*time.Second)
	s := open(t, c.Servers())
	sem, err := semaphore.New(s, path, 1)
	require.NoError(t, err)
	locks := func() []string { return testutil.Children(t, s, path+"/locks") }

	a, err := sem.Acquire(ctx) // …45
	require.NoError(t, err)
	type result struct {
		l   *semaphore.Lease
		err error
	}
	b := make(chan result, 1)
	go func() {
		l, err := sem.Acquire(ctx) // …46: waits at the head of the line
		b <- result{l, err}
	}()
	require.Eventually(t, func() bool { return len(locks()) > 0 }, 10*time.Second, 5*time.Millisecond,
		"the second contender did not join the line")
	require.True(t, strings.HasSuffix(locks()[0], "lock-2147483646"), locks())

	for i := 0; i < 3; i++ { // …47, …47, …47
		s2 := open(t, c.Servers())
		sem2, err := semaphore.New(s2, path, 1)
		require.NoError(t, err)
		_, err = sem2.Acquire(testutil.Ctx(t, 5*time.Second))
		require.ErrorIs(t, err, recipe.ErrSequenceExhausted, "contender %d", i)
		require.ErrorIs(t, err, semaphore.ErrSequenceExhausted)
		require.Contains(t, err.Error(), path+"/locks")
		require.Len(t, locks(), 1, "contender %d left its node behind", i)
	}
	_, err = sem.TryAcquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrSequenceExhausted)
	require.Len(t, locks(), 1)

	// The waiter ahead of the exhausted numbers is granted as usual.
	require.NoError(t, a.Release(ctx))
	r := <-b
	require.NoError(t, r.err)
	require.NoError(t, r.l.Release(ctx))
	require.Empty(t, locks())
}
