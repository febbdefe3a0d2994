package handover

// Handovers in the non-fair layout (issue 38): the reservation of the race
// for a successor, which the server checks in every racer's grant (see
// docs/handover.md, "Non-fair layout"; the registry: registry.go).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/race"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/session"
)

// prepareNonFair prepares a handover of l in the non-fair layout: the
// successor among the registered candidates, and the record reserving the
// race for it, made (unless it is an operator's) in one fenced write with
// a rewrite of the leader's node naming the successor, which every racer
// watches (see Said.HandOverTo).
func (h *Handovers) prepareNonFair(ctx context.Context, l *Leadership, t target, reason string) (*plan, error) {
	cs, err := h.registeredCands(ctx)
	if err != nil {
		return nil, err
	}
	j := h.pick(cs, t)
	if j < 0 {
		return nil, h.noCandidate(t)
	}
	p := &plan{reason: reason, succ: cs[j], began: time.Now()}
	h.mu.Lock()
	value := h.value
	h.mu.Unlock()
	hint := fence.Raw(&zk.SetDataRequest{Path: l.Hold.Node(), Version: -1, Data: h.of.Data(value, p.succ.Name)})
	if t.record != nil {
		_, err = l.Of.Fenced(ctx, hint) // a hint: the operator's record reserves the race already
		return p, err
	}
	if err := h.makeRecord(ctx, l, p, hint); err != nil {
		return nil, err
	}
	h.awaitReady(ctx, l, p)
	return p, nil
}

// awaitReady waits, for at most a tenth of the handover timeout, until the
// successor says it knows the race is reserved for it (it writes the
// record: see ackReservation), so that it races at once, with the
// reservation's delete, when the leader's node goes. A successor that does
// not say so (slow, gone, or not allowed to write the record) learns it
// when its grant is refused by the record.
func (h *Handovers) awaitReady(ctx context.Context, l *Leadership, p *plan) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout()/10)
	defer cancel()
	for {
		rec, ch, err := h.recs().look(ctx)
		// No record may be the watch not caught up yet with the one just
		// made (its event is handled on another goroutine): wait for it,
		// bounded as the rest.
		if err != nil || (rec != nil && (rec.Ready || rec.To != p.succ.Name)) {
			return
		}
		select {
		case <-ch:
		case <-l.Ctx.Done():
			return
		case <-ctx.Done():
			return
		}
	}
}

// ackReservation writes the record that reserves the race for this
// candidate (created at version 0) again, ready, and keeps its new version
// for the grant's delete.
func (h *Handovers) ackReservation() {
	cfg := h.cfg()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Sess.Timeout())
	defer cancel()
	ep, err := cfg.Sess.Wait(ctx)
	if err != nil {
		return
	}
	p := recordPath(cfg.Path)
	_ = epcall.Exec(ctx, ep, func(c *zk.Conn) error {
		data, st, err := c.Get(p)
		if err != nil || st.Version != 0 {
			return err
		}
		rec := parseRecord(data, st)
		if rec == nil {
			return nil
		}
		rec.Ready = true
		st, err = c.Set(p, encodeRecord(rec.recordJSON), 0)
		if err == nil {
			h.mu.Lock()
			if h.mine == 0 {
				h.mine = st.Version
			}
			h.mu.Unlock()
		}
		return err
	})
}

// awaitTaken waits, once the leader's node is gone, until the successor
// has taken the reservation (the record is gone: its grant deleted it),
// bounded by the handover timeout; then it drops the reservation itself
// and returns ErrNotTaken (the others race, as after a resign).
func (h *Handovers) awaitTaken(ctx context.Context, p *plan) error {
	tctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	for {
		ep, err := h.cfg().Sess.Wait(tctx)
		if err != nil {
			break
		}
		rec, ch, err := readRecord(tctx, ep, p.rec)
		if err == nil && (rec == nil || rec.owner != ep.SessionID()) {
			return nil // taken (or gone with our session: the others race)
		}
		if err != nil && !session.OutcomeUnknown(err) {
			break
		}
		select {
		case <-ch:
		case <-ep.Done():
		case <-tctx.Done():
		}
		if tctx.Err() != nil {
			break
		}
	}
	h.dropRecord(p)
	return fmt.Errorf("%w: %q within %v: the others race for it", h.cfg().Errors.NotTaken, p.succ.ID, h.timeout())
}

