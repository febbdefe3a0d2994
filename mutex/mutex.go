package mutex

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/shepherdzk/shepherd/internal/race"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/internal/construct"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// Errors, matched with errors.Is.
var (
	ErrInvalidPath     = recipe.ErrInvalidPath
	ErrInvalidArgument = recipe.ErrInvalidArgument
	ErrNotHeld         = recipe.ErrNotHeld
	ErrLost            = recipe.ErrLost
	ErrClosed          = recipe.ErrClosed
	ErrWrongKind       = recipe.ErrWrongKind
	ErrForeignRecipe   = recipe.ErrForeignRecipe
)

// Mutex is a distributed lock at one path. Its methods are safe for concurrent
// use; holds are per value (not per goroutine).
type Mutex struct {
	sess   *session.Session
	path   string
	kind   string // recipe.KindLock, KindRead or KindWrite
	fair   bool
	data   []byte
	line   line.Line
	single race.Race // the non-fair race
	log    *slog.Logger
	// writer is the write side of the read-write lock this read side belongs
	// to: a reader ignores the node of its own writer (a downgrade).
	writer *Mutex
	// rw is the read-write lock this side belongs to (nil for a Mutex): its
	// two sides may share one hold (see RWMutex.RLock).
	rw *RWMutex

	turn chan struct{} // serialises acquisitions on this value

	mu    sync.Mutex
	hold  *hold.Hold
	count int
}

// New returns a mutex at path. It does no I/O. A nil session, an invalid
// path or an invalid option is an error (ErrInvalidArgument, ErrInvalidPath).
func New(sess *session.Session, path string, opts ...Option) (*Mutex, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return newMutex(sess, path, recipe.KindLock, c)
}

func newMutex(sess *session.Session, path, kind string, c config) (*Mutex, error) {
	if err := construct.Check("mutex", sess, path); err != nil {
		return nil, err
	}
	full := sess.Path(path)
	m := &Mutex{sess: sess, path: full, kind: kind, fair: c.fair, data: c.data,
		turn: make(chan struct{}, 1), log: sess.Logger().With("mutex", full)}
	lineKind := layout.FairMutex
	if kind != recipe.KindLock {
		lineKind = layout.RWLock
	}
	m.line = line.Line{Sess: sess, Recipe: recipeName(kind), Path: full, Naming: c.names, Layout: line.NewPathCheck(lineKind),
		OnDisconnect: c.policy}
	m.single = race.Race{Sess: sess, Recipe: recipeName(kind), Path: full, Name: NonFairNode, Stamp: nonFairStamp,
		Layout: layout.NonFairMutex, OnDisconnect: c.policy}
	return m, nil
}

// Session is the session manager the lock lives in.
func (m *Mutex) Session() *session.Session { return m.sess }

// Hold is the current hold (nil when not held): a handle that stays valid for
// fenced writes and checks after the Mutex has moved on.
func (m *Mutex) Hold() *hold.Hold {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hold
}

// Path is the lock's full path (namespace included).
func (m *Mutex) Path() string { return m.path }

// Lock acquires the lock, waiting in line until it is granted or ctx ends. If
// this value holds the lock already, it increments the hold count. When ctx
// ends, the waiter's node is removed before Lock returns ctx.Err().
func (m *Mutex) Lock(ctx context.Context) error {
	_, err := m.acquire(ctx, true)
	return err
}

// TryLock acquires the lock if it is free now, without waiting. It reports
// whether it did.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	return m.acquire(ctx, false)
}

func (m *Mutex) acquire(ctx context.Context, wait bool) (bool, error) {
	if m.sess == nil {
		return false, errNotMade
	}
	// An ended ctx fails the call, also when the value holds the lock
	// already: the select below would pick either case at random.
	if err := ctx.Err(); err != nil {
		return false, err
	}
	select {
	case m.turn <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	defer func() { <-m.turn }()
	m.mu.Lock()
	if m.hold != nil && m.hold.Valid() {
		m.count++
		m.mu.Unlock()
		return true, nil
	}
	stale := m.hold
	m.hold, m.count = nil, 0
	m.mu.Unlock()
	if stale != nil {
		_ = stale.Release(ctx) // lost before: end it (guaranteed delete)
	}
	var h *hold.Hold
	var err error
	if m.fair {
		h, err = m.acquireFair(ctx, wait)
	} else {
		h, err = m.acquireNonFair(ctx, wait)
	}
	if err != nil || h == nil {
		return false, err
	}
	m.mu.Lock()
	m.hold, m.count = h, 1
	m.mu.Unlock()
	return true, nil
}

// errNotMade is the error of a Mutex or RWMutex used without New or NewRW.
var errNotMade = construct.NotMade("mutex", "a Mutex or RWMutex not made by New or NewRW")

// recipeName names the recipe of a lock of kind for the observer.
func recipeName(kind string) string {
	if kind == recipe.KindLock {
		return "mutex"
	}
	return "rwlock"
}

// Unlock decrements the hold count and releases the lock at zero, whatever
// ctx: the value holds the lock no more and the node's delete is under way
// when Unlock returns. ctx only bounds how long Unlock waits for the server to
// confirm the delete: if it cannot within ctx, Unlock returns ctx's error and
// the delete goes on in the background until the node is gone or its session
// is. It returns ErrNotHeld if this value does not hold the lock, and ErrLost
// (the hold is then over) if the lock was lost before.
func (m *Mutex) Unlock(ctx context.Context) error {
	if m.rw != nil {
		// The two sides' releases are decided one at a time: of a hold
		// both share, exactly the last to let go releases it.
		m.rw.mu.Lock()
		defer m.rw.mu.Unlock()
	}
	m.mu.Lock()
	h := m.hold
	if h == nil {
		m.mu.Unlock()
		return fmt.Errorf("mutex %s: %w", m.path, ErrNotHeld)
	}
	if h.Valid() && m.count > 1 {
		m.count--
		m.mu.Unlock()
		return nil
	}
	m.hold, m.count = nil, 0
	m.mu.Unlock()
	if m.rw != nil && m.rw.sharedBy(m, h) {
		return nil // the other side of the read-write lock releases it
	}
	if err := h.Release(ctx); err != nil {
		return fmt.Errorf("mutex %s: %w", m.path, err)
	}
	return nil
}

// closedCh is a closed channel: the Lost of a lock not held.
var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Lost returns the held lock's loss signal, a channel closed when the hold
// is, or may be, lost, never by Unlock (see hold.Hold for the hold
// contract): take it after Lock. Called when the value holds no lock, it
// returns a closed channel (there is no hold to keep).
func (m *Mutex) Lost() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hold == nil {
		return closedCh
	}
	return m.hold.Lost()
}

