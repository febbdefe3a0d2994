package election

// Handovers (issue 38): the API. A handover's course (its record, the way
// cleared to the successor, the non-fair reservation and registry, what
// starts one) is package handover's (election/internal/handover); this
// file is what users call, and the seam: what an Election and each of its
// leaderships are to their handovers. The design: docs/handover.md.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/election/internal/handover"
	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/hold"
	"github.com/shepherdzk/shepherd/internal/construct"
	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
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
	return l.e.handovers().HandOver(ctx, &l.ho, id)
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
	if l == nil || l.ho.Ctx.Err() != nil {
		return ErrNotLeader
	}
	return e.handovers().HandOver(ctx, &l.ho, id)
}

// HandOverRequest is a pending handover at an election's path (see
// PendingHandOver).
type HandOverRequest struct {
	To        string    `json:"to"`         // the successor's node (full path)
	ID        string    `json:"id"`         // the successor's id
	By        string    `json:"by"`         // who asked: the leader's id, or "operator"
	Reason    string    `json:"reason"`     // directed, yield, stop or operator
	SessionID int64     `json:"session_id"` // the session that made it: it goes with it
	Created   time.Time `json:"created"`    // ZooKeeper's clock
}

// PendingHandOver returns the handover pending at the election at path
// (nil when none): a leader handing over, or an operator's request
// (`shepherd handover`), not yet taken.
func PendingHandOver(ctx context.Context, sess *session.Session, path string) (*HandOverRequest, error) {
	if sess == nil {
		return nil, fmt.Errorf("election: %w: nil session", ErrInvalidArgument)
	}
	req, err := handover.Pending(ctx, sess, sess.Path(path))
	if err != nil {
		return nil, err
	}
	return (*HandOverRequest)(req), nil
}

// RequestHandOver asks the leader of the election at path to hand
// leadership over to the candidate with id (the best one for "": the
// highest priority, then the first in line; never the leader itself), as
// `shepherd handover` does. It makes the request (an ephemeral node of
// sess, "handover" under path), waits until that candidate leads or ctx
// ends, then removes the request, and returns the new leader.
//
// The request is the record and a write of the leader's node (its data
// as it is), in one multi-op: the leader hears of it through its own
// node's watch, and needs no watch of the record (docs/handover.md). It
// needs the permission to write the leader's node. The leader carries the
// request out as Leadership.HandOver does: only a shepherd leader of a
// version with handovers does (another waits for ever: bound ctx). It
// returns an error matching ErrWrongKind, writing nothing, when path is
// another kind of recipe's (a lock's; a schedule's, whose election is at
// path/leader), ErrNoLeader when no one leads, ErrNoCandidate when
// the candidate is not in line, ErrHandOverRefused when another library's
// candidate stands between the leader and it (or a handover is pending),
// and ctx's error when it did not happen in time (the request is removed:
// nothing changes).
func RequestHandOver(ctx context.Context, sess *session.Session, path, id string) (Leader, error) {
	if err := construct.Check("election", sess, path); err != nil {
		return Leader{}, err
	}
	full := sess.Path(path)
	if err := refuseOtherKind(ctx, sess, full); err != nil {
		return Leader{}, err
	}
	for try := 1; ; try++ {
		cur, err := leaderAt(ctx, sess, full)
		if err != nil {
			return Leader{}, err
		}
		// An Election of no candidate: what the leader's side reads, read
		// the same way; the layout is the one found there.
		e := &Election{sess: sess, path: full, id: handover.ByOperator}
		e.fair = cur.Node != full+"/"+leaderChild
		succ, err := e.handovers().RequestTarget(ctx, cur.Node, cur.SessionID, cur.ID, id)
		if err != nil {
			return Leader{}, err
		}
		made, err := e.handovers().MakeRequest(ctx, succ, path, cur.Node, int64(cur.Term))
		if errors.Is(err, handover.ErrLeaderMoved) && try < 3 {
			continue // another leads now: ask that one
		} else if errors.Is(err, handover.ErrLeaderMoved) {
			e.handovers().RemoveRequest(nil) // one that landed, its answer lost
			return Leader{}, fmt.Errorf("%w: the leader of %s changed %d times while the request was made", ErrHandOverRefused, path, try)
		} else if err != nil {
			return Leader{}, err
		}
		defer e.handovers().RemoveRequest(made)
		return e.awaitLeader(ctx, succ)
	}
}

// refuseOtherKind returns an error matching recipe.ErrWrongKind when what
// is at full is another kind's than an election's, fair or not (a lock's, a
// schedule's: the schedule's election is at its "leader"), before a
// handover request writes there. A missing path is no election's either:
// leaderAt says so.
func refuseOtherKind(ctx context.Context, sess *session.Session, full string) error {
	return sess.Do(ctx, func(ep *session.Epoch) error {
		return epcall.Exec(ctx, ep, func(c *zk.Conn) error {
			seen, _, err := line.Look(c, full)
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			} else if err != nil {
				return err
			}
			if line.Refusal(layout.FairElection, full, seen) == nil {
				return nil
			}
			return line.Refusal(layout.NonFairElection, full, seen)
		})
	})
}

