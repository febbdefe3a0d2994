package handover

// What a leader watches while it leads (issue 38): the election's record,
// for an operator's request (shepherd handover) or a finished handover to
// it, and, with WithPreferredLeader, the other candidates (yield.go).

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/epcall"
)

// Watch starts l's watches; they end with l. The record's costs no
// goroutine while nothing changes: a change of the record (or the end of
// the epoch its watch was set in) starts one, which reads it and acts. It
// follows the record until the candidate's next leadership replaces it.
func (h *Handovers) Watch(l *Leadership) {
	h.records.setFollower(func() { h.checkRecord(l) })
	h.checkRecord(l)
	if h.cfg.Policy.YieldWindow > 0 {
		go h.yieldLoop(l)
	}
}

// checkRecord reads the election's record while l leads, and acts on it,
// on a goroutine of its own: one at a time (a change meanwhile makes it
// read again).
func (h *Handovers) checkRecord(l *Leadership) {
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
			if rec, err := h.records.peek(l.Ctx); err == nil && rec != nil {
				h.onRecord(l, rec)
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

// ownName is the name the records use for this candidate, relative to the
// path: its line node, or its registration (non-fair).
func (h *Handovers) ownName(l *Leadership) string {
	if h.cfg.Fair {
		return l.Name
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
	ctx, cancel := context.WithTimeout(l.Ctx, h.cfg.Sess.Timeout())
	defer cancel()
	ep, err := h.cfg.Sess.Wait(ctx)
	if err != nil {
		return
	}
	_ = epcall.Exec(ctx, ep, func(c *zk.Conn) error {
		ok, st, err := c.Exists(recordPath(h.cfg.Path))
		if err != nil || !ok || st.Czxid != rec.czxid {
			return err
		}
		return c.Delete(recordPath(h.cfg.Path), st.Version)
	})
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
