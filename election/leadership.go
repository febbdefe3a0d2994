package election

import (
	"context"
	"fmt"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/election/internal/handover"
	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// Leadership is one held leadership: what Campaign returns, and what
// Election.Leadership reports while Run's OnElected runs. It is a hold
// (Resign is its release): see hold.Hold for the hold contract. Its
// Context() is the ctx Run passes to OnElected: under Run it ends also when
// OnElected returns or Run's ctx ends. Its context.Cause tells the ends
// apart: an error matching ErrLost for a loss, recipe.ErrReleased for
// Resign (or OnElected returning), Run's ctx's own cause (such as
// context.Canceled) for a shutdown.
//
// Its methods are safe for concurrent use.
type Leadership struct {
	e      *Election
	node   *candidate
	cancel context.CancelCauseFunc
	// ho is this leadership as its handovers see it (see setHandover):
	// its Ctx is the leadership's Context, its Hold this grant of the
	// node, its Term the leadership's (each kept once, not twice).
	ho handover.Leadership
}

// Term is the leadership's fencing token: the creation zxid of the leader's
// node, strictly growing from one leadership to the next. It costs nothing:
// it is known before leadership is granted (read while waiting in line, or
// with the grant of the non-fair race).
func (l *Leadership) Term() Term { return l.ho.Term }

// Lost is closed when the leadership is, or may be, lost (see Leadership).
// Resign does not close it.
func (l *Leadership) Lost() <-chan struct{} { return l.Hold().Lost() }

// Hold is the underlying hold (see hold.Hold): its node, its session.
func (l *Leadership) Hold() *hold.Hold { return l.ho.Hold }

// RevokeRequested is closed when an operator asks for the leadership
// (shepherd revoke -ask, admin.AskRevoke): resign (return from OnElected)
// when the work allows (see hold.Hold.RevokeRequested).
func (l *Leadership) RevokeRequested() <-chan struct{} { return l.Hold().RevokeRequested() }

// Paused returns the leadership's pause signal (PauseOnDisconnect): a
// channel closed when leadership pauses, renewed at each resume (see
// hold.Hold). The term does not change across a pause.
func (l *Leadership) Paused() <-chan struct{} { return l.Hold().Paused() }

// Gate returns nil while leadership holds and is not paused; while it is
// paused, it waits until it resumes (nil), is lost (ErrLost) or ctx ends (see
// hold.Hold.Gate).
func (l *Leadership) Gate(ctx context.Context) error { return l.Hold().Gate(ctx) }

// Context ends when the leadership ends for any reason: a loss or Resign
// (see Leadership). Pass it to the leader's work.
func (l *Leadership) Context() context.Context { return l.ho.Ctx }

// Resign gives this leadership up, whatever ctx (see Election.Resign):
// Context ends, Lost stays open, and the node is deleted so the next
// candidate is elected at once. After Campaign the candidate leaves the
// election; under Run it goes back in line. It returns ErrNotLeader when this
// leadership is not the candidate's current one (resigned already, or
// replaced by a later Campaign), and nil after a loss (the node is removed
// once the session is back, or by the server with the session).
func (l *Leadership) Resign(ctx context.Context) error { return l.e.resign(ctx, l) }

// Validate confirms, after a sync with the leader of the ensemble, that this
// leadership holds: the node exists, belongs to the candidate's current
// session, heads the line and still has this term. Call it right before a
// critical step; between checks, watch Lost or Context. A leadership that
// has ended fails with an error matching both ErrNotLeader and ErrLost.
func (l *Leadership) Validate(ctx context.Context) error {
	if err := l.ended(); err != nil {
		return err
	}
	n := l.node
	e := l.e
	return e.sess.Do(ctx, func(ep *session.Epoch) error {
		if ep.SessionID() != n.sid {
			return ErrLost
		}
		if _, err := ep.Conn().Sync(e.path); err != nil {
			return err
		}
		cur, err := readLeader(ep, e.path)
		if err != nil {
			return err
		}
		// The term too: every non-fair leader's node has the same name, and
		// two candidates may share a session.
		if cur.Node != n.path || cur.SessionID != n.sid || cur.Term != l.Term() {
			return fmt.Errorf("%w: %s leads", ErrNotLeader, cur.ID)
		}
		return nil
	})
}

// Fenced runs ops as one multi-op that lands only while this leadership
// holds on the server; a write after it has ended fails with an error
// matching ErrLost. The check prepended to ops: in a fair election, that the
// leader's node exists; in a non-fair one, also that no leader was granted
// since (see hold.Hold.Fenced). ops are fence.Set, fence.Create and
// fence.Delete (paths in the session's namespace), or fence.Raw's
// go-zookeeper requests; it returns one response per op (a Set's Stat.Version is the
// node's new version).
func (l *Leadership) Fenced(ctx context.Context, ops ...fence.Op) ([]zk.MultiResponse, error) {
	if err := l.ended(); err != nil {
		return nil, err
	}
	return l.Hold().Fenced(ctx, ops...)
}

// ended reports a leadership that has ended (lost or resigned).
func (l *Leadership) ended() error {
	if l.ho.Ctx.Err() != nil {
		return fmt.Errorf("election %s: %w (term %v has ended): %w", l.e.path, ErrNotLeader, l.Term(), ErrLost)
	}
	return nil
}

// Leadership is the candidate's current leadership, nil when it does not lead
// (or its leadership has ended). Under Run, OnElected may call it for
// Fenced and Validate.
func (e *Election) Leadership() *Leadership {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leading == nil || e.leading.ho.Ctx.Err() != nil {
		return nil
	}
	return e.leading
}

// Campaign blocks until this candidate leads (or ctx ends) and returns the
// leadership: it lasts until Resign or until it may be lost (its Lost
// closes). A failed Campaign leaves the line. After a loss, Campaign again:
// if the candidate's session survived with its node still at the head, it
// leads again at once with the same term; otherwise it re-enters the line.
// It returns ErrBusy while Run runs or while a leadership of this candidate
// holds.
func (e *Election) Campaign(ctx context.Context) (*Leadership, error) {
	if err := e.beginCampaign(); err != nil {
		return nil, err
	}
	l, err := e.acquire(ctx, nil)
	if err != nil {
		_ = e.quit(ctx) // ctx has ended, or the session is closed: no wait
		e.end()
		return nil, err
	}
	e.setLeading(l)
	return l, nil
}

// beginCampaign enters Campaign mode; a Campaign leadership that was lost
// (not resigned) makes way for the new one, keeping the node.
func (e *Election) beginCampaign() error {
	if e.sess == nil {
		return errNotMade
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.mode == modeNone:
		e.mode = modeCampaign
		return nil
	case e.mode == modeCampaign && e.leading != nil && e.leading.ho.Ctx.Err() != nil:
		e.leading = nil
		return nil
	}
	return ErrBusy
}

// Resign gives the current leadership up, whatever ctx: its Context (and so
// OnElected's ctx) ends, its Lost stays open, and the node is deleted, so
// the next candidate is elected at once. Under Run the candidate goes back
// in line (once OnElected has returned); after Campaign it leaves the
// election (as Leadership.Resign). ctx only bounds how long Resign waits for
// that to be confirmed by the server: if it cannot be within ctx, Resign
// returns ctx's error and the delete goes on in the background until the
// node is gone or its session is. It returns ErrNotLeader when not leading.
func (e *Election) Resign(ctx context.Context) error { return e.resign(ctx, nil) }

// resign resigns the current leadership if it is want (any if want is nil).
func (e *Election) resign(ctx context.Context, want *Leadership) error {
	return e.resignWith(ctx, want, recipe.ErrReleased)
}

// resignWith is resign, ending the leadership's Context with cause.
func (e *Election) resignWith(ctx context.Context, want *Leadership, cause error) error {
	e.mu.Lock()
	l, mode, left := e.leading, e.mode, e.leftCh
	if l == nil || (want != nil && l != want) {
		e.mu.Unlock()
		return ErrNotLeader
	}
	l.cancel(cause)
	if e.resignCh != nil {
		close(e.resignCh)
		e.resignCh = nil
	}
	if mode == modeCampaign {
		e.leading = nil
	}
	e.mu.Unlock()
	if mode == modeCampaign {
		err := e.quit(ctx)
		e.end()
		return err
	}
	if left == nil {
		return nil
	}
	select {
	case <-left:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