// Paused returns the held lock's pause signal (PauseOnDisconnect): a channel
// closed when the hold pauses, renewed at each resume (see hold.Hold).
// Called when the value holds no lock, it returns a closed channel.
func (m *Mutex) Paused() <-chan struct{} {
	m.mu.Lock()
	h := m.hold
	m.mu.Unlock()
	if h == nil {
		return closedCh
	}
	return h.Paused()
}

// RevokeRequested is closed when an operator asks for the held lock
// (shepherd revoke -ask, admin.AskRevoke): unlock when the work allows (see
// hold.Hold.RevokeRequested). Called when the value holds no lock, it
// returns nil, a channel that never fires.
func (m *Mutex) RevokeRequested() <-chan struct{} {
	m.mu.Lock()
	h := m.hold
	m.mu.Unlock()
	if h == nil {
		return nil
	}
	return h.RevokeRequested()
}

// Gate returns nil while the lock is held and not paused; while it is
// paused, it waits until the hold resumes (nil), is lost (ErrLost) or ctx
// ends (see hold.Hold.Gate). It returns ErrNotHeld when the value holds no
// lock.
func (m *Mutex) Gate(ctx context.Context) error {
	h, err := m.held()
	if err != nil {
		return err
	}
	return h.Gate(ctx)
}

// Context returns the held lock's context: it ends when the hold ends for any
// reason, a loss (as Lost) or the Unlock that releases it. Pass it to the work
// the lock protects. Called when the value holds no lock, it returns a
// context that has ended.
func (m *Mutex) Context() context.Context {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hold == nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	return m.hold.Context()
}

// IsHeld reports whether this value holds the lock (granted and not yet
// possibly lost).
func (m *Mutex) IsHeld() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hold != nil && m.hold.Valid()
}

func (m *Mutex) held() (*hold.Hold, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hold == nil {
		return nil, fmt.Errorf("mutex %s: %w", m.path, ErrNotHeld)
	}
	return m.hold, nil
}

// Token is the held lock's fencing token: it grows with every grant of this
// lock. For a non-fair lock it is known from the grant and costs nothing. For
// a fair lock (or a side of a read-write lock) it is read by the hold's
// watch on its own node (its first read, which every hold that lasts 10 ms
// makes anyway): the first call starts that read at once and waits for it,
// sending no request of its own; later calls cost nothing (see
// hold.Hold.Token). It returns ErrNotHeld when the value holds no lock.
func (m *Mutex) Token(ctx context.Context) (hold.Token, error) {
	h, err := m.held()
	if err != nil {
		return 0, err
	}
	return h.Token(ctx)
}

// Node is the held lock's node ("" if not held).
func (m *Mutex) Node() string {
	h, err := m.held()
	if err != nil {
		return ""
	}
	return h.Node()
}

// Fenced runs ops as one multi-op that lands only while the lock is held; a
// write after the hold is gone fails with an error matching ErrLost. ops are
// fence.Set, fence.Create and fence.Delete (paths in the session's
// namespace), or fence.Raw's go-zookeeper requests (see hold.Hold.Fenced);
// it returns one response per op (a Set's Stat.Version is the node's new
// version). The check prepended to ops: for a fair lock (and each
// side of a read-write lock), that the hold's node exists; for a non-fair
// lock, that the lock's node exists and that the path's version is still the
// one this grant wrote (no grant since).
func (m *Mutex) Fenced(ctx context.Context, ops ...fence.Op) ([]zk.MultiResponse, error) {
	h, err := m.held()
	if err != nil {
		return nil, err
	}
	return h.Fenced(ctx, ops...)
}

// Validate checks with the server that the lock is still held.
func (m *Mutex) Validate(ctx context.Context) error {
	h, err := m.held()
	if err != nil {
		return err
	}
	return h.Validate(ctx)
}

// ErrSequenceExhausted: the path's sequence counter has run out and its line
// has no order (see recipe.ErrSequenceExhausted): Lock fails closed.
var ErrSequenceExhausted = recipe.ErrSequenceExhausted
