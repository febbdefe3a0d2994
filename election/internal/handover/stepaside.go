package handover

// The fair layout's step-aside (issue 38): a candidate waiting in line
// ahead of a handover's successor ends its wait and re-enters the line at
// the back, so that the successor becomes the head (see docs/handover.md).
// The election's wait in line (its acquireLine) runs WatchStepAside beside
// it.

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/line"
)

// ErrStepAside is the cause that ends a candidate's wait to step aside.
var ErrStepAside = errors.New("election: stepping aside for a handover")

// WatchStepAside cancels ctx (with ErrStepAside) when the election's record
// names a successor behind this candidate's node; it returns when ctx ends.
// The election starts it once the candidate waits in line (see
// line.AwaitOptions.OnWatch): a candidate led at once never reads nor
// watches the record. A record made before then is read then.
func (h *Handovers) WatchStepAside(ctx context.Context, cancel context.CancelCauseFunc) {
	poke := h.startPokes()
	defer h.stopPokes()
	for {
		rec, changed, err := h.recs().look(ctx)
		if err != nil {
			return // ctx ended, or the session is closed
		}
		if rec != nil && h.before(rec) {
			h.recs().unwait(changed)
			cancel(ErrStepAside)
			return
		}
		select {
		case <-changed:
		case <-poke:
			h.recs().unwait(changed)
		case <-ctx.Done():
			h.recs().unwait(changed)
			return
		}
	}
}

// startPokes makes poke, for a step-aside watch (see stopPokes).
func (h *Handovers) startPokes() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.poke == nil {
		h.poke = make(chan struct{}, 1)
	}
	h.pokers++
	return h.poke
}

// stopPokes drops poke once no step-aside watch runs: a poke then finds
// no one to tell (the next watch looks at the record first).
func (h *Handovers) stopPokes() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pokers--; h.pokers == 0 {
		h.poke = nil
	}
}

// before reports whether this candidate's node is in line ahead of the
// successor rec names.
func (h *Handovers) before(rec *record) bool {
	seq := rec.toSeq()
	name, own, ok := h.of.InLine()
	return seq >= 0 && ok && name != rec.To && own < seq
}

// Poked tells the step-aside watch that the candidate's node changed.
func (h *Handovers) Poked() {
	h.mu.Lock()
	poke := h.poke
	h.mu.Unlock()
	if poke == nil {
		return // no step-aside watch runs
	}
	select {
	case poke <- struct{}{}:
	default:
	}
}

// OnWatch is the line's OnWatch: the successor a record names, once it
// watches the leader's node right behind it (its deletion then grants
// it, with no other request), says it is ready by writing the record
// again (in the background: one request), for the leader waits for that
// before it lets go (see awaitWay).
func (h *Handovers) OnWatch(line []line.Name, i, w int) {
	if i != 1 || w != 0 {
		return
	}
	rec := h.recs().cached()
	if rec == nil || rec.Ready || rec.To != line[i].Name {
		return
	}
	go h.ackRecord(rec)
}

// ackRecord writes rec again, ready, at the version read (best effort: a
// record gone or changed meanwhile is left as it is).
func (h *Handovers) ackRecord(rec *record) {
	cfg := h.cfg()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Sess.Timeout())
	defer cancel()
	ep, err := cfg.Sess.Wait(ctx)
	if err != nil {
		return
	}
	j := rec.recordJSON
	j.Ready = true
	_ = epcall.Exec(ctx, ep, func(c *zk.Conn) error {
		_, err := c.Set(recordPath(cfg.Path), encodeRecord(j), rec.version)
		return err
	})
}
