package recipe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/session"
)

// Token is a hold's fencing token: the creation zxid of the holder's node. It
// grows with every grant across the whole ensemble.
type Token int64

func (t Token) String() string { return fmt.Sprintf("0x%x", int64(t)) }

// Hold is one granted lock, lease or leadership, bound to the epoch that
// granted it. It has two end signals, with one meaning on every hold:
//
//   - Lost() is closed when the hold is, or may be, lost: its epoch ended
//     (the connection dropped, the session was lost, the manager closed)
//     before it was released. It is never closed by the holder's own
//     Release: a select on Lost tells a loss from a release.
//   - Context() ends when the hold ends for any reason, loss or Release:
//     pass it to the work the hold protects.
type Hold struct {
	sess    *session.Session
	ep      *session.Epoch
	nodes   []string // our nodes (the first is the one the token is read from)
	ctx     context.Context
	cancel  context.CancelFunc
	granted time.Time

	// lost is closed when the epoch ends before the release (stopLost
	// unhooks it at the release); onLost run then (under mu: lostFired).
	lost      chan struct{}
	stopLost  func() bool
	lostFired bool
	onLost    []func()
	// tokenTurn serialises the token's read: once per hold.
	tokenTurn chan struct{}

	// fence: the checks a fenced write makes (prepended to its ops).
	fence []any
	// guard, if not nil, is the check a release's delete is made under: a
	// node with a fixed name may be someone else's by the time a retried
	// delete reaches the server.
	guard *zk.CheckVersionRequest

	mu       sync.Mutex
	token    Token
	closed   bool
	recipe   string // for the observer
	path     string
	observed bool
}

// NewHold grants a hold on nodes (created by ep's session, in this line or
// beside it) within ep. token is the creation zxid of nodes[0] if known, else
// 0 (then read once, when first asked). Its fence is the existence of
// nodes[0]; its release deletes nodes unguarded (their names are never
// reused: sequential nodes). Its events carry the line's Recipe.
func (l *Line) NewHold(ep *session.Epoch, token Token, nodes ...string) *Hold {
	return newHold(l.Sess, l.Recipe, ep, token, nodes...)
}

func newHold(sess *session.Session, recipe string, ep *session.Epoch, token Token, nodes ...string) *Hold {
	ctx, cancel := context.WithCancel(ep.Context())
	h := &Hold{sess: sess, ep: ep, nodes: nodes, ctx: ctx, cancel: cancel, token: token, recipe: recipe,
		granted: time.Now(), fence: []any{&zk.CheckVersionRequest{Path: nodes[0], Version: -1}},
		lost: make(chan struct{}), tokenTurn: make(chan struct{}, 1)}
	// The epoch's end closes lost unless the release came first, on the
	// goroutine that ends the epoch (go-zookeeper's event callback, or the
	// session's silence watchdog), like the hold's ctx, a child of the
	// epoch's: no hop through a goroutine or a queue.
	h.stopLost = ep.OnEnd(h.fireLost)
	return h
}

// fireLost closes lost and starts what waits for it (once: from the epoch's
// hook, or from Release when the hook was unhooked after the epoch ended). It
// runs on the goroutine that ends the epoch, which must not block: the
// observers (a log, the session's observer) run on a goroutine of their own.
func (h *Hold) fireLost() {
	h.mu.Lock()
	h.lostFired = true
	fns := h.onLost
	h.onLost = nil
	h.mu.Unlock()
	close(h.lost)
	if len(fns) > 0 {
		go func() {
			for _, f := range fns {
				f()
			}
		}()
	}
}

