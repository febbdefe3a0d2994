package election

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
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// cand is a candidate as a handover sees it.
type cand struct {
	Participant
	// name is its node, relative to the election's path (a line node's
	// name, or "candidates/c-<guid>" in the non-fair registry).
	name string
	// shepherd: a node of shepherd's, which steps aside when asked (see
	// line.Name.Shepherd); another library's does not.
	shepherd bool
}

// lineCands lists the line with each candidate's data, in line order.
func (e *Election) lineCands(ctx context.Context) ([]cand, error) {
	var out []cand
	err := e.sess.Do(ctx, func(ep *session.Epoch) error {
		out = out[:0]
		names, err := e.line().List(ep)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, n := range names {
			data, st, err := ep.Conn().Get(e.path + "/" + n.Name)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return err
			}
			out = append(out, cand{Participant: participantOf(e.path+"/"+n.Name, n.Seq, st, data),
				name: n.Name, shepherd: n.Shepherd()})
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
func (e *Election) pick(cs []cand, t target) int {
	best := -1
	for i, c := range cs {
		switch {
		case t.node != "":
			if c.name == t.node {
				return i
			}
		case t.id != "":
			if c.ID == t.id {
				return i
			}
		case t.above && c.Priority <= e.ext.priority:
		case best < 0 || c.Priority > cs[best].Priority:
			best = i
		}
	}
	return best
}

// noCandidate is ErrNoCandidate for t.
func noCandidate(t target) error {
	switch {
	case t.node != "":
		return fmt.Errorf("%w: %s is not in line", ErrNoCandidate, t.node)
	case t.id != "":
		return fmt.Errorf("%w: no candidate %q in line", ErrNoCandidate, t.id)
	case t.above:
		return fmt.Errorf("%w: none of higher priority", ErrNoCandidate)
	}
	return fmt.Errorf("%w: no other candidate in line", ErrNoCandidate)
}

// prepareFair prepares a handover of l in the fair layout: the successor
// is behind l; every candidate between them must be shepherd's (else the
// handover is refused) and steps aside once the record is there; l waits
// until none is left between (bounded), then attaches the record to its
// hold, so that the release deleting its node deletes the record with it.
func (e *Election) prepareFair(ctx context.Context, l *Leadership, t target, reason string) (*plan, error) {
	cs, err := e.lineCands(ctx)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 || cs[0].name != l.node.name {
		return nil, fmt.Errorf("election %s: %w: another candidate heads the line: %w", e.path, ErrNotLeader, ErrLost)
	}
	others := cs[1:]
	j := e.pick(others, t)
	if j < 0 {
		return nil, noCandidate(t)
	}
	p := &plan{reason: reason, succ: others[j], began: time.Now()}
	between := others[:j]
	for _, c := range between {
		if !c.shepherd {
			n, _ := line.ParseName(c.name)
			return nil, fmt.Errorf("%w: %s (%q, %s) stands in line between the leader and %q and cannot be asked to step aside "+
				"(Resign hands leadership over in line order)", ErrHandOverRefused, c.name, c.ID, line.Library(n.Kind), p.succ.ID)
		}
	}
	if len(between) == 0 {
		return p, nil // the successor is next: the release alone hands over
	}
	if t.record == nil {
		if err := e.makeRecord(ctx, l, p); err != nil {
			return nil, err
		}
	}
	if err := e.awaitWay(ctx, l, p); err != nil {
		e.dropRecord(p)
		return nil, err
	}
	if p.rec != "" {
		if err := l.hold.Attach(hold.Attached{Path: p.rec, Data: p.recData}); err != nil {
			e.dropRecord(p)
			return nil, l.ended()
		}
	}
	return p, nil
}

// makeRecord creates p's record (ephemeral, in l's session), with more
// ops if any, as one fenced write: only while l holds. A pending record
// refuses the handover.
func (e *Election) makeRecord(ctx context.Context, l *Leadership, p *plan, more ...fence.Op) error {
	rp := recordPath(e.path)
	data := encodeRecord(recordJSON{To: p.succ.name, ID: p.succ.ID, By: e.id, Reason: p.reason})
	ops := append([]fence.Op{fence.Raw(&zk.CreateRequest{Path: rp, Data: data, Acl: e.sess.ACL(), Flags: zk.FlagEphemeral})}, more...)
	_, err := l.Fenced(ctx, ops...)
	switch {
	case errors.Is(err, zk.ErrNodeExists):
		if req, perr := PendingHandOver(ctx, e.sess, strings.TrimPrefix(e.path, e.sess.Namespace())); perr == nil && req != nil {
			return fmt.Errorf("%w: a handover is pending at %s (to %q, by %s)", ErrHandOverRefused, e.path, req.ID, req.By)
		}
		return fmt.Errorf("%w: a handover is pending at %s", ErrHandOverRefused, e.path)
	case err != nil:
		return err
	}
	p.rec, p.recData = rp, data
	return nil
}

// awaitWay waits until no candidate is left between l's node and p's
// successor in line, and the successor says it is ready (it watches l's
// node: see onWatch), bounded by the handover timeout: nil, or why not
// (ErrHandOverRefused naming those left, ErrNoCandidate when the successor
// left, an error matching ErrLost when l ended, ctx's error). A successor
// that does not say it is ready within a tenth of the timeout once the way
// is clear (it cannot write the record, or is slow, or gone) is handed
// over to all the same: it then looks at the line once more.
func (e *Election) awaitWay(ctx context.Context, l *Leadership, p *plan) error {
	tctx, cancel := context.WithTimeout(ctx, e.handOverTimeout())
	defer cancel()
	var left []string // the candidates still between, when last listed
	var clear time.Time
	for {
		ep, err := e.sess.Wait(tctx)
		if err != nil {
			return e.wayErr(ctx, l, p, left)
		}
		names, changed, err := e.listLine(tctx, ep)
		if err != nil {
			if tctx.Err() != nil || !session.OutcomeUnknown(err) {
				return e.wayErr(ctx, l, p, left)
			}
			continue // the connection went: list again once it is back
		}
		i, j := line.Index(names, l.node.name), line.Index(names, p.succ.name)
		var ready <-chan struct{}
		var acked <-chan time.Time
		switch {
		case i < 0:
			return l.ended()
		case j < 0:
			return fmt.Errorf("%w: %q (%s) left the line", ErrNoCandidate, p.succ.ID, p.succ.name)
		case j == i+1:
			if clear.IsZero() {
				clear = time.Now()
			}
			var done bool
			if done, ready, acked = e.successorReady(tctx, p, clear); done {
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
		case <-l.ctx.Done():
			return l.ended()
		case <-tctx.Done():
			return e.wayErr(ctx, l, p, left)
		}
	}
}

// listLine lists the election's line in ep, in line order, with a watch
// on its children.
func (e *Election) listLine(ctx context.Context, ep *session.Epoch) ([]line.Name, <-chan zk.Event, error) {
	type listed struct {
		names []string
		ch    <-chan zk.Event
	}
	r, err := line.Call(ctx, ep, func(c *zk.Conn) (listed, error) {
		names, _, ch, err := c.ChildrenW(e.path)
		return listed{names, ch}, err
	}, nil)
	if err != nil {
		return nil, nil, err
	}
	return line.Sort(r.names, e.names.Kind(recipe.KindLatch)), r.ch, nil
}

// successorReady is awaitWay's step once p's successor is next in line
// (since clear): done when the successor said it is ready, or the record
// is not this handover's, or a tenth of the handover timeout has passed
// since clear; otherwise the channels to wait on (the record's change, the
// rest of that tenth).
func (e *Election) successorReady(ctx context.Context, p *plan, clear time.Time) (done bool, ready <-chan struct{}, acked <-chan time.Time) {
	rec, ch, err := e.ho.records.look(ctx)
	wait := time.Until(clear.Add(e.handOverTimeout() / 10))
	// No record may be the watch not caught up yet with the one just
	// made: wait for it, bounded as the rest.
	if err != nil || (rec != nil && (rec.To != p.succ.name || rec.Ready)) || wait <= 0 {
		return true, nil, nil
	}
	return false, ch, time.After(wait) // bounded: a tenth of the timeout
}

// wayErr is why awaitWay gave up: ctx's error, l's end, or the timeout
// (ErrHandOverRefused, naming the candidates that did not step aside).
func (e *Election) wayErr(ctx context.Context, l *Leadership, p *plan, left []string) error {
	switch {
	case l.ctx.Err() != nil:
		return l.ended()
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("%w: %d candidate(s) between the leader and %q did not step aside within %v (%s): "+
		"cut off, or of a shepherd version without handovers", ErrHandOverRefused, len(left), p.succ.ID,
		e.handOverTimeout(), strings.Join(left, ", "))
}

// dropRecord removes p's record, if this candidate made it and it is still
// there (best effort: it goes with the session anyway).
func (e *Election) dropRecord(p *plan) {
	if p == nil || p.rec == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.sess.Timeout())
	defer cancel()
	ep, err := e.sess.Wait(ctx)
	if err != nil {
		return
	}
	_ = line.Exec(ctx, ep, func(c *zk.Conn) error {
		ok, st, err := c.Exists(p.rec)
		if err != nil || !ok || st.EphemeralOwner != ep.SessionID() {
			return err
		}
		return c.Delete(p.rec, st.Version)
	})
}
