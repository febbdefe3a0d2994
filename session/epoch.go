package session

import (
	"context"
	"sync"
	"time"

	"github.com/shepherdzk/shepherd/internal/wire/wiretap"

	"github.com/go-zookeeper/zk"
)

// Epoch is one connected stretch of one ZooKeeper session: it begins at
// Connected or Reconnected and ends at the next Suspended, Lost or Closed.
// Recipes bind each hold to the epoch it was granted in.
type Epoch struct {
	conn    *zk.Conn
	tap     *wiretap.Tap // the connection's (nil: none)
	sid     int64
	sctx    context.Context // ends with the session (Lost, Closed)
	scancel context.CancelCauseFunc
	ctx     context.Context // ends with this epoch
	cancel  context.CancelCauseFunc
	n       uint64
	started time.Time

	ends   hookSet  // OnEnd's
	shooks *hookSet // OnSessionEnd's: shared by every epoch of the session
}

// hookSet is a set of functions run once, synchronously, when something ends.
type hookSet struct {
	mu    sync.Mutex
	hooks map[uint64]func() // nil once ended
	n     uint64
	ended bool
}

// add registers f, or runs it at once if the set has ended (see OnEnd). A
// nil set never ends.
func (s *hookSet) add(f func()) (stop func() bool) {
	if s == nil {
		return func() bool { return true }
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		f()
		return func() bool { return false }
	}
	if s.hooks == nil {
		s.hooks = make(map[uint64]func())
	}
	s.n++
	id := s.n
	s.hooks[id] = f
	s.mu.Unlock()
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		_, ok := s.hooks[id]
		delete(s.hooks, id)
		return ok
	}
}

// end runs the hooks, once.
func (s *hookSet) end() {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	hooks := s.hooks
	s.hooks = nil
	s.mu.Unlock()
	for _, f := range hooks {
		f()
	}
}

// OnEnd registers f to run when the epoch ends, synchronously on the
// goroutine that ends it (go-zookeeper's event callback among them), right
// after Context is cancelled and before anyone is told of the state change:
// the fastest way to signal a loss. f must not block and must not call the
// session or its connection (closing a channel is what it is for). If the
// epoch has ended already, f runs at once. stop unregisters f and reports
// whether it did so before f ran; after stop, f never runs.
func (e *Epoch) OnEnd(f func()) (stop func() bool) { return e.ends.add(f) }

// OnSessionEnd registers f to run when this epoch's session ends (Lost, or
// the manager closed), in the same way as OnEnd: synchronously on the
// goroutine that ends it, right after SessionContext is cancelled. A hold
// that rides through disconnects (PauseOnDisconnect) takes its loss signal
// from here: the session outlives its epochs.
func (e *Epoch) OnSessionEnd(f func()) (stop func() bool) { return e.shooks.add(f) }

// end cancels the epoch's context (and, with session, the session's) with
// cause and runs the OnEnd hooks (and, with session, the OnSessionEnd hooks),
// once.
func (e *Epoch) end(cause error, session bool) {
	if session {
		e.scancel(cause)
	} else if e.cancel != nil {
		e.cancel(cause)
	}
	e.ends.end()
	if session {
		e.shooks.end()
	}
}

// Conn is the connection of this epoch's session. Never call it from a
// go-zookeeper event callback.
func (e *Epoch) Conn() *zk.Conn { return e.conn }

// WireTap is the tap of this epoch's connection, for the pipelined requests
// of package wiretap (internal: the recipes' CreateThenChildren,
// MultiWritten); nil for a connection without one (then they wait for each
// answer).
func (e *Epoch) WireTap() *wiretap.Tap { return e.tap }

// SessionID is the ZooKeeper session this epoch belongs to; it is the
// ephemeralOwner of the nodes the session creates.
func (e *Epoch) SessionID() int64 { return e.sid }

// Seq numbers the epochs of a manager: 1, 2, ... in the order they began.
func (e *Epoch) Seq() uint64 { return e.n }

// Started is when the epoch began.
func (e *Epoch) Started() time.Time { return e.started }

// Context is cancelled the moment this epoch ends: the connection is lost
// (Suspended), the session is lost, or the manager is closed. It is the loss
// signal of every hold granted in this epoch; it is cancelled synchronously
// where the loss is noticed (go-zookeeper's event callback, or the manager's
// silence watchdog).
func (e *Epoch) Context() context.Context { return e.ctx }

// Done is Context().Done().
func (e *Epoch) Done() <-chan struct{} { return e.ctx.Done() }

// SessionContext is cancelled when this epoch's session is lost or the manager
// is closed: from then on the session's ephemeral nodes are, or must be assumed,
// gone, and nothing may be done in the session's name.
func (e *Epoch) SessionContext() context.Context { return e.sctx }

// SessionDone is SessionContext().Done().
func (e *Epoch) SessionDone() <-chan struct{} { return e.sctx.Done() }
