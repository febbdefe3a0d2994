package hold

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/zkdelete"
	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/session"
)

// Token is a hold's fencing token: the creation zxid of the holder's node. It
// grows with every grant across the whole ensemble.
type Token int64

// String is the token in decimal, as the CLI's SHEPHERD_TOKEN and `shepherd
// status` print it.
func (t Token) String() string { return strconv.FormatInt(int64(t), 10) }

// Hold is one granted lock, lease or leadership (see the package doc for
// its contract: held, paused or lost). Its methods are safe for concurrent
// use.
type Hold struct {
	sess    *session.Session
	sid     int64
	nodes   []string // our nodes (the first is the one the token is read from)
	ctx     context.Context
	cancel  context.CancelCauseFunc
	granted time.Time

	// The channels below are made when first asked for (under mu): a hold
	// nobody asks them of costs none (see holdscale).
	//
	// lost is closed at a loss (loseLocked), never at the release.
	lost chan struct{}
	// revoke is closed when an operator asks for the hold (see revoke.go).
	revoke chan struct{}
	// firstRead is closed after the own-node watch's first read of
	// nodes[0], which sets token if it was unknown (see Token), or when the
	// hold ends before the watch started (read1, once: read). The watch
	// starts at ownWatchDelay, or when Token asks (watchOwnNodes, once:
	// watchOnce).
	firstRead chan struct{}

	// The flags, side by side (a hold that lasts costs fewer bytes).
	pauses    bool      // the policy is PauseOnDisconnect (else StopOnDisconnect)
	read      bool      // the first read is reported (under mu)
	asked     bool      // revoke: an operator asked (under mu)
	released  bool      // under mu
	observed  bool      // under mu
	state     holdState // under mu
	watchOnce sync.Once

	// guard, if not nil, is the check a release's delete is made under: a
	// node with a fixed name may be someone else's by the time a retried
	// delete reaches the server.
	guard *zk.CheckVersionRequest

	mu        sync.Mutex
	ep        *session.Epoch // the epoch the hold is valid in (while paused: the one that ended)
	stopHooks []func() bool  // unhook the loss and pause signals (at the release)
	// watchTimer starts the own-node watch (watchOwnNodes) at
	// ownWatchDelay; nil once it has fired or been stopped (a timer
	// kept for the hold's life would cost every hold that lasts).
	watchTimer *time.Timer
	// derived ends the contexts derived from the hold's (see
	// DeriveContext), right after the hold's own ends.
	derived context.CancelCauseFunc

	pz       *pausing        // made when first needed (pause.go)
	onLost   []func()        // run (on a goroutine) at a loss
	unwatch  []func()        // end the own-node watch's registrations (ownwatch.go)
	onRead   func()          // called after each read of nodes[0] by the own-node watch (OnNodeRead)
	attached []zkdelete.Node // deleted with the hold's nodes, or at its loss (see Attach)
	// mark, when set, is the data its release writes to nodes[0] in the
	// multi that deletes it (see AwaitOptions.MarkOnRelease).
	mark   []byte
	token  Token
	recipe string // for the observer
	path   string
}

type holdState uint8

const (
	held holdState = iota
	paused
	lost
)

// Config is a grant to make a Hold of (see New).
type Config struct {
	Sess *session.Session
	// Recipe names the recipe ("mutex", "semaphore", ...) in the events the
	// hold reports to the session's observer.
	Recipe string
	// Policy is what a lost connection does to the hold (0: the session's
	// DisconnectPolicy).
	Policy session.DisconnectPolicy
	// Epoch is the epoch the hold is granted in: the hold is valid while
	// it lasts (and, under PauseOnDisconnect, pauses when it ends).
	Epoch *session.Epoch
	// Token is the creation zxid of Nodes[0] if known, else 0 (then read
	// once, when first asked).
	Token Token
	// Guard, if not nil, is a check the hold's fence and release are made
	// under: for a node whose name is reused (the single-node race), the
	// version of its parent at the grant.
	Guard *zk.CheckVersionRequest
	// Mark, if not nil, is written to Nodes[0] in the multi-op that
	// deletes it at the release (see line.AwaitOptions.MarkOnRelease).
	Mark []byte
	// Nodes are the hold's nodes, created by Epoch's session; the first is
	// the one the token is read from and the fence checks. Their names are
	// never reused unless Guard is set.
	Nodes []string
}