// awaitLeader waits until succ leads (its node heads the line, or the
// non-fair leader is its session's with its id), watching the leader.
func (e *Election) awaitLeader(ctx context.Context, succ handover.Cand) (Leader, error) {
	for {
		ep, err := e.sess.Wait(ctx)
		if err != nil {
			return Leader{}, err
		}
		w, lw, l, err := watchLeader(ctx, ep, e.path)
		if err != nil && !errors.Is(err, ErrNoLeader) {
			if ctx.Err() != nil {
				return Leader{}, ctx.Err()
			}
			var pace line.Pacer
			if err := pace.Wait(ctx, ep); err != nil {
				return Leader{}, err
			}
			continue
		}
		if err == nil && (l.Node == succ.Node || !e.fair && l.SessionID == succ.SessionID && l.ID == succ.ID) {
			return l, nil
		}
		select {
		case <-w:
		case <-lw:
		case <-ep.Done():
		case <-ctx.Done():
			return Leader{}, ctx.Err()
		}
	}
}

// handoverErrors are the errors handovers return (see handover.Errors).
var handoverErrors = handover.Errors{NoCandidate: ErrNoCandidate, Refused: ErrHandOverRefused, NotTaken: ErrNotTaken,
	HandedOver: ErrHandedOver, NotLeader: ErrNotLeader}

// handovers is e's handover state, made at the first call (from what New
// set: its race, layouts and options): a fair candidate led at once, and
// its leadership until a record is found, need none (watchLeadership).
func (e *Election) handovers() *handover.Handovers {
	if h := e.ho.Load(); h != nil {
		return h
	}
	e.ho.CompareAndSwap(nil, newHandovers(e))
	return e.ho.Load()
}

// watchLeadership starts what l watches while it leads (see package
// handover's CheckRecord): the election's record, read when the hold's
// own-node watch reads its node, and, with a yield window, the other
// candidates.
func (e *Election) watchLeadership(l *Leadership) {
	l.Hold().OnNodeRead(func() { handover.CheckRecord(&l.ho, e.sess, e.path, e.ho.Load(), e.handovers) })
	if e.ext.handover.YieldWindow > 0 {
		e.handovers().WatchYield(&l.ho)
	}
}

// newHandovers is e's part in handovers: what e is to them (see
// handover.Config), once e is made.
func newHandovers(e *Election) *handover.Handovers { return handover.New((*candidateOf)(e)) }

// candidateOf is an Election as its handovers ask of it
// (handover.Candidate): a type of its own, so that these methods stay out
// of Election's.
type candidateOf Election

func (c *candidateOf) HandoverConfig() handover.Config {
	e := (*Election)(c)
	return handover.Config{Sess: e.sess, Path: e.path, ID: e.id, Fair: e.fair, Names: e.names,
		Priority: e.ext.priority, Policy: e.ext.handover, Errors: &handoverErrors,
		Race: e.single, Layout: e.nfLayout}
}

func (c *candidateOf) Line() *line.Line                          { return (*Election)(c).line() }
func (c *candidateOf) InLine() (name string, seq int64, ok bool) { return (*Election)(c).inLine() }
func (c *candidateOf) Said(data []byte) handover.Said            { return said(data) }
func (c *candidateOf) Report(ev observe.RecipeEvent)             { (*Election)(c).report(ev) }
func (c *candidateOf) LeaveBounded(ctx context.Context)          { (*Election)(c).leaveBounded(ctx) }
func (c *candidateOf) Logger() *slog.Logger                      { return (*Election)(c).logger() }

func (c *candidateOf) Data(value, handOverTo string) []byte {
	return (*Election)(c).dataWith(value, handOverTo)
}

// setHandover fills l.ho, leadership l (whose Context is ctx, its grant h,
// its term term) as its handovers see it (see handover.Leadership), once
// l is made.
func (l *Leadership) setHandover(ctx context.Context, h *hold.Hold, term Term) {
	l.ho = handover.Leadership{Ctx: ctx, Hold: h, Term: term, Of: (*toHandOver)(l)}
}

// toHandOver is a Leadership as a handover acts on it (handover.Leader):
// a type of its own, so that these methods stay out of Leadership's.
type toHandOver Leadership

func (l *toHandOver) Ended() error { return (*Leadership)(l).ended() }

func (l *toHandOver) Fenced(ctx context.Context, ops ...fence.Op) ([]zk.MultiResponse, error) {
	return (*Leadership)(l).Fenced(ctx, ops...)
}

func (l *toHandOver) Release(ctx context.Context, cause error) error {
	return l.e.resignWith(ctx, (*Leadership)(l), cause)
}

func (l *toHandOver) Cancel(cause error) { l.cancel(cause) }

// inLine is the candidate's node while it waits or leads in the fair line
// (ok false: none).
func (e *Election) inLine() (name string, seq int64, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.node
	if n == nil || n.node == nil {
		return "", 0, false
	}
	return n.name, n.seq, true
}
