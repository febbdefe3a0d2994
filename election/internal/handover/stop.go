package handover

// HandOverOnStop (issue 38): when Run's ctx ends while the candidate
// leads, leadership goes on while the successor is chosen and the way to
// it cleared; only then is OnElected's ctx cancelled, and the node's
// delete (the end of Run's term) hands over.

import (
	"context"
	"time"
)

// stopping is HandOverOnStop's handover of one leadership.
type stopping struct {
	l     *Leadership
	done  chan struct{} // closed once prepared (or given up)
	plan  *plan         // nil: none (the candidate leaves the line as without the option)
	err   error
	began time.Time
}

// OnShutdown is what ends leadership l when Run's ctx ends: at once, or,
// with HandOverOnStop, once a handover is prepared. It returns the
// registration's stop (see context.AfterFunc).
func (h *Handovers) OnShutdown(ctx context.Context, l *Leadership) func() bool {
	if !h.cfg().Policy.OnStop {
		return context.AfterFunc(ctx, func() { l.Of.Cancel(context.Cause(ctx)) })
	}
	return context.AfterFunc(ctx, func() {
		s := &stopping{l: l, done: make(chan struct{}), began: time.Now()}
		h.mu.Lock()
		h.stop = s
		h.mu.Unlock()
		s.plan, s.err = h.prepareStop(l)
		close(s.done)
		l.Of.Cancel(context.Cause(ctx))
	})
}

// prepareStop prepares HandOverOnStop's handover of l: after waiting (up
// to the option's wait) for a candidate of higher priority, to the best
// candidate. Leadership goes on meanwhile; a leadership that ends meanwhile
// ends the wait. A handover already under way (a yield) is waited for.
func (h *Handovers) prepareStop(l *Leadership) (*plan, error) {
	cfg := h.cfg()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Policy.StopWait+2*h.timeout())
	defer cancel()
	stop := context.AfterFunc(l.Ctx, cancel)
	defer stop()
	if !h.beginWait(ctx) {
		return nil, l.Of.Ended()
	}
	defer h.end()
	if cfg.Policy.StopWait > 0 {
		h.awaitBetter(ctx, l, cfg.Policy.StopWait)
	}
	return h.prepare(ctx, l, target{}, reasonStop)
}

// LeaveAtEnd is how Run leaves the line when it ends (its ctx ended, or
// OnElected overran its deadline): with HandOverOnStop's prepared
// handover, the node's delete hands over (the record goes with it, or, in
// the non-fair layout, the successor takes it: awaited here), then the
// handover is reported.
func (h *Handovers) LeaveAtEnd(ctx context.Context) {
	h.mu.Lock()
	s := h.stop
	h.stop = nil
	h.mu.Unlock()
	if s == nil {
		h.of.LeaveBounded(ctx)
		return
	}
	<-s.done // bounded: prepareStop's own bound
	h.of.LeaveBounded(ctx)
	err := s.err
	if s.plan != nil {
		err = h.finish(context.Background(), s.plan)
		h.reportHandOver(s.l, reasonStop, s.plan.succ, err, s.began)
		return
	}
	h.reportHandOver(s.l, reasonStop, Cand{}, err, s.began)
}
