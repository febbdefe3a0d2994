package election

// Directed handovers (issue 38): the API, and a handover's course from the
// leader's side: prepare (while it still leads: the successor chosen, the
// way to it cleared, see way.go), end the leadership and delete its node
// (the resign's path), and, in the non-fair layout, wait for the successor
// to take the reservation (reserve.go). The design: docs/handover.md.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/recipe"
)

// Errors of handovers, matched with errors.Is.
var (
	// ErrNoCandidate: there is no candidate to hand over to (the id is not
	// in line, or no other candidate is): leadership is kept.
	ErrNoCandidate = line.NewError("election: no candidate to hand over to")
	// ErrHandOverRefused: the way to the successor could not be cleared (a
	// Curator or Kazoo participant stands in line between them and cannot
	// be asked to step aside, or a candidate between them did not within
	// the handover timeout, or another handover is pending): leadership is
	// kept. Resign gives it up in line order instead.
	ErrHandOverRefused = line.NewError("election: handover refused")
	// ErrNotTaken: in a non-fair election, the successor did not take
	// leadership within the handover timeout (crashed, cut off):
	// leadership was given up, its reservation dropped, and the other
	// candidates race for it as after a resign.
	ErrNotTaken = line.NewError("election: the successor did not take leadership in time")
)

// ErrHandedOver is the cause (context.Cause) of a leadership's Context when
// it ended by a handover. It matches recipe.ErrReleased: a handover is the
// holder's own release, not a loss (Lost stays open).
var ErrHandedOver = fmt.Errorf("%w: handed over", recipe.ErrReleased)

// HandOver hands this leadership over to the candidate with id (the best
// one for "": the highest priority, then the first in line; in a non-fair
// election, the longest registered), which leads next, no other candidate
// in between, with a term above this one's. It keeps leading while the
// way is cleared (the candidates between step aside; see docs/handover.md),
// then ends as Resign does (Context ends with ErrHandedOver, Lost stays
// open; after Campaign the candidate leaves the election, under Run it goes
// back in line) and its node is deleted: the successor is granted by that
// deletion. ctx bounds the wait for the way (as does WithHandOverTimeout).
//
// It returns ErrNoCandidate or ErrHandOverRefused with leadership kept;
// ErrNotLeader (and ErrLost) when this leadership has ended; in a non-fair
// election, ErrNotTaken when the successor did not take leadership in time
// (it was given up: the others race). A successor that dies once it is
// next goes as a dead leader does: with its session.
func (l *Leadership) HandOver(ctx context.Context, id string) error {
	return l.e.handOver(ctx, l, target{id: id}, reasonDirected)
}

// HandOver hands the current leadership over to the candidate with id (the
// best one for ""): see Leadership.HandOver. Under Run, OnElected's ctx is
// cancelled once the way is clear, and HandOver returns when OnElected has
// returned and the node is gone; the candidate goes back in line. So, as
// Resign, it is called from outside OnElected (within it, it waits until
// ctx ends). It returns ErrNotLeader when not leading.
func (e *Election) HandOver(ctx context.Context, id string) error {
	e.mu.Lock()
	l := e.leading
	e.mu.Unlock()
	if l == nil || l.ctx.Err() != nil {
		return ErrNotLeader
	}
	return e.handOver(ctx, l, target{id: id}, reasonDirected)
}

// target says whom a handover is to.
type target struct {
	id string // the successor's id; "": the best candidate
	// node, when set, is the successor's node (relative to the path): an
	// operator's record names it.
	node string
	// record is an operator's record to hand over by: it exists, and is
	// not this leader's to make or remove.
	record *record
	// above: choose only a candidate of higher priority than this leader's
	// (a yield).
	above bool
}

// plan is a prepared handover: the way to the successor is clear.
type plan struct {
	reason string
	succ   cand
	// rec is the record this leader made ("" none): in the fair layout it
	// goes with the leader's node (attached to the hold); in the
	// non-fair layout it is the reservation the successor takes.
	rec string
	// recData is the record's data, as written (its identity with its
	// path and the leader's session: see line.Attached).
	recData []byte
	began   time.Time
}

