package mutex

import (
	"context"
	"fmt"

	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// RWMutex is a distributed read-write lock: many readers or one writer. It is
// fair: a reader waits for the nearest writer ahead of it in line (so a stream
// of readers cannot starve a writer), a writer for its predecessor (one
// notification per release). Its nodes are named like Apache Curator's
// InterProcessReadWriteLock ("__READ__", "__WRIT__").
//
// The reader and writer sides are independent holds: a value may hold both
// only if it takes the read lock while holding the write lock (a downgrade),
// never the reverse, which would wait for itself.
type RWMutex struct {
	r, w *Mutex
}

// NewRW returns a read-write lock at path. It does no I/O.
func NewRW(sess *session.Session, path string, opts ...Option) (*RWMutex, error) {
	c := config{fair: true}
	for _, o := range opts {
		o(&c)
	}
	if !c.fair {
		return nil, fmt.Errorf("mutex: %w: a read-write lock is always fair", ErrInvalidArgument)
	}
	r, err := newMutex(sess, path, recipe.KindRead, c)
	if err != nil {
		return nil, err
	}
	w, err := newMutex(sess, path, recipe.KindWrite, c)
	if err != nil {
		return nil, err
	}
	r.writer = w
	return &RWMutex{r: r, w: w}, nil
}

// RLock acquires the read lock (reentrant).
func (rw *RWMutex) RLock(ctx context.Context) error { return rw.r.Lock(ctx) }

// TryRLock acquires the read lock if no writer holds or waits for it.
func (rw *RWMutex) TryRLock(ctx context.Context) (bool, error) { return rw.r.TryLock(ctx) }

// RUnlock releases the read lock.
func (rw *RWMutex) RUnlock(ctx context.Context) error { return rw.r.Unlock(ctx) }

// Lock acquires the write lock (reentrant).
func (rw *RWMutex) Lock(ctx context.Context) error { return rw.w.Lock(ctx) }

// TryLock acquires the write lock if it is free now.
func (rw *RWMutex) TryLock(ctx context.Context) (bool, error) { return rw.w.TryLock(ctx) }

// Unlock releases the write lock.
func (rw *RWMutex) Unlock(ctx context.Context) error { return rw.w.Unlock(ctx) }

// Reader is the read side as a Mutex (Lost, Token, Fenced, Validate).
func (rw *RWMutex) Reader() *Mutex { return rw.r }

// Writer is the write side as a Mutex (Lost, Token, Fenced, Validate).
func (rw *RWMutex) Writer() *Mutex { return rw.w }