// whenLost runs f once the hold is lost (at once if it was), never if it is
// released first.
func (h *Hold) whenLost(f func()) {
	h.mu.Lock()
	if !h.lostFired {
		h.onLost = append(h.onLost, f)
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	f()
}

// Observe reports the grant to the session's observer (recipe is "mutex",
// "semaphore", ...; wait is how long the acquisition took; position the place
// in line it joined at), and from then on the hold's release or loss.
func (h *Hold) Observe(recipe, path string, wait time.Duration, position int) {
	log := h.sess.Logger()
	if log.Enabled(context.Background(), slog.LevelDebug) {
		log.Debug(recipe+": acquired", "path", path, "node", h.nodes[0], "session", fmt.Sprintf("0x%x", h.ep.SessionID()),
			"wait", wait, "position", position)
	}
	if log.Enabled(context.Background(), slog.LevelWarn) {
		h.whenLost(func() {
			log.Warn(recipe+": hold lost (connection or session lost)", "path", path, "node", h.nodes[0],
				"session", fmt.Sprintf("0x%x", h.ep.SessionID()), "held", time.Since(h.granted))
		})
	}
	if !h.sess.Observed() {
		return
	}
	h.mu.Lock()
	h.recipe, h.path, h.observed = recipe, path, true
	h.mu.Unlock()
	h.report(session.Acquired, func(ev *session.RecipeEvent) { ev.Wait, ev.Position = wait, position })
	h.whenLost(func() {
		h.report(session.HoldLost, func(ev *session.RecipeEvent) { ev.Held = time.Since(h.granted) })
	})
}

func (h *Hold) report(kind session.RecipeEventKind, set func(*session.RecipeEvent)) {
	h.mu.Lock()
	observed, recipe, path := h.observed, h.recipe, h.path
	h.mu.Unlock()
	if !observed {
		return
	}
	ev := session.RecipeEvent{Kind: kind, Recipe: recipe, Path: path, SessionID: h.ep.SessionID()}
	set(&ev)
	h.sess.Report(ev)
}

// Lost is closed when the hold is, or may be, lost: the connection dropped
// (Suspended), the session was lost, or the session manager closed, before
// the hold was released. It is closed before any other client can be granted
// the hold. Release never closes it: after a Release it stays open for good.
func (h *Hold) Lost() <-chan struct{} { return h.lost }

// Context ends when the hold ends for any reason: it may be lost (as Lost)
// or it was released. Pass it to the work the hold protects.
func (h *Hold) Context() context.Context { return h.ctx }

// Node is the path of the hold's node.
func (h *Hold) Node() string { return h.nodes[0] }

// Nodes are the paths of all the hold's nodes.
func (h *Hold) Nodes() []string { return append([]string(nil), h.nodes...) }

// SessionID is the session the hold belongs to.
func (h *Hold) SessionID() int64 { return h.ep.SessionID() }

// Granted is when the hold was granted.
func (h *Hold) Granted() time.Time { return h.granted }

// Valid reports whether the hold has not been lost or released (locally: see
// Validate for a check with the server).
func (h *Hold) Valid() bool { return h.ctx.Err() == nil }

// Token returns the fencing token. When the grant revealed it (the
// single-node race of a non-fair mutex or election, whose grant reads the
// node's Stat; a fair election's term, read while waiting) it costs nothing.
// Otherwise (a fair mutex's or read-write lock's node, a lease: a create's
// answer carries no Stat) the first call reads it with one request (an
// Exists of the hold's node) and keeps it: later calls, and concurrent ones,
// cost nothing more, and a hold whose token is never asked for never pays
// for it. A token not yet read cannot be read once the hold has ended: the
// call then fails with ErrLost.
func (h *Hold) Token(ctx context.Context) (Token, error) {
	if t := h.knownToken(); t != 0 {
		return t, nil
	}
	// One read per hold: concurrent callers wait for it.
	select {
	case h.tokenTurn <- struct{}{}:
		defer func() { <-h.tokenTurn }()
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if t := h.knownToken(); t != 0 {
		return t, nil
	}
	if h.ctx.Err() != nil {
		return 0, fmt.Errorf("%w: hold on %s", ErrLost, h.nodes[0])
	}
	st, err := Call(ctx, h.ep, func(c *zk.Conn) (*zk.Stat, error) {
		ok, st, err := c.Exists(h.nodes[0])
		if err == nil && !ok {
			st = nil
		}
		return st, err
	}, nil)
	if err != nil {
		return 0, h.lostOr(err, "reading the token")
	}
	if st == nil || st.EphemeralOwner != h.ep.SessionID() {
		return 0, fmt.Errorf("%w: node %s is gone", ErrLost, h.nodes[0])
	}
	h.mu.Lock()
	h.token = Token(st.Czxid)
	h.mu.Unlock()
	return Token(st.Czxid), nil
}

func (h *Hold) knownToken() Token {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.token
}

// Fenced runs ops as one multi-op that lands only while the hold is valid on
// the server: the hold's fence (version checks) is prepended to ops. A write
// made after the hold is gone fails with an error matching ErrLost instead of
// landing. What the fence checks depends on the recipe:
//
//   - a hold of the line (fair mutex, read-write lock, fair election) or a
//     lease (semaphore): the hold's node exists (a lease's first node; a
//     lease's nodes come and go together). A node of the line is never
//     re-created under the same name, and it is ephemeral: it exists only
//     while this session lives and has not released it.
//   - a hold of the single-node race (non-fair mutex, non-fair election, see
//     Single): the node exists, and the path's version is still the one
//     this grant wrote, so no grant was made since (the node's name is
//     reused by every grant; the version tells the grants apart).
//
// ops are fence.Op values (fence.Set, fence.Create, fence.Delete: paths in
// the session's namespace) or go-zookeeper's requests (*zk.CreateRequest,
// *zk.SetDataRequest, *zk.DeleteRequest, *zk.CheckVersionRequest: full
// paths), mixed as needed.
//
// When the write's outcome is unknown because the connection was lost while
// it was in flight, the hold is lost too (Suspended ends every hold), and the
// error matches ErrLost: had the write landed, it landed while the fence
// held. The responses returned are those of ops, in order (the fence's are
// dropped): a Set's Stat holds the node's new version, a Create's String the
// created path. When one of ops fails on its own, none lands, and the error
// is that op's (fence.ErrBadVersion, fence.ErrNodeExists, fence.ErrNoNode).
// A hold that has ended (lost or released) refuses with ErrLost.
func (h *Hold) Fenced(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	if h.ctx.Err() != nil {
		return nil, fmt.Errorf("%w: fenced write refused, the hold on %s has ended", ErrLost, h.nodes[0])
	}
	all := append(make([]any, 0, len(h.fence)+len(ops)), h.fence...)
	for _, op := range ops {
		switch o := op.(type) {
		case fence.Op:
			r, err := o.Request(h.sess)
			if err != nil {
				return nil, err
			}
			op = r
		case *fence.Op:
			if o == nil {
				return nil, fmt.Errorf("%w: a nil *fence.Op", ErrInvalidArgument)
			}
			r, err := o.Request(h.sess)
			if err != nil {
				return nil, err
			}
			op = r
		case *zk.CreateRequest, *zk.SetDataRequest, *zk.DeleteRequest, *zk.CheckVersionRequest:
		default:
			return nil, fmt.Errorf("%w: fenced op of type %T (want a fence.Op or a go-zookeeper request)", ErrInvalidArgument, op)
		}
		all = append(all, op)
	}
	type multi struct {
		res []zk.MultiResponse
		err error
	}
	// A write the caller gave up on may still land (while the hold is
	// valid): it cannot be undone, as it is the caller's.
	m, err := Call(ctx, h.ep, func(c *zk.Conn) (multi, error) {
		res, err := c.Multi(all...)
		return multi{res, err}, nil
	}, nil)
	if err != nil {
		return nil, h.lostOr(err, "fenced write")
	}
	res, err := m.res, m.err
	k := len(h.fence)
	for i := 0; i < k && i < len(res); i++ {
		if errors.Is(res[i].Error, zk.ErrNoNode) || errors.Is(res[i].Error, zk.ErrBadVersion) {
			return nil, fmt.Errorf("%w: fenced write refused, the hold on %s is gone", ErrLost, h.nodes[0])
		}
	}
	if len(res) < k {
		// No answer per op: the request itself failed.
		return nil, h.lostOr(err, "fenced write")
	}
	return res[k:], err
}

// Validate asks the server (after a sync, so the answer is current) whether
// the hold's node still exists and belongs to this session. Use it before a
// critical step; between checks, watch Lost.
func (h *Hold) Validate(ctx context.Context) error {
	if h.ctx.Err() != nil {
		return fmt.Errorf("%w: hold on %s", ErrLost, h.nodes[0])
	}
	st, err := Call(ctx, h.ep, func(c *zk.Conn) (*zk.Stat, error) {
		if _, err := c.Sync(h.nodes[0]); err != nil {
			return nil, err
		}
		ok, st, err := c.Exists(h.nodes[0])
		if err == nil && !ok {
			st = nil
		}
		return st, err
	}, nil)
	if err != nil {
		return h.lostOr(err, "validating")
	}
	if st == nil || st.EphemeralOwner != h.ep.SessionID() || h.ctx.Err() != nil {
		return fmt.Errorf("%w: node %s is gone", ErrLost, h.nodes[0])
	}
	return nil
}

// lostOr returns err, or an error matching both ErrLost and err when err
// means the hold cannot be valid any more: the connection failed (which ends
// the epoch, and so the hold), the session expired or the manager closed, or
// the hold was lost meanwhile.
func (h *Hold) lostOr(err error, what string) error {
	if err == nil || errors.Is(err, ErrLost) {
		return err
	}
	if session.OutcomeUnknown(err) || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, ErrClosed) ||
		h.ctx.Err() != nil {
		return fmt.Errorf("%w: %s on %s: %w", ErrLost, what, h.nodes[0], err)
	}
	return err
}

// Release ends the hold, whatever ctx: Context ends at once (Lost stays
// open: a release is no loss) and the delete of
// its nodes starts, and goes on in the background (a guaranteed delete) until
// they are gone or their session is. ctx only bounds how long Release waits
// for the server to confirm the delete: if it cannot within ctx, Release
// returns ctx's error (matched with errors.Is), and the hold is released all
// the same. It returns at once with ErrLost if the hold had been lost before
// (its nodes are deleted once the session is back, or the server removes them
// with the session), and ErrNotHeld if it was released already.
func (h *Hold) Release(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrNotHeld
	}
	h.closed = true
	h.mu.Unlock()
	// Unhook Lost from the epoch first. If the epoch ended before, the hold
	// was lost: Lost closes (by the hook if it had started, else here).
	unhooked := h.stopLost()
	lost := !unhooked || h.ep.Context().Err() != nil
	if lost && unhooked {
		h.fireLost()
	}
	if !lost {
		h.report(session.Released, func(ev *session.RecipeEvent) { ev.Held = time.Since(h.granted) })
	}
	h.cancel()
	// Without a bound on the wait, the first try may as well run here.
	h.mu.Lock()
	recipe := h.recipe
	h.mu.Unlock()
	d := startDelete(ctx.Done() == nil, h.sess, recipe, h.ep, h.guard, h.nodes)
	if lost {
		return fmt.Errorf("%w: hold on %s was lost before release", ErrLost, h.nodes[0])
	}
	select {
	case <-d.done:
		if d.err != nil {
			return fmt.Errorf("releasing %s: %w", h.nodes[0], d.err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("release of %s not confirmed (it goes on in the background): %w", h.nodes[0], ctx.Err())
	}
}
