package election

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

// onShutdown is what ends leadership l when Run's ctx ends: at once, or,
// with HandOverOnStop, once a handover is prepared. It returns the
// registration's stop (see context.AfterFunc).
func (e *Election) onShutdown(ctx context.Context, l *Leadership) func() bool {
	if !e.ext.onStop {
		return context.AfterFunc(ctx, func() { l.cancel(context.Cause(ctx)) })
	}
	return context.AfterFunc(ctx, func() {
		s := &stopping{l: l, done: make(chan struct{}), began: time.Now()}
		e.ho.mu.Lock()
		e.ho.stop = s
		e.ho.mu.Unlock()
		s.plan, s.err = e.prepareStop(l)
		close(s.done)
		l.cancel(context.Cause(ctx))
	})
}

// prepareStop prepares HandOverOnStop's handover of l: after waiting (up
// to the option's wait) for a candidate of higher priority, to the best
// candidate. Leadership goes on meanwhile; a leadership that ends meanwhile
// ends the wait. A handover already under way (a yield) is waited for.
func (e *Election) prepareStop(l *Leadership) (*plan, error) {
	ctx, cancel := context.WithTimeout(context.Background(), e.ext.stopWait+2*e.handOverTimeout())
	defer cancel()
	stop := context.AfterFunc(l.ctx, cancel)
	defer stop()
	if !e.ho.beginWait(ctx) {
		return nil, l.ended()
	}
	defer e.ho.end()
	if e.ext.stopWait > 0 {
		e.awaitBetter(ctx, l, e.ext.stopWait)
	}
	return e.prepare(ctx, l, target{}, reasonStop)
}

// leaveAtEnd is how Run leaves the line when it ends (its ctx ended, or
// OnElected overran its deadline): with HandOverOnStop's prepared
// handover, the node's delete hands over (the record goes with it, or, in
// the non-fair layout, the successor takes it: awaited here), then the
// handover is reported.
func (e *Election) leaveAtEnd(ctx context.Context) {
	e.ho.mu.Lock()
	s := e.ho.stop
	e.ho.stop = nil
	e.ho.mu.Unlock()
	if s == nil {
		e.leaveBounded(ctx)
		return
	}
	<-s.done // bounded: prepareStop's own bound
	e.leaveBounded(ctx)
	err := s.err
	if s.plan != nil {
		err = e.finish(context.Background(), s.plan)
		e.reportHandOver(s.l, reasonStop, s.plan.succ, err, s.began)
		return
	}
	e.reportHandOver(s.l, reasonStop, cand{}, err, s.began)
}

// quit leaves the election: the line (see leave), and, in the non-fair
// layout, the registry.
func (e *Election) quit(ctx context.Context) error {
	err := e.leave(ctx)
	e.unregister(ctx)
	return err
}

// quitBounded is quit, waiting at most one session timeout (and not past
// ctx: see leaveBounded).
func (e *Election) quitBounded(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, e.sess.Timeout())
	defer cancel()
	_ = e.quit(ctx)
}