// Race is the non-fair race for leadership (see the election's
// acquireNonFair), with the candidate registered, and held back while a
// record reserves the race for another candidate.
func (h *Handovers) Race(ctx context.Context, guid string, seen func([]byte, *zk.Stat)) (*hold.Hold, error) {
	if err := h.register(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// It races all the same (a refusal of the race itself, by an ACL,
		// is the race's to report), but cannot be named by a handover.
		h.of.Logger().Warn("election: cannot register as a candidate (a handover cannot name it)", "error", err)
	}
	// The race goes on across sessions: register again in each new one.
	rctx, stop := context.WithCancel(ctx)
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		h.keepRegistered(rctx)
	}()
	defer func() { stop(); <-kept }()
	a := race.Attempt{GUID: guid, Data: h.of.Data("", ""), Wait: true, Check: h.check, Eager: h.reserved,
		Seen: func(data []byte, st *zk.Stat) {
			h.sawLeader(data, st)
			if seen != nil {
				seen(data, st)
			}
		}}
	for {
		held, err := h.cfg().Race.Run(ctx, a)
		if !errors.Is(err, race.ErrCheckFailed) {
			if held != nil {
				h.setMine(-1, 0)
			}
			return held, err
		}
		if err := h.awaitReservation(ctx); err != nil {
			return nil, err
		}
	}
}

// check is the ops every grant of this racer carries (race.Attempt.Check):
// the record's delete at its version when it reserves the race for this
// candidate (the grant takes the reservation), else a probe that fails
// while any record is there (its create, then its delete).
func (h *Handovers) check() []any {
	p := recordPath(h.cfg().Path)
	h.mu.Lock()
	v := h.mine
	h.mu.Unlock()
	if v >= 0 {
		return []any{&zk.DeleteRequest{Path: p, Version: v}}
	}
	return []any{&zk.CreateRequest{Path: p, Acl: h.cfg().Sess.ACL(), Flags: zk.FlagEphemeral}, &zk.DeleteRequest{Path: p, Version: -1}}
}

// reserved reports whether a record reserves the race for this candidate
// (see race.Attempt.Eager).
func (h *Handovers) reserved() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mine >= 0
}

// setMine records the version of a record reserving the race for this
// candidate (-1: none), as learnt under the leader whose node was created
// at term.
func (h *Handovers) setMine(version int32, term int64) {
	h.mu.Lock()
	h.mine, h.mineTerm = version, term
	h.mu.Unlock()
}

// sawLeader reads the leader's node as a racer sees it: a leader handing
// over to this candidate names its registration (HandOverTo), and the
// record it made with it is new (version 0, never written again). A later
// leader's node without it makes what an earlier one said stale.
func (h *Handovers) sawLeader(data []byte, st *zk.Stat) {
	d := h.of.Said(data)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.reg != nil && d.HandOverTo == h.reg.name:
		if h.mineTerm != st.Czxid {
			h.mine, h.mineTerm = 0, st.Czxid
			go h.ackReservation()
		}
	case h.mine >= 0 && h.mineTerm != 0 && h.mineTerm != st.Czxid:
		h.mine, h.mineTerm = -1, 0
	}
}

// awaitReservation is what a racer refused by a record does: it reads the
// record (with a watch); if it names this candidate, the next grant takes
// it; if it names another, it waits until it changes.
func (h *Handovers) awaitReservation(ctx context.Context) error {
	ep, err := h.cfg().Sess.Wait(ctx)
	if err != nil {
		return err
	}
	rec, ch, err := readRecord(ctx, ep, recordPath(h.cfg().Path))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var pace line.Pacer
		return pace.Wait(ctx, ep)
	}
	h.mu.Lock()
	mine := rec != nil && h.reg != nil && rec.To == h.reg.name
	h.mu.Unlock()
	switch {
	case rec == nil:
		h.setMine(-1, 0)
		return nil
	case mine:
		h.setMine(rec.version, 0)
		return nil
	}
	h.setMine(-1, 0)
	select {
	case <-ch:
	case <-ep.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
