package construct_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/schedule"
	"github.com/shepherdzk/shepherd/semaphore"
)

// TestZeroValues: a recipe used without its constructor (its zero value),
// and a toolkit line entered without a session or an epoch, answer at once
// with an error matching recipe.ErrInvalidArgument: a zero Mutex waited
// for ctx (forever with context.Background), an RWMutex, Election and
// Schedule panicked, and Line.Enter ended the process from a goroutine.
func TestZeroValues(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	job := func(context.Context, schedule.Tick) error { return nil }
	calls := map[string]func() error{
		"Mutex.Lock":        func() error { return (&mutex.Mutex{}).Lock(ctx) },
		"Mutex.TryLock":     func() error { _, err := (&mutex.Mutex{}).TryLock(ctx); return err },
		"RWMutex.Lock":      func() error { return (&mutex.RWMutex{}).Lock(ctx) },
		"RWMutex.RLock":     func() error { return (&mutex.RWMutex{}).RLock(ctx) },
		"RWMutex.TryLock":   func() error { _, err := (&mutex.RWMutex{}).TryLock(ctx); return err },
		"RWMutex.TryRLock":  func() error { _, err := (&mutex.RWMutex{}).TryRLock(ctx); return err },
		"Semaphore.Acquire": func() error { _, err := (&semaphore.Semaphore{}).Acquire(ctx); return err },
		"Election.Campaign": func() error { _, err := (&election.Election{}).Campaign(ctx); return err },
		"Election.Run": func() error {
			return (&election.Election{}).Run(ctx, election.Callbacks{OnElected: func(context.Context, election.Term) {}})
		},
		"Schedule.Run":       func() error { return (&schedule.Schedule{}).Run(ctx, job) },
		"Line.Enter nil all": func() error { _, err := (&line.Line{}).Enter(ctx, nil, recipe.KindLock, nil); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			err := noPanic(t, name+" on a zero value", call)
			if !errors.Is(err, recipe.ErrInvalidArgument) {
				t.Fatalf("%s on a zero value = %v; want an error matching recipe.ErrInvalidArgument", name, err)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("%s on a zero value took %v: it waited instead of answering", name, d)
			}
		})
	}
}
