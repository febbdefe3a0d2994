package handover

// A handover's preparation in the fair layout (issue 38): the successor
// chosen, and the way to it cleared while the leader still leads (see
// docs/handover.md, "Fair layout").

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// lineCands lists the line with each candidate's data, in line order.
func (h *Handovers) lineCands(ctx context.Context) ([]Cand, error) {
	cfg := h.cfg()
	var out []Cand
	err := cfg.Sess.Do(ctx, func(ep *session.Epoch) error {
		out = out[:0]
		names, err := h.of.Line().List(ep)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, n := range names {
			data, st, err := ep.Conn().Get(cfg.Path + "/" + n.Name)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return err
			}
			out = append(out, h.cand(n.Name, cfg.Path+"/"+n.Name, n.Seq, n.Shepherd(), st, data))
		}
		return nil
	})
	if err != nil {
		return nil, err // op may still run: do not read out
	}
	return out, nil
}

// pick is the index in cs (the other candidates, in order) of t's
// successor: the one it names, or the best (highest priority, then the
// first), above this candidate's priority if t.above; -1 if none.
func (h *Handovers) pick(cs []Cand, t target) int {
	best := -1
	for i, c := range cs {
		switch {
		case t.node != "":
			if c.Name == t.node {
				return i
			}
		case t.id != "":
			if c.ID == t.id {
				return i
			}
		case t.above && c.Priority <= h.cfg().Priority:
		case best < 0 || c.Priority > cs[best].Priority:
			best = i
		}
	}
	return best
}

// noCandidate is ErrNoCandidate for t.
func (h *Handovers) noCandidate(t target) error {
	cfg := h.cfg()
	switch {
	case t.node != "":
		return fmt.Errorf("%w: %s is not in line", cfg.Errors.NoCandidate, t.node)
	case t.id != "":
		return fmt.Errorf("%w: no candidate %q in line", cfg.Errors.NoCandidate, t.id)
	case t.above:
		return fmt.Errorf("%w: none of higher priority", cfg.Errors.NoCandidate)
	}
	return fmt.Errorf("%w: no other candidate in line", cfg.Errors.NoCandidate)
}

// prepareFair prepares a handover of l in the fair layout: the successor
// is behind l; every candidate between them must be shepherd's (else the
// handover is refused) and steps aside once the record is there; l waits
// until none is left between (bounded), then attaches the record to its
// hold, so that the release deleting its node deletes the record with it.
func (h *Handovers) prepareFair(ctx context.Context, l *Leadership, t target, reason string) (*plan, error) {
	cfg := h.cfg()
	cs, err := h.lineCands(ctx)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 || cs[0].Name != l.name() {
		return nil, fmt.Errorf("election %s: %w: another candidate heads the line: %w", cfg.Path, cfg.Errors.NotLeader, session.ErrLost)
	}
	others := cs[1:]
	j := h.pick(others, t)
	if j < 0 {
		return nil, h.noCandidate(t)
	}
	p := &plan{reason: reason, succ: others[j], began: time.Now()}
	between := others[:j]
	for _, c := range between {
		if !c.Shepherd {
			n, _ := line.ParseName(c.Name)
			return nil, fmt.Errorf("%w: %s (%q, %s) stands in line between the leader and %q and cannot be asked to step aside "+
				"(Resign hands leadership over in line order)", cfg.Errors.Refused, c.Name, c.ID, line.Library(n.Kind), p.succ.ID)
		}
	}
	if len(between) == 0 {
		return p, nil // the successor is next: the release alone hands over
	}
	if t.record == nil {
		if err := h.makeRecord(ctx, l, p); err != nil {
			return nil, err
		}
	}
	if err := h.awaitWay(ctx, l, p); err != nil {
		h.dropRecord(p)
		return nil, err
	}
	if p.rec != "" {
		if err := l.Hold.Attach(hold.Attached{Path: p.rec, Data: p.recData}); err != nil {
			h.dropRecord(p)
			return nil, l.Of.Ended()
		}
	}
	return p, nil
}

// makeRecord creates p's record (ephemeral, in l's session), with more
// ops if any, as one fenced write: only while l holds. A pending record
// refuses the handover.
func (h *Handovers) makeRecord(ctx context.Context, l *Leadership, p *plan, more ...fence.Op) error {
	cfg := h.cfg()
	rp := recordPath(cfg.Path)
	data := encodeRecord(recordJSON{To: p.succ.Name, ID: p.succ.ID, By: cfg.ID, Reason: p.reason})
	ops := append([]fence.Op{fence.Raw(&zk.CreateRequest{Path: rp, Data: data, Acl: cfg.Sess.ACL(), Flags: zk.FlagEphemeral})}, more...)
	_, err := l.Of.Fenced(ctx, ops...)
	switch {
	case errors.Is(err, zk.ErrNodeExists):
		if req, perr := Pending(ctx, cfg.Sess, cfg.Path); perr == nil && req != nil {
			return fmt.Errorf("%w: a handover is pending at %s (to %q, by %s)", cfg.Errors.Refused, cfg.Path, req.ID, req.By)
		}
		return fmt.Errorf("%w: a handover is pending at %s", cfg.Errors.Refused, cfg.Path)
	case err != nil:
		return err
	}
	p.rec, p.recData = rp, data
	return nil
}

