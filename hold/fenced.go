package hold

import (
	"context"
	"errors"
	"fmt"

	"github.com/shepherdzk/shepherd/internal/epcall"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/session"
)

// What a hold asks the server: its token, fenced writes, validation.

// Token returns the fencing token. When the grant revealed it (the
// single-node race of a non-fair mutex or election, whose grant reads the
// node's Stat; a fair election's term, read while waiting) it costs nothing.
// Otherwise (a fair mutex's or read-write lock's node, a lease: a create's
// answer carries no Stat) it is read by the hold's watch on its own node,
// whose first read (a GetW of the node, which every hold that lasts 10 ms
// makes anyway) returns the node's Stat: the first call starts that watch at
// once if it has not started, and waits for its read, sending no request of
// its own; the token is kept, and later calls, and concurrent ones, cost
// nothing. (Only if that read did not reveal it, the hold's connection lost
// in between, does Token read the node itself, once the hold is valid
// again.) A token not yet read cannot be read once the hold has ended: the
// call then fails with ErrLost; while the hold is paused, it waits at the
// gate (see Gate).
func (h *Hold) Token(ctx context.Context) (Token, error) {
	if t := h.knownToken(); t != 0 {
		return t, nil
	}
	// The hold's own-node watch reads the node's Stat first thing: start
	// it now, and wait for that read rather than make another (concurrent
	// callers wait for the same one).
	h.watchOwnNodes()
	h.mu.Lock()
	first := chanLocked(&h.firstRead)
	h.mu.Unlock()
	select {
	case <-first:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if t := h.knownToken(); t != 0 {
		return t, nil
	}
	ep, err := h.gate(ctx)
	if err != nil {
		return 0, err
	}
	st, err := h.stat(ctx, ep)
	if err != nil {
		return 0, h.lostOr(err, "reading the token")
	}
	if st == nil || st.EphemeralOwner != h.sid {
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
//     Race): the node exists, and the path's version is still the one
//     this grant wrote, so no grant was made since (the node's name is
//     reused by every grant; the version tells the grants apart).
//
// ops are fence's: fence.Set, fence.Create and fence.Delete (paths in the
// session's namespace) and fence.Raw (go-zookeeper's requests: full paths),
// mixed as needed; fence.Requests makes the requests sent.
//
// While the hold is paused, the write waits at the gate (see Gate) until
// the hold resumes (then it is sent), is lost (ErrLost), or ctx ends: it
// never goes out on a session that may be gone. When the write's outcome is
// unknown because the connection was lost while it was in flight, the error
// matches ErrLost (StopOnDisconnect: the hold ended with the connection) or
// ErrPaused (PauseOnDisconnect: the hold is paused); had the write landed,
// it landed while the fence held. The responses returned are those of ops,
// in order (the fence's are dropped): a Set's Stat holds the node's new
// version, a Create's String the created path. When one of ops fails on its
// own, none lands, and the error is that op's (fence.ErrBadVersion,
// fence.ErrNodeExists, fence.ErrNoNode). A hold that has ended (lost or
// released) refuses with ErrLost; a nil op, or a Set's, Create's or
// Delete's invalid path, with fence.ErrInvalidPath: nothing is sent.
func (h *Hold) Fenced(ctx context.Context, ops ...fence.Op) ([]zk.MultiResponse, error) {
	if h.ctx.Err() != nil {
		return nil, fmt.Errorf("%w: fenced write refused, the hold on %s has ended", ErrLost, h.nodes[0])
	}
	reqs, err := fence.Requests(h.sess, ops)
	if err != nil {
		return nil, err
	}
	// The fence's checks, first: the guard (if any), then our node.
	all := make([]any, 0, 2+len(reqs))
	if h.guard != nil {
		all = append(all, h.guard)
	}
	all = append(all, &zk.CheckVersionRequest{Path: h.nodes[0], Version: -1})
	k := len(all)
	all = append(all, reqs...)
	ep, err := h.gate(ctx)
	if err != nil {
		return nil, fmt.Errorf("fenced write not sent: %w", err)
	}
	type multi struct {
		res []zk.MultiResponse
		err error
	}
	// A write the caller gave up on may still land (while the hold is
	// valid): it cannot be undone, as it is the caller's.
	m, err := epcall.Call(ctx, ep, func(c *zk.Conn) (multi, error) {
		res, err := c.Multi(all...)
		return multi{res, err}, nil
	}, nil)
	if err != nil {
		return nil, h.lostOr(err, "fenced write")
	}
	res, err := m.res, m.err
	for i := 0; i < k && i < len(res); i++ {
		if errors.Is(res[i].Error, zk.ErrNoNode) || errors.Is(res[i].Error, zk.ErrBadVersion) {
			return nil, fmt.Errorf("%w: fenced write refused, the hold on %s is gone", ErrLost, h.nodes[0])
		}
	}
	if len(res) < k {
		// No answer per op: the request itself failed.
		return nil, h.lostOr(err, "fenced write")
	}
	return res[k:], opError(all[k:], res[k:], err)
}

// opError names the op of a fenced write that failed on its own (the
// first with an error), and for a missing node the fix, keeping err's
// sentinel for errors.Is.
func opError(ops []any, res []zk.MultiResponse, err error) error {
	if err == nil {
		return nil
	}
	if e := aclerr.MapMulti(ops, res, err); e != err {
		return fmt.Errorf("fenced write: %w", e)
	}
	for i, r := range res {
		if r.Error == nil || i >= len(ops) {
			continue
		}
		var p string
		switch o := ops[i].(type) {
		case *zk.SetDataRequest:
			p = "setting " + o.Path
		case *zk.CreateRequest:
			p = "creating " + o.Path
		case *zk.DeleteRequest:
			p = "deleting " + o.Path
		case *zk.CheckVersionRequest:
			p = "checking " + o.Path
		}
		hint := ""
		if errors.Is(r.Error, zk.ErrNoNode) {
			hint = " (create the node, or a Create's parent, once with fence.Ensure)"
		}
		return fmt.Errorf("fenced write: %s: %w%s", p, r.Error, hint)
	}
	return err
}

// Validate asks the server (after a sync, so the answer is current) whether
// the hold's node still exists and belongs to this session. Use it before a
// critical step; between checks, watch Lost (and Paused). While the hold is
// paused it waits at the gate (see Gate).
func (h *Hold) Validate(ctx context.Context) error {
	ep, err := h.gate(ctx)
	if err != nil {
		return err
	}
	st, err := epcall.Call(ctx, ep, func(c *zk.Conn) (*zk.Stat, error) {
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
	if st == nil || st.EphemeralOwner != h.sid || h.ctx.Err() != nil {
		return fmt.Errorf("%w: node %s is gone", ErrLost, h.nodes[0])
	}
	return nil
}

// lostOr returns err, or an error matching both ErrLost and err when err
// means the hold cannot be valid any more: the connection failed under
// StopOnDisconnect (which ends the epoch, and so the hold), the session
// expired or the manager closed, or the hold was lost meanwhile. Under
// PauseOnDisconnect a failed connection pauses the hold: the error then
// matches ErrPaused and err.
func (h *Hold) lostOr(err error, what string) error {
	if err == nil || errors.Is(err, ErrLost) {
		return err
	}
	switch {
	case errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, ErrClosed) || h.ctx.Err() != nil:
	case h.pauses && session.OutcomeUnknown(err):
		return fmt.Errorf("%w: %s on %s: %w", ErrPaused, what, h.nodes[0], err)
	case !session.OutcomeUnknown(err):
		return err
	}
	return fmt.Errorf("%w: %s on %s: %w", ErrLost, what, h.nodes[0], err)
}

// stat reads the Stat of the hold's node in ep (nil: there is none).
func (h *Hold) stat(ctx context.Context, ep *session.Epoch) (*zk.Stat, error) {
	return epcall.Call(ctx, ep, func(c *zk.Conn) (*zk.Stat, error) {
		ok, st, err := c.Exists(h.nodes[0])
		if err == nil && !ok {
			st = nil
		}
		return st, err
	}, nil)
}