// handovers is an Election's state of priorities and handovers.
type handovers struct {
	e       *Election
	records *recordWatch
	poke    chan struct{} // our line node changed (see stepAside)

	// turn is held (a value in it) while a handover of this candidate's
	// leadership is under way.
	turn chan struct{}

	mu    sync.Mutex
	tried int64 // the record (czxid) this leader last acted on
	value string
	// stop is HandOverOnStop's handover under way (see stop.go).
	stop *stopping
	// reg and mine: a non-fair candidate's registration, and the version
	// of a record reserving the race for it (-1: none known); reserve.go.
	reg      *registration
	mine     int32
	mineTerm int64 // the leader whose node said so (0: a read of the record)
}

func newHandovers(e *Election) *handovers {
	return &handovers{e: e, records: newRecordWatch(e.sess, e.path), poke: make(chan struct{}, 1),
		turn: make(chan struct{}, 1), mine: -1}
}

// begin marks a handover under way; false if one is.
func (h *handovers) begin() bool {
	select {
	case h.turn <- struct{}{}:
		return true
	default:
		return false
	}
}

// beginWait is begin, waiting for a handover under way to end (false when
// ctx ends first).
func (h *handovers) beginWait(ctx context.Context) bool {
	select {
	case h.turn <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// end marks the handover over.
func (h *handovers) end() { <-h.turn }

// handOver hands leadership l over to t (see Leadership.HandOver).
func (e *Election) handOver(ctx context.Context, l *Leadership, t target, reason string) error {
	if err := l.ended(); err != nil {
		return err
	}
	if !e.ho.begin() {
		return fmt.Errorf("%w: a handover of this leadership is under way", ErrHandOverRefused)
	}
	defer e.ho.end()
	began := time.Now()
	p, err := e.prepare(ctx, l, t, reason)
	if err != nil {
		e.reportHandOver(l, reason, cand{}, err, began)
		return err
	}
	// A release: made whatever ctx (ctx bounds only the wait for its
	// confirmation).
	_ = e.resignWith(ctx, l, ErrHandedOver)
	if !errors.Is(context.Cause(l.ctx), ErrHandedOver) {
		// Lost before it could be handed over: the node goes with the
		// loss, as after any, and a reservation is dropped.
		e.dropRecord(p)
		err := l.ended()
		e.reportHandOver(l, reason, p.succ, err, began)
		return err
	}
	// The successor's part is bounded by the handover timeout, not ctx:
	// cut short, it would leave the reservation to the session's end.
	err = e.finish(context.WithoutCancel(ctx), p)
	e.reportHandOver(l, reason, p.succ, err, began)
	return err
}

// prepare chooses the successor and clears the way to it, while l still
// leads (see way.go): the plan, or why not (leadership kept).
func (e *Election) prepare(ctx context.Context, l *Leadership, t target, reason string) (*plan, error) {
	if e.fair {
		return e.prepareFair(ctx, l, t, reason)
	}
	return e.prepareNonFair(ctx, l, t, reason)
}

// finish ends a handover once the leader's node is gone: in the non-fair
// layout, waits for the successor to take its reservation (reserve.go).
func (e *Election) finish(ctx context.Context, p *plan) error {
	if e.fair || p.rec == "" {
		return nil
	}
	return e.awaitTaken(ctx, p)
}

// outcome names a handover's outcome (see observe.HandedOver).
func outcome(err error) string {
	switch {
	case err == nil:
		return "handed_over"
	case errors.Is(err, ErrNoCandidate):
		return "no_candidate"
	case errors.Is(err, ErrHandOverRefused):
		return "refused"
	case errors.Is(err, ErrNotTaken):
		return "not_taken"
	}
	return "failed"
}

// reportHandOver reports a handover of l, and logs it.
func (e *Election) reportHandOver(l *Leadership, reason string, succ cand, err error, began time.Time) {
	took := time.Since(began)
	e.report(observe.RecipeEvent{Kind: observe.HandedOver, Term: int64(l.term), Successor: succ.ID, Reason: reason,
		Outcome: outcome(err), Took: took})
	if err != nil {
		e.log.Info("election: handover not made", "term", l.term, "reason", reason, "successor", succ.ID, "error", err)
		return
	}
	e.log.Info("election: handed over", "term", l.term, "reason", reason, "successor", succ.ID,
		"took", took.Round(time.Microsecond))
}
