package election

// The fair layout's step-aside (issue 38): a candidate waiting in line
// ahead of a handover's successor ends its wait and re-enters the line at
// the back, so that the successor becomes the head (see docs/handover.md).

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/line"
)

// errStepAside is the cause that ends a candidate's wait to step aside.
var errStepAside = errors.New("election: stepping aside for a handover")

// acquireLine is acquireFair with the step-aside: while the candidate
// waits, a record naming a successor behind it ends the wait; its node
// leaves the line and it enters again, at the back.
func (e *Election) acquireLine(ctx context.Context, report func(Leader)) (*Leadership, error) {
	for {
		actx, cancel := context.WithCancelCause(ctx)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			e.watchStepAside(actx, cancel)
		}()
		l, err := e.acquireFair(actx, report)
		cancel(nil)
		<-watched
		if err == nil || ctx.Err() != nil || !errors.Is(context.Cause(actx), errStepAside) {
			return l, err
		}
		e.log.Info("election: stepping aside for a handover (entering the line again)")
		e.leaveBounded(ctx)
	}
}

// watchStepAside cancels ctx (with errStepAside) when the election's record
// names a successor behind this candidate's node; it returns when ctx ends.
func (e *Election) watchStepAside(ctx context.Context, cancel context.CancelCauseFunc) {
	for {
		rec, changed, err := e.ho.records.look(ctx)
		if err != nil {
			return // ctx ended, or the session is closed
		}
		if rec != nil && e.before(rec) {
			cancel(errStepAside)
			return
		}
		select {
		case <-changed:
		case <-e.ho.poke:
		case <-ctx.Done():
			return
		}
	}
}

// before reports whether this candidate's node is in line ahead of the
// successor rec names.
func (e *Election) before(rec *record) bool {
	seq := rec.toSeq()
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.node
	return seq >= 0 && n != nil && n.node != nil && n.name != rec.To && n.seq < seq
}

// poked tells the step-aside watch that the candidate's node changed.
func (h *handovers) poked() {
	select {
	case h.poke <- struct{}{}:
	default:
	}
}

// onWatch is the line's OnWatch: the successor a record names, once it
// watches the leader's node right behind it (its deletion then grants
// it, with no other request), says it is ready by writing the record
// again (in the background: one request), for the leader waits for that
// before it lets go (see awaitWay).
func (e *Election) onWatch(line []line.Name, i, w int) {
	if i != 1 || w != 0 {
		return
	}
	rec := e.ho.records.cached()
	if rec == nil || rec.Ready || rec.To != line[i].Name {
		return
	}
	go e.ackRecord(rec)
}

// ackRecord writes rec again, ready, at the version read (best effort: a
// record gone or changed meanwhile is left as it is).
func (e *Election) ackRecord(rec *record) {
	ctx, cancel := context.WithTimeout(context.Background(), e.sess.Timeout())
	defer cancel()
	ep, err := e.sess.Wait(ctx)
	if err != nil {
		return
	}
	j := rec.recordJSON
	j.Ready = true
	_ = line.Exec(ctx, ep, func(c *zk.Conn) error {
		_, err := c.Set(recordPath(e.path), encodeRecord(j), rec.version)
		return err
	})
}