// awaitWay waits until no candidate is left between l's node and p's
// successor in line, and the successor says it is ready (it watches l's
// node: see OnWatch), bounded by the handover timeout: nil, or why not
// (ErrHandOverRefused naming those left, ErrNoCandidate when the successor
// left, an error matching ErrLost when l ended, ctx's error). A successor
// that does not say it is ready within a tenth of the timeout once the way
// is clear (it cannot write the record, or is slow, or gone) is handed
// over to all the same: it then looks at the line once more.
func (h *Handovers) awaitWay(ctx context.Context, l *Leadership, p *plan) error {
	tctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	var left []string // the candidates still between, when last listed
	var clear time.Time
	for {
		ep, err := h.cfg().Sess.Wait(tctx)
		if err != nil {
			return h.wayErr(ctx, l, p, left)
		}
		names, changed, err := h.listLine(tctx, ep)
		if err != nil {
			if tctx.Err() != nil || !session.OutcomeUnknown(err) {
				return h.wayErr(ctx, l, p, left)
			}
			continue // the connection went: list again once it is back
		}
		i, j := line.Index(names, l.name()), line.Index(names, p.succ.Name)
		var ready <-chan struct{}
		var acked <-chan time.Time
		switch {
		case i < 0:
			return l.Of.Ended()
		case j < 0:
			return fmt.Errorf("%w: %q (%s) left the line", h.cfg().Errors.NoCandidate, p.succ.ID, p.succ.Name)
		case j == i+1:
			if clear.IsZero() {
				clear = time.Now()
			}
			var done bool
			if done, ready, acked = h.successorReady(tctx, p, clear); done {
				return nil
			}
		default:
			left = left[:0]
			for _, n := range names[i+1 : j] {
				left = append(left, n.Name)
			}
		}
		select {
		case <-changed:
		case <-ready:
		case <-acked:
		case <-ep.Done():
		case <-l.Ctx.Done():
			return l.Of.Ended()
		case <-tctx.Done():
			return h.wayErr(ctx, l, p, left)
		}
	}
}

// listLine lists the election's line in ep, in line order, with a watch
// on its children.
func (h *Handovers) listLine(ctx context.Context, ep *session.Epoch) ([]line.Name, <-chan zk.Event, error) {
	type listed struct {
		names []string
		ch    <-chan zk.Event
	}
	r, err := epcall.Call(ctx, ep, func(c *zk.Conn) (listed, error) {
		names, _, ch, err := c.ChildrenW(h.cfg().Path)
		return listed{names, ch}, err
	}, nil)
	if err != nil {
		return nil, nil, err
	}
	return line.Sort(r.names, h.cfg().Names.Kind(recipe.KindLatch)), r.ch, nil
}

// successorReady is awaitWay's step once p's successor is next in line
// (since clear): done when the successor said it is ready, or the record
// is not this handover's, or a tenth of the handover timeout has passed
// since clear; otherwise the channels to wait on (the record's change, the
// rest of that tenth).
func (h *Handovers) successorReady(ctx context.Context, p *plan, clear time.Time) (done bool, ready <-chan struct{}, acked <-chan time.Time) {
	rec, ch, err := h.recs().look(ctx)
	wait := time.Until(clear.Add(h.timeout() / 10))
	// No record may be the watch not caught up yet with the one just
	// made: wait for it, bounded as the rest.
	if err != nil || (rec != nil && (rec.To != p.succ.Name || rec.Ready)) || wait <= 0 {
		return true, nil, nil
	}
	return false, ch, time.After(wait) // bounded: a tenth of the timeout
}

// wayErr is why awaitWay gave up: ctx's error, l's end, or the timeout
// (ErrHandOverRefused, naming the candidates that did not step aside).
func (h *Handovers) wayErr(ctx context.Context, l *Leadership, p *plan, left []string) error {
	switch {
	case l.Ctx.Err() != nil:
		return l.Of.Ended()
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("%w: %d candidate(s) between the leader and %q did not step aside within %v (%s): "+
		"cut off, or of a shepherd version without handovers", h.cfg().Errors.Refused, len(left), p.succ.ID,
		h.timeout(), strings.Join(left, ", "))
}

// dropRecord removes p's record, if this candidate made it and it is still
// there (best effort: it goes with the session anyway).
func (h *Handovers) dropRecord(p *plan) {
	if p == nil || p.rec == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg().Sess.Timeout())
	defer cancel()
	ep, err := h.cfg().Sess.Wait(ctx)
	if err != nil {
		return
	}
	_ = epcall.Exec(ctx, ep, func(c *zk.Conn) error {
		ok, st, err := c.Exists(p.rec)
		if err != nil || !ok || st.EphemeralOwner != ep.SessionID() {
			return err
		}
		return c.Delete(p.rec, st.Version)
	})
}
