package handover

// What a leader watches while it leads (issue 38): its own node, for an
// operator's request (shepherd handover) or a finished handover to it, and,
// with WithPreferredLeader, the other candidates (yield.go).

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/session"
)

// An operator's request writes the leader's node again in the multi-op
// that makes the record (see MakeRequest), so a leader needs no watch of
// the record: its hold's own-node watch reads the node after each change
// (and once, 10 ms into the leadership), and the election calls
// CheckRecord then (hold.Hold.OnNodeRead). A leader thus keeps one server
// watch, its node's, no goroutine while nothing changes, and no handover
// state until a record is found.

// WatchYield starts l's watch of the other candidates, for a yield
// (WithPreferredLeader: a policy with a yield window); it ends with l.
func (h *Handovers) WatchYield(l *Leadership) {
	if h.cfg().Policy.YieldWindow > 0 {
		go h.yieldLoop(l)
	}
}

// CheckRecord reads the record of the election at path (full) while l
// leads, and acts on it, on a goroutine of its own: one at a time (a
// change meanwhile makes it read again). made is the candidate's handover
// state if made yet (nil: none; its watch of the record, when armed,
// answers with no request), get makes it: only a record found needs it.
func CheckRecord(l *Leadership, sess *session.Session, path string, made *Handovers, get func() *Handovers) {
	if l.Ctx.Err() != nil {
		return // a leadership before the current one, or ended
	}
	l.checks.Lock()
	if l.checking {
		l.recheck = true
		l.checks.Unlock()
		return
	}
	l.checking = true
	l.checks.Unlock()
	go func() {
		for {
			// Bounded by the session's timeout, not l.Ctx: asking a context
			// for its Done channel makes one, kept as long as the
			// leadership (a leader that nobody asks costs less).
			ctx, cancel := context.WithTimeout(context.Background(), sess.Timeout())
			rec, err := currentRecord(ctx, sess, path, made)
			cancel()
			if err == nil && rec != nil && l.Ctx.Err() == nil {
				get().onRecord(l, rec)
			}
			l.checks.Lock()
			if !l.recheck || l.Ctx.Err() != nil {
				l.checking = false
				l.checks.Unlock()
				return
			}
			l.recheck = false
			l.checks.Unlock()
		}
	}()
}

// currentRecord is the record of the election at path (nil when there is
// none, or it is not one): as the candidate's watch of it knows it, if
// its handover state is made (made) and that watch is armed in the current
// epoch (a candidate that waited in line), else read, without a watch.
func currentRecord(ctx context.Context, sess *session.Session, path string, made *Handovers) (*record, error) {
	ep, err := sess.Wait(ctx)
	if err != nil {
		return nil, err
	}
	if made != nil {
		if w := made.records.Load(); w != nil {
			if rec, ok := w.knownIn(ep); ok {
				return rec, nil
			}
		}
	}
	return epcall.Call(ctx, ep, func(c *zk.Conn) (*record, error) { return getRecord(c, recordPath(path)) }, nil)
}

// ownName is the name the records use for this candidate, relative to the
// path: its line node, or its registration (non-fair).
func (h *Handovers) ownName(l *Leadership) string {
	if h.cfg().Fair {
		return l.name()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.reg == nil {
		return ""
	}
	return h.reg.name
}

// onRecord acts on rec, seen while l leads: a record naming this leader
// is one whose handover is done (an operator's is removed); one of
// another session naming another candidate is an operator's request, which
// l carries out as a handover (once per record).
func (h *Handovers) onRecord(l *Leadership, rec *record) {
	if rec.To == h.ownName(l) {
		if rec.owner != l.Hold.SessionID() {
			h.removeRecord(l, rec)
		}
		return
	}
	if rec.owner == l.Hold.SessionID() {
		return // this session's own handover, under way
	}
	h.mu.Lock()
	tried := h.tried == rec.czxid
	h.tried = rec.czxid
	h.mu.Unlock()
	if tried {
		return
	}
	// An operator's request: the handover is bounded as any (its waits by
	// the handover timeout), not by l.
	ctx, cancel := context.WithTimeout(context.Background(), 2*h.timeout())
	defer cancel()
	_ = h.handOver(ctx, l, target{node: rec.To, record: rec}, reasonOperator)
}

// removeRecord removes rec, whose handover is done, if it is still that
// record (its version; best effort).
func (h *Handovers) removeRecord(l *Leadership, rec *record) {
	cfg := h.cfg()
	ctx, cancel := context.WithTimeout(l.Ctx, cfg.Sess.Timeout())
	defer cancel()
	ep, err := cfg.Sess.Wait(ctx)
	if err != nil {
		return
	}
	_ = epcall.Exec(ctx, ep, func(c *zk.Conn) error {
		ok, st, err := c.Exists(recordPath(cfg.Path))
		if err != nil || !ok || st.Czxid != rec.czxid {
			return err
		}
		return c.Delete(recordPath(cfg.Path), st.Version)
	})
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