// New grants a hold (for a recipe of one's own: shepherd's recipes and the
// toolkit's lines make theirs through it). Its fence is the existence of
// Nodes[0] (and Guard); its release deletes Nodes (under Guard). A Config
// without a session, an epoch or a node is session.ErrInvalidArgument.
func New(c Config) (*Hold, error) {
	if c.Sess == nil || c.Epoch == nil || len(c.Nodes) == 0 {
		return nil, fmt.Errorf("hold: %w: a hold needs a session, an epoch and a node", session.ErrInvalidArgument)
	}
	h := newHold(c.Sess, c.Recipe, c.Policy, c.Epoch, c.Token, c.Guard, c.Nodes...)
	h.mark = c.Mark
	return h, nil
}

// newHold grants a hold; guard, if not nil, is checked by its fence and its
// release (see Hold.guard).
func newHold(sess *session.Session, recipe string, policy session.DisconnectPolicy, ep *session.Epoch, token Token,
	guard *zk.CheckVersionRequest, nodes ...string) *Hold {
	if !policy.Valid() {
		policy = sess.DisconnectPolicy()
	}
	base := ep.Context()
	if policy == session.PauseOnDisconnect {
		base = ep.SessionContext()
	}
	ctx, cancel := context.WithCancelCause(base)
	h := &Hold{sess: sess, pauses: policy == session.PauseOnDisconnect, sid: ep.SessionID(), nodes: nodes, ctx: ctx, cancel: cancel,
		granted: time.Now(), ep: ep, token: token, recipe: recipe, guard: guard}
	// The loss (and pause) signals run on the goroutine that ends the epoch
	// or the session (go-zookeeper's event callback, or the session's
	// silence watchdog), like the cancellation of the hold's ctx, a child of
	// the epoch's (or the session's) context: no hop through a goroutine or
	// a queue. Registered outside h.mu: a hook runs at once if its epoch has
	// ended already.
	var hooks []func() bool
	if policy == session.PauseOnDisconnect {
		hooks = append(hooks, ep.OnSessionEnd(h.loseWithContext), ep.OnEnd(func() { h.epochEnded(ep) }))
	} else {
		hooks = append(hooks, ep.OnEnd(h.loseWithContext))
	}
	// Every hold that lasts watches its own nodes: an outside deletion or
	// an operator's revocation reaches it within a notification (see
	// ownwatch.go). The watch starts once the hold has lasted
	// ownWatchDelay (or when Token asks): a hold released sooner costs a
	// stopped timer, no goroutine and no request.
	h.mu.Lock()
	h.watchTimer = time.AfterFunc(ownWatchDelay, h.watchOwnNodes) // under mu: it forgets itself (watchOwnNodes)
	h.stopHooks = append(h.stopHooks, hooks...)
	h.mu.Unlock()
	return h
}

// stopWatchTimer stops the own-node watch's timer, at the release: a
// watch that has not started never will.
func (h *Hold) stopWatchTimer() {
	h.mu.Lock()
	t := h.watchTimer
	h.watchTimer = nil
	h.mu.Unlock()
	if t != nil && t.Stop() {
		h.watchOnce.Do(func() { h.read1(nil) }) // it never starts
	}
}

// DeriveContext returns a context that ends when the hold's Context ends
// (with its cause), or when cancel is called: as
// context.WithCancelCause(h.Context()) would, but ended by the hold itself
// (right after its own Context, before Lost closes), so that the hold's
// context keeps no children nor Done channel for it (a hold that lasts
// costs less: an election's leadership derives its Context so). It keeps
// the values of the context the hold's derives from. The hold keeps each
// derived context's cancel until the hold ends: derive one for each piece
// of work the hold bounds, not one per request.
func (h *Hold) DeriveContext() (context.Context, context.CancelCauseFunc) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(h.ctx)) // its values, not its end
	if h.ctx.Err() != nil {
		cancel(context.Cause(h.ctx)) // ended already
		return ctx, cancel
	}
	if prev := h.derived; prev != nil {
		h.derived = func(cause error) { prev(cause); cancel(cause) }
	} else {
		h.derived = cancel
	}
	return ctx, cancel
}

// endContextLocked ends the hold's Context with cause (unless it has ended
// already), then the contexts derived from it, with the hold's cause (under
// h.mu).
func (h *Hold) endContextLocked(cause error) {
	h.cancel(cause)
	if d := h.derived; d != nil {
		h.derived = nil
		d(context.Cause(h.ctx))
	}
}

// Context ends when the hold ends for any reason: it may be lost (as Lost)
// or it was released. A pause does not end it. Pass it to the work the hold
// protects. Its context.Cause says why: an error matching ErrLost for a
// loss (session.ErrDisconnected for a lost connection under
// StopOnDisconnect; the reason of the session's loss; its node deleted),
// ErrClosed for the session manager's Close, ErrReleased for a release.
func (h *Hold) Context() context.Context { return h.ctx }

