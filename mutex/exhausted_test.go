package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/recipe"
)

// TestSequenceExhausted: on ZooKeeper 3.8 a parent's sequence counter sticks
// at 2^31−1, so every contender after it shares one sequence number. Ordered
// by guid, a newcomer could sort straight behind the holder and, with another
// doing the same, both be granted on its release. The line must fail closed:
// every contender on the ambiguous line gets ErrSequenceExhausted naming the
// path, leaves nothing behind, and no one is ever granted twice.
func TestSequenceExhausted(t *testing.T) {
	path := "/exhausted/mutex"
	c := testutil.ExhaustedCounter(t, path)
	ctx := ctxT(t, 60*time.Second)
	holderS := open(t, c.Servers())

	// …45: granted and released; …46: granted and held.
	m, err := mutex.New(holderS, path)
	require.NoError(t, err)
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, m.Lock(ctx))
	held := children(t, holderS, path)
	require.Len(t, held, 1)
	require.True(t, strings.HasSuffix(held[0], "lock-2147483646"), held[0])

	var x exclusion
	x.granted("holder", m.Lost())

	// Eight contenders, one after the other, each with its own session:
	// the first is numbered …47, the others share it.
	const n = 8
	type result struct {
		err  error
		held bool
	}
	results := make([]chan result, n)
	var wg sync.WaitGroup
	defer wg.Wait()
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	for i := range n {
		s := open(t, c.Servers())
		w, err := mutex.New(s, path)
		require.NoError(t, err)
		results[i] = make(chan result, 1)
		before := len(children(t, holderS, path))
		wg.Add(1)
		go func() {
			defer wg.Done()
			lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			err := w.Lock(lctx)
			if err != nil {
				results[i] <- result{err: err}
				return
			}
			x.granted(fmt.Sprint("contender ", i), w.Lost())
			results[i] <- result{held: true}
			<-release
			x.released(fmt.Sprint("contender ", i))
			_ = w.Unlock(context.Background())
		}()
		// Wait until the contender has either given up or joined the line,
		// so the next one is created after it.
		require.Eventually(t, func() bool { return len(results[i]) > 0 || len(children(t, holderS, path)) != before },
			10*time.Second, 5*time.Millisecond, "contender %d neither joined nor returned", i)
	}
	// The holder lets go: no contender may be granted on an ambiguous line.
	x.released("holder")
	require.NoError(t, m.Unlock(ctx))
	for i := range n {
		select {
		case r := <-results[i]:
			require.False(t, r.held, "contender %d was granted on an ambiguous line", i)
			require.ErrorIs(t, r.err, recipe.ErrSequenceExhausted, "contender %d", i)
			require.ErrorIs(t, r.err, mutex.ErrSequenceExhausted)
			require.Contains(t, r.err.Error(), path)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	close(release)
	wg.Wait()
	x.check(t)
	require.Empty(t, children(t, holderS, path), "the contenders left nodes behind")

	// TryLock and the read-write lock on the same path refuse as well,
	// and leave nothing behind.
	ok, err := m.TryLock(ctx)
	require.ErrorIs(t, err, mutex.ErrSequenceExhausted)
	require.False(t, ok)
	rw, err := mutex.NewRW(holderS, path)
	require.NoError(t, err)
	require.ErrorIs(t, rw.RLock(ctx), mutex.ErrSequenceExhausted)
	require.ErrorIs(t, rw.Lock(ctx), mutex.ErrSequenceExhausted)
	require.Empty(t, children(t, holderS, path))
	require.False(t, errors.Is(err, context.DeadlineExceeded))
}
