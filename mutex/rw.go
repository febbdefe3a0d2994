package mutex

import (
	"context"
	"fmt"
	"sync"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// RWMutex is a distributed read-write lock: many readers or one writer. It is
// fair: a reader waits for the nearest writer ahead of it in line (so a stream
// of readers cannot starve a writer), a writer for its predecessor (one
// notification per release). Its nodes are named like Apache Curator's
// InterProcessReadWriteLock ("__READ__", "__WRIT__").
//
// The reader and writer sides are holds of one value. A value that holds the
// write lock is granted the read lock at once (a downgrade), as Curator
// grants it: when no other writer waits, with a read node of its own, so that
// once the write lock is released the readers queued behind it share the
// lock with ours; when a writer waits behind our write hold, the read shares
// our writer's node instead, which then stays in line until both locks are
// released: a writer queued behind it is never granted while the downgraded
// read is held (Curator's own downgrade lets that writer in as soon as the
// write lock is released). Likewise a value whose read lock holds its
// writer's node (that second kind of downgrade) is granted the write lock
// again at once. Any other upgrade, the write lock taken while holding a read
// lock of its own node, waits for itself: never do it.
type RWMutex struct {
	r, w *Mutex
	mu   sync.Mutex // orders the sides' sharing and releases
}

// NewRW returns a read-write lock at path. It does no I/O.
func NewRW(sess *session.Session, path string, opts ...Option) (*RWMutex, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
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
	rw := &RWMutex{r: r, w: w}
	r.rw, w.rw = rw, rw
	return rw, nil
}

// RLock acquires the read lock (reentrant). A value holding the write lock is
// granted it at once (see RWMutex).
func (rw *RWMutex) RLock(ctx context.Context) error {
	if rw.w == nil {
		return errNotMade
	}
	ok, err := rw.downgrade(ctx)
	if ok || err != nil {
		return err
	}
	return rw.r.Lock(ctx)
}

// TryRLock acquires the read lock if no writer holds or waits for it (or if
// this value holds the write lock).
func (rw *RWMutex) TryRLock(ctx context.Context) (bool, error) {
	if rw.w == nil {
		return false, errNotMade
	}
	ok, err := rw.downgrade(ctx)
	if ok || err != nil {
		return ok, err
	}
	return rw.r.TryLock(ctx)
}

// downgrade grants the read lock to a value that holds the write lock: with a
// read node of its own when no writer waits between our writer's node and it
// (the read side's turn ignores our own writer's node), else by sharing our
// writer's node. It reports false (and does nothing) when the value does not
// hold the write lock, or holds the read lock already (Lock counts it).
func (rw *RWMutex) downgrade(ctx context.Context) (bool, error) {
	if !rw.w.IsHeld() || rw.r.IsHeld() {
		return false, nil
	}
	ok, err := rw.r.TryLock(ctx)
	if ok || err != nil {
		return ok, err
	}
	// A writer waits behind ours (TryLock has removed the read node).
	return rw.share(rw.r, rw.w), nil
}

// share gives to's side the hold of from's side, if from holds it: both
// sides then hold one node, released when the last of them lets go.
func (rw *RWMutex) share(to, from *Mutex) bool {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	h := from.Hold()
	if h == nil || !h.Valid() {
		return false
	}
	to.mu.Lock()
	defer to.mu.Unlock()
	if to.hold != nil && to.hold.Valid() {
		to.count++
		return true
	}
	to.hold, to.count = h, 1
	return true
}

// sharedBy reports whether the other side than m still holds h (called by
// m's Unlock, under rw.mu, after m let h go).
func (rw *RWMutex) sharedBy(m *Mutex, h *hold.Hold) bool {
	other := rw.r
	if m == rw.r {
		other = rw.w
	}
	return other.Hold() == h
}

// RUnlock releases the read lock.
func (rw *RWMutex) RUnlock(ctx context.Context) error { return rw.r.Unlock(ctx) }

// Lock acquires the write lock (reentrant). A value whose read lock shares
// its writer's node (see RWMutex) is granted it again at once.
func (rw *RWMutex) Lock(ctx context.Context) error {
	if rw.w == nil {
		return errNotMade
	}
	if rw.upgrade() {
		return nil
	}
	return rw.w.Lock(ctx)
}

// TryLock acquires the write lock if it is free now.
func (rw *RWMutex) TryLock(ctx context.Context) (bool, error) {
	if rw.w == nil {
		return false, errNotMade
	}
	if rw.upgrade() {
		return true, nil
	}
	return rw.w.TryLock(ctx)
}

// upgrade gives the write side the hold of the read side when that hold is
// a writer's node (a downgrade that shared it): the node still heads the line.
func (rw *RWMutex) upgrade() bool {
	if rw.w.IsHeld() {
		return false
	}
	h := rw.r.Hold()
	if h == nil || !h.Valid() {
		return false
	}
	if n, ok := line.ParseName(h.Node()[len(rw.w.path)+1:]); !ok || n.Kind != rw.w.line.Naming.Kind(recipe.KindWrite) {
		return false
	}
	return rw.share(rw.w, rw.r)
}

// Unlock releases the write lock.
func (rw *RWMutex) Unlock(ctx context.Context) error { return rw.w.Unlock(ctx) }

// Reader is the read side as a Mutex (Lost, Token, Fenced, Validate).
func (rw *RWMutex) Reader() *Mutex { return rw.r }

// Writer is the write side as a Mutex (Lost, Token, Fenced, Validate).
func (rw *RWMutex) Writer() *Mutex { return rw.w }

// reading is the read side's Driver of the contender loop: a reader waits
// only for the writers ahead of it, and ignores the node of its own writer
// (a downgrade that shares that node).
type reading struct {
	locker
	writerNode string // our writer's node name ("" none)
}

// reader is the read side's driver for one acquire of m.
func (m *Mutex) reader(k locker) *reading {
	r := &reading{locker: k}
	if m.writer != nil {
		if own := m.writer.Node(); own != "" {
			r.writerNode = own[len(m.path)+1:]
		}
	}
	return r
}

// Turn is readTurn on the line without our writer's node.
func (r *reading) Turn(names []line.Name, i int) (bool, int, bool) {
	if r.writerNode == "" {
		return readTurn(names, i)
	}
	rest := make([]line.Name, 0, len(names))
	j := i
	for k, n := range names {
		if n.Name == r.writerNode {
			if k < i {
				j--
			}
			continue
		}
		rest = append(rest, n)
	}
	ok, w, grants := readTurn(rest, j)
	if !ok {
		w = line.Index(names, rest[w].Name)
	}
	return ok, w, grants
}

// isReader reports whether a node is a reader's (readers share).
func isReader(n line.Name) bool { return n.Kind == recipe.KindRead || n.Kind == recipe.KindKazooRead }

// readTurn: granted when no writer is ahead; else watch the nearest writer
// ahead, whose deletion grants us if it is the only writer ahead.
func readTurn(names []line.Name, i int) (bool, int, bool) {
	w, writers := -1, 0
	for j := 0; j < i; j++ {
		if !isReader(names[j]) {
			w = j
			writers++
		}
	}
	if w < 0 {
		return true, 0, false
	}
	return false, w, writers == 1
}
