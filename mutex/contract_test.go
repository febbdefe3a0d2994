package mutex_test

import (
	"context"
	"testing"

	"github.com/shepherdzk/shepherd/internal/holdtest"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// lockHold is a lock's hold as the contract sees it: the Mutex value (a
// side of a read-write lock) whose release is its Unlock.
type lockHold struct {
	*mutex.Mutex
	unlock func(context.Context) error
}

func (h lockHold) Release(ctx context.Context) error { return h.unlock(ctx) }

// lockContender is one side of a lock: lock, try and unlock, and the Mutex
// that holds.
func lockContender(m *mutex.Mutex, lock, unlock func(context.Context) error, try func(context.Context) (bool, error)) holdtest.Contender {
	h := lockHold{m, unlock}
	return holdtest.Contender{
		Acquire: func(ctx context.Context) (holdtest.Hold, error) {
			if err := lock(ctx); err != nil {
				return nil, err
			}
			return h, nil
		},
		Try: func(ctx context.Context) (holdtest.Hold, error) {
			ok, err := try(ctx)
			if !ok {
				return nil, err
			}
			return h, err
		},
		Held: m.IsHeld,
	}
}

func lockRecipe(nonFair bool) holdtest.Recipe {
	var opts []mutex.Option
	if nonFair {
		opts = append(opts, mutex.NonFair())
	}
	return holdtest.Recipe{
		Name:    "mutex",
		Kind:    recipe.KindLock,
		NonFair: nonFair,
		// A non-fair grant knows its token; a fair hold's own-node watch
		// reads it after the grant.
		TokenAtGrant: nonFair,
		New: func(t *testing.T, s *session.Session, path, _ string) holdtest.Contender {
			m, err := mutex.New(s, path, opts...)
			if err != nil {
				t.Fatal(err)
			}
			return lockContender(m, m.Lock, m.Unlock, m.TryLock)
		},
		ReleaseLost:          mutex.ErrLost,
		ReleaseAgain:         mutex.ErrNotHeld,
		ReleasedValidate:     mutex.ErrNotHeld,
		ReleasedFenced:       mutex.ErrNotHeld,
		ErrSequenceExhausted: mutex.ErrSequenceExhausted,
		// About 640 (the holders release at once: none lasts the 10 ms
		// after which a hold reads its own node, hold/ownwatch.go). The
		// release, which marks the node as it deletes it (one multi:
		// line.AwaitOptions.MarkOnRelease); the next waiter, told of the
		// mark, sends nothing before its grant (its second watch, a child
		// watch, fires at the deletion: line.Line.watch). It was 3 per
		// handoff with a mark at the grant (a set of its own) and the
		// waiter watching the marked node again, 2 without that second
		// watch.
		Handoff: holdtest.Handoff{Bytes: 1280, Requests: 1.5},
	}
}

// The write side of a read-write lock: writers exclude each other.
func writeRecipe() holdtest.Recipe {
	r := lockRecipe(false)
	r.Name, r.Kind = "rwlock", recipe.KindWrite
	r.New = func(t *testing.T, s *session.Session, path, _ string) holdtest.Contender {
		rw, err := mutex.NewRW(s, path)
		if err != nil {
			t.Fatal(err)
		}
		return lockContender(rw.Writer(), rw.Lock, rw.Unlock, rw.TryLock)
	}
	return r
}

// TestHoldContract: every lock keeps the hold contract (holdtest): a fair
// lock, a non-fair lock, and the write side of a read-write lock. The three
// run at once, each on a server of its own (holdtest.Run): most of their
// time is spent waiting for sessions to expire and stalls to be noticed.
func TestHoldContract(t *testing.T) {
	t.Run("fair", func(t *testing.T) { t.Parallel(); holdtest.Run(t, zktest.Start(t, 1), lockRecipe(false)) })
	t.Run("nonfair", func(t *testing.T) { t.Parallel(); holdtest.Run(t, zktest.Start(t, 1), lockRecipe(true)) })
	t.Run("rw-write", func(t *testing.T) { t.Parallel(); holdtest.Run(t, zktest.Start(t, 1), writeRecipe()) })
}
