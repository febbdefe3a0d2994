package handover

// Directed handovers (issue 38): a handover's course from the leader's
// side: prepare (while it still leads: the successor chosen, the way to
// it cleared, see way.go), end the leadership and delete its node (the
// resign's path), and, in the non-fair layout, wait for the successor to
// take the reservation (reserve.go). The design: docs/handover.md.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shepherdzk/shepherd/observe"
)

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
	succ   Cand
	// rec is the record this leader made ("" none): in the fair layout it
	// goes with the leader's node (attached to the hold); in the
	// non-fair layout it is the reservation the successor takes.
	rec string
	// recData is the record's data, as written (its identity with its
	// path and the leader's session: see line.Attached).
	recData []byte
	began   time.Time
}

// Handovers is a candidate's state of priorities and handovers.
type Handovers struct {
	of      Candidate                   // the candidate (its config: cfg)
	records atomic.Pointer[recordWatch] // made when first needed (recs)

	mu sync.Mutex
	// poke: our line node changed (see WatchStepAside). Made while a
	// step-aside watch runs (pokers counts them, below), nil otherwise: a
	// candidate that does not wait (a leader) keeps none.
	poke chan struct{}
	// busy is held (a value in it) while a handover of this candidate's
	// leadership is under way; made at the first handover.
	busy  chan struct{}
	tried int64 // the record (czxid) this leader last acted on
	value string
	// stop is HandOverOnStop's handover under way (see stop.go).
	stop *stopping
	// reg and mine: a non-fair candidate's registration, and the version
	// of a record reserving the race for it (-1: none known); reserve.go.
	reg      *registration
	mine     int32
	pokers   int32 // the step-aside watches running (see poke)
	mineTerm int64 // the leader whose node said so (0: a read of the record)
}

// New returns the handovers of candidate of. It does no I/O.
func New(of Candidate) *Handovers {
	return &Handovers{of: of, mine: -1}
}

// cfg is the candidate's config (see Config).
func (h *Handovers) cfg() Config { return h.of.HandoverConfig() }

// recs is the candidate's watch of the record, made at the first call: a
// candidate that never waits in line nor hands over (a leader at once)
// keeps none.
func (h *Handovers) recs() *recordWatch {
	if w := h.records.Load(); w != nil {
		return w
	}
	h.records.CompareAndSwap(nil, newRecordWatch(h.cfg().Sess, h.cfg().Path))
	return h.records.Load()
}

// busyChan is busy, made when first asked for.
func (h *Handovers) busyChan() chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.busy == nil {
		h.busy = make(chan struct{}, 1)
	}
	return h.busy
}

// begin holds busy: a handover is under way; false if one is.
func (h *Handovers) begin() bool {
	select {
	case h.busyChan() <- struct{}{}:
		return true
	default:
		return false
	}
}

// beginWait is begin, waiting for a handover under way to end (false when
// ctx ends first).
func (h *Handovers) beginWait(ctx context.Context) bool {
	select {
	case h.busyChan() <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// end lets go of busy: the handover is over.
func (h *Handovers) end() { <-h.busyChan() }

// SetValue records the value the leader proclaimed (Leadership.Proclaim),
// which a non-fair leader's node keeps saying while it hands over.
func (h *Handovers) SetValue(value string) {
	h.mu.Lock()
	h.value = value
	h.mu.Unlock()
}

// HandOver hands leadership l over to the candidate with id (the best one
// for ""): see election's Leadership.HandOver.
func (h *Handovers) HandOver(ctx context.Context, l *Leadership, id string) error {
	return h.handOver(ctx, l, target{id: id}, reasonDirected)
}

// handOver hands leadership l over to t (see election's Leadership.HandOver).
func (h *Handovers) handOver(ctx context.Context, l *Leadership, t target, reason string) error {
	cfg := h.cfg()
	if err := l.Of.Ended(); err != nil {
		return err
	}
	if !h.begin() {
		return fmt.Errorf("%w: a handover of this leadership is under way", cfg.Errors.Refused)
	}
	defer h.end()
	began := time.Now()
	p, err := h.prepare(ctx, l, t, reason)
	if err != nil {
		h.reportHandOver(l, reason, Cand{}, err, began)
		return err
	}
	// A release: made whatever ctx (ctx bounds only the wait for its
	// confirmation).
	_ = l.Of.Release(ctx, cfg.Errors.HandedOver)
	if !errors.Is(context.Cause(l.Ctx), cfg.Errors.HandedOver) {
		// Lost before it could be handed over: the node goes with the
		// loss, as after any, and a reservation is dropped.
		h.dropRecord(p)
		err := l.Of.Ended()
		h.reportHandOver(l, reason, p.succ, err, began)
		return err
	}
	// The successor's part is bounded by the handover timeout, not ctx:
	// cut short, it would leave the reservation to the session's end.
	err = h.finish(context.WithoutCancel(ctx), p)
	h.reportHandOver(l, reason, p.succ, err, began)
	return err
}

// prepare chooses the successor and clears the way to it, while l still
// leads (see way.go): the plan, or why not (leadership kept).
func (h *Handovers) prepare(ctx context.Context, l *Leadership, t target, reason string) (*plan, error) {
	if h.cfg().Fair {
		return h.prepareFair(ctx, l, t, reason)
	}
	return h.prepareNonFair(ctx, l, t, reason)
}

// finish ends a handover once the leader's node is gone: in the non-fair
// layout, waits for the successor to take its reservation (reserve.go).
func (h *Handovers) finish(ctx context.Context, p *plan) error {
	if h.cfg().Fair || p.rec == "" {
		return nil
	}
	return h.awaitTaken(ctx, p)
}

// outcome names a handover's outcome (see observe.HandedOver).
func (h *Handovers) outcome(err error) string {
	cfg := h.cfg()
	switch {
	case err == nil:
		return "handed_over"
	case errors.Is(err, cfg.Errors.NoCandidate):
		return "no_candidate"
	case errors.Is(err, cfg.Errors.Refused):
		return "refused"
	case errors.Is(err, cfg.Errors.NotTaken):
		return "not_taken"
	}
	return "failed"
}

// reportHandOver reports a handover of l, and logs it.
func (h *Handovers) reportHandOver(l *Leadership, reason string, succ Cand, err error, began time.Time) {
	took := time.Since(began)
	h.of.Report(observe.RecipeEvent{Kind: observe.HandedOver, Term: int64(l.Term), Successor: succ.ID, Reason: reason,
		Outcome: h.outcome(err), Took: took})
	if err != nil {
		h.of.Logger().Info("election: handover not made", "term", l.Term, "reason", reason, "successor", succ.ID, "error", err)
		return
	}
	h.of.Logger().Info("election: handed over", "term", l.Term, "reason", reason, "successor", succ.ID,
		"took", took.Round(time.Microsecond))
}