// Node is the path of the hold's node.
func (h *Hold) Node() string { return h.nodes[0] }

// Nodes are the paths of all the hold's nodes.
func (h *Hold) Nodes() []string { return append([]string(nil), h.nodes...) }

// SessionID is the session the hold belongs to.
func (h *Hold) SessionID() int64 { return h.sid }

// Granted is when the hold was granted.
func (h *Hold) Granted() time.Time { return h.granted }

// Policy is what a lost connection does to this hold.
func (h *Hold) Policy() session.DisconnectPolicy {
	if h.pauses {
		return session.PauseOnDisconnect
	}
	return session.StopOnDisconnect
}

// Valid reports whether the hold has not been lost or released (locally: see
// Validate for a check with the server). A paused hold is valid: it is not
// known to be lost (see Gate).
func (h *Hold) Valid() bool { return h.ctx.Err() == nil }

// Release ends the hold, whatever ctx: Context ends at once (Lost stays
// open: a release is no loss) and the delete of its nodes starts, and goes on
// in the background (a guaranteed delete) until they are gone or their
// session is; a paused hold's delete is made once its session is back.
// ctx only bounds how long Release waits for the server to confirm the
// delete: if it cannot within ctx, Release returns ctx's error (matched with
// errors.Is), and the hold is released all the same. It returns at once with
// ErrLost if the hold had been lost before (its nodes are deleted once the
// session is back, or the server removes them with the session), and
// ErrNotHeld if it was released already.
func (h *Hold) Release(ctx context.Context) error {
	h.mu.Lock()
	if h.released {
		h.mu.Unlock()
		return ErrNotHeld
	}
	fns := h.settleLocked() // a loss signalled, its hook still to run
	wasLost := h.state == lost
	if h.state == paused {
		close(h.pz.resumed)
	}
	h.released = true
	hooks := h.stopHooks
	h.stopHooks = nil
	unwatch := h.unwatch
	h.unwatch, h.onRead = nil, nil
	ep, recipe, attached := h.ep, h.recipe, h.attached
	h.mu.Unlock()
	runLost(fns)
	for _, stop := range hooks {
		stop()
	}
	h.stopWatchTimer()
	stopWatching(unwatch) // before the delete: its own notification finds no one
	if !wasLost {
		h.report(observe.Released, func(ev *observe.RecipeEvent) { ev.Held = time.Since(h.granted) })
	}
	h.mu.Lock()
	h.endContextLocked(ErrReleased)
	h.mu.Unlock()
	// Without a bound on the wait, the first try may as well run here.
	d := zkdelete.Start(ctx.Done() == nil, h.sess, recipe, ep, h.guard, h.nodes, attached, h.mark)
	if wasLost {
		return fmt.Errorf("%w: hold on %s was lost before release", ErrLost, h.nodes[0])
	}
	select {
	case <-d.Done():
		if err := d.Err(); err != nil {
			return fmt.Errorf("releasing %s: %w", h.nodes[0], err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("release of %s not confirmed (it goes on in the background): %w", h.nodes[0], ctx.Err())
	}
}

// Attached is a node a hold attached to itself (Attach): a node of the
// hold's session with a fixed name another client may take once it is gone
// (a semaphore's slot claim), and the data it was created with, which names
// what it is attached to. Its identity is its path, its owner (the hold's
// session) and its data: the hold deletes it only while all three match.
type Attached struct {
	Path string
	Data []byte
}

// Attach adds nodes of h's session that go with the hold. Every end of the
// hold removes them as soon as its session can: its release deletes them
// in the same multi-op as its own nodes (or, if one of those is gone
// already, each while it is still the hold's: owned by its session, with
// its data); a loss while the session lives (its node deleted from outside,
// revoked, a connection lost under StopOnDisconnect) deletes them the same
// way at once; with the session they go anyway. They are not among Nodes,
// and neither the fence nor the token looks at them. Attach returns
// ErrNotHeld once the hold is released or lost (the caller deletes them
// itself).
func (h *Hold) Attach(nodes ...Attached) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released || h.state == lost {
		return fmt.Errorf("%w: hold on %s has ended", ErrNotHeld, h.nodes[0])
	}
	for _, n := range nodes {
		h.attached = append(h.attached, zkdelete.Node{Path: n.Path, Data: n.Data})
	}
	return nil
}
