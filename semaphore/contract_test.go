package semaphore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/shepherdzk/shepherd/internal/holdtest"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
)

// TestHoldContract: a semaphore's lease keeps the hold contract (holdtest).
// With one lease the semaphore is a lock: two contenders exclude each other.
func TestHoldContract(t *testing.T) {
	holdtest.Run(t, zk, holdtest.Recipe{
		Name: "semaphore",
		Kind: recipe.KindLock,
		New: func(t *testing.T, s *session.Session, path, _ string) holdtest.Contender {
			sem, err := semaphore.New(s, path, 1)
			if err != nil {
				t.Fatal(err)
			}
			return holdtest.Contender{
				Acquire: func(ctx context.Context) (holdtest.Hold, error) {
					l, err := sem.Acquire(ctx)
					if err != nil {
						return nil, err
					}
					return l, nil
				},
				Try: func(ctx context.Context) (holdtest.Hold, error) {
					l, err := sem.TryAcquire(ctx)
					if errors.Is(err, semaphore.ErrNoLease) {
						return nil, nil
					}
					if err != nil {
						return nil, err
					}
					return l, nil
				},
			}
		},
		Line:                 func(path string) string { return path + "/locks" },
		Containers:           func(full string) []string { return []string{full + "/locks", full + "/leases"} },
		ReleaseLost:          semaphore.ErrLost,
		ReleaseAgain:         nil, // a lease's Release is idempotent
		ReleasedValidate:     recipe.ErrNotHeld,
		ReleasedFenced:       semaphore.ErrLost,
		ErrSequenceExhausted: semaphore.ErrSequenceExhausted,
		// At most one listing of the line in the six handoffs: on a loaded
		// machine (make test runs two packages and the chaos suite at
		// once) one handoff in a run now and then looks at the line again
		// (seen twice: 10,802 bytes each); every handoff listing it, as
		// without the mark, costs six listings.
		Handoff: holdtest.Handoff{BytesLessListing: 2048},
	})
}
