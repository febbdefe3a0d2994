package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

var zkc *zktest.Cluster

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m, &zkc, 1))
}

// recorder keeps the recipe events the barrier reports.
type recorder struct {
	mu     sync.Mutex
	events []observe.RecipeEvent
}

func (r *recorder) SessionEvent(session.Event) {}
func (r *recorder) RecipeEvent(ev observe.RecipeEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

// No member gets past Enter before every member has called it, none gets
// past Leave before every member has called it, and nothing is left at the
// path afterwards. Members arrive and leave one after the other (the first
// arrives and leaves long before the last), so a barrier that let anyone
// through early would be seen.
func TestDoubleBarrier(t *testing.T) {
	const n = 3
	path := testutil.UniquePath(t, "barrier")
	ctx := testutil.Ctx(t, 30*time.Second)
	rec := &recorder{}
	var arrived, leaving atomic.Int32
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		s := testutil.Open(t, zkc.Servers(), session.WithObserver(rec))
		b, err := NewBarrier(s, path, n)
		require.NoError(t, err)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs <- func() error {
				arrived.Add(1)
				m, err := b.Enter(ctx, []byte(fmt.Sprint(i)))
				if err != nil {
					return err
				}
				if got := arrived.Load(); got != n {
					return fmt.Errorf("member %d entered with %d of %d arrived", i, got, n)
				}
				// The work being simulated: members leave one after the
				// other, the last long after the first.
				time.Sleep(time.Duration(i) * 200 * time.Millisecond) // the work
				leaving.Add(1)
				if err := m.Leave(ctx); err != nil {
					return err
				}
				if got := leaving.Load(); got != n {
					return fmt.Errorf("member %d left with %d of %d leaving", i, got, n)
				}
				return nil
			}()
		}(i)
		// The next member arrives once this one waits in line.
		require.Eventually(t, func() bool { return len(testutil.Children(t, s, path)) >= i+1 },
			10*time.Second, 5*time.Millisecond)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	s := testutil.Open(t, zkc.Servers())
	require.Empty(t, testutil.Children(t, s, path), "a member's node or the ready node stayed")

	rec.mu.Lock()
	defer rec.mu.Unlock()
	kinds := map[observe.RecipeEventKind]int{}
	for _, ev := range rec.events {
		require.Equal(t, "barrier", ev.Recipe)
		kinds[ev.Kind]++
	}
	require.Equal(t, n, kinds[observe.Acquired])
	require.Equal(t, n, kinds[observe.Released])
}

// A member that gives up waiting (ctx ends) leaves nothing behind, and bad
// arguments are refused before any I/O.
func TestEnterGivesUp(t *testing.T) {
	path := testutil.UniquePath(t, "barrier")
	s := testutil.Open(t, zkc.Servers())
	b, err := NewBarrier(s, path, 2)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = b.Enter(ctx, nil)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	require.Eventually(t, func() bool { return len(testutil.Children(t, s, path)) == 0 },
		10*time.Second, 5*time.Millisecond, "the member's node stayed")

	_, err = NewBarrier(s, path, 0)
	require.ErrorIs(t, err, recipe.ErrInvalidArgument)
	_, err = NewBarrier(nil, path, 2)
	require.ErrorIs(t, err, recipe.ErrInvalidArgument)
	_, err = NewBarrier(s, "rel", 2)
	require.ErrorIs(t, err, recipe.ErrInvalidPath)
}
