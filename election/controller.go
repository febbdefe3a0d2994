package election

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/election/internal/handover"
	"github.com/shepherdzk/shepherd/internal/construct"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// acquire waits until this candidate leads, reporting leader changes to
// onLeader. The returned leadership's ctx derives from the granting epoch's
// context: it is cancelled synchronously when the connection is lost.
func (e *Election) acquire(ctx context.Context, onLeader func(Leader)) (*Leadership, error) {
	began := time.Now()
	l, err := e.acquireReporting(ctx, onLeader)
	if err == nil {
		// The leadership's hold reports its grant, pauses, resumes, release
		// and loss to the session's observer, as every hold does.
		l.Hold().Observe("election", e.path, time.Since(began), 0)
	}
	return l, err
}

// acquireReporting is acquire, without the hold's reports.
func (e *Election) acquireReporting(ctx context.Context, onLeader func(Leader)) (*Leadership, error) {
	var seen Leader // the leadership last reported
	var report func(Leader)
	if onLeader != nil {
		report = func(l Leader) {
			// By node and term (the non-fair race's node has one name for
			// every leader), and by what the leader says (Proclaim).
			if l != seen {
				seen = l
				onLeader(l)
			}
		}
	}
	if !e.fair {
		return e.acquireNonFair(ctx, report)
	}
	return e.acquireLine(ctx, report)
}

// elected grants leadership for node n with hold h (bound to the epoch that
// granted it): the leadership's context derives from the hold's, so it is
// cancelled synchronously when the connection is lost. h replaces n's
// earlier grant, if any (the same node, granted again after a reconnect).
func (e *Election) elected(n *candidate, h *hold.Hold, report func(Leader)) *Leadership {
	e.mu.Lock()
	n.hold = h
	e.mu.Unlock()
	lctx, cancel := h.DeriveContext() // as context.WithCancelCause(h.Context()), cheaper
	if report != nil {
		report(leaderOf(Leader{Term: Term(n.czxid), Node: n.path, SessionID: n.sid}, e.nodeData()))
	}
	l := &Leadership{e: e, node: n, cancel: cancel}
	l.setHandover(lctx, h, Term(n.czxid))
	e.watchLeadership(l)
	return l
}

// electedFair grants leadership for our node in the line, within ep.
func (e *Election) electedFair(ep *session.Epoch, n *candidate, report func(Leader)) *Leadership {
	return e.elected(n, e.line().NewHold(ep, hold.Token(n.czxid), n.path), report)
}

// acquireLine is acquireFair with the fair layout's step-aside for a
// handover (issue 38; see handover.Handovers.WatchStepAside): while the
// candidate waits, a record naming a successor behind it ends the wait;
// its node leaves the line and it enters again, at the back.
func (e *Election) acquireLine(ctx context.Context, report func(Leader)) (*Leadership, error) {
	for {
		actx, cancel := context.WithCancelCause(ctx)
		watched, waiting := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(watched)
			// Once the candidate waits in line: one led at once never
			// reads nor watches the record, nor makes its handover state.
			select {
			case <-waiting:
			case <-actx.Done():
				return
			}
			e.handovers().WatchStepAside(actx, cancel)
		}()
		var once sync.Once
		l, err := e.acquireFair(actx, report, func() { once.Do(func() { close(waiting) }) })
		cancel(nil)
		<-watched
		if err == nil || ctx.Err() != nil || !errors.Is(context.Cause(actx), handover.ErrStepAside) {
			return l, err
		}
		e.logger().Info("election: stepping aside for a handover (entering the line again)")
		e.leaveBounded(ctx)
	}
}

// acquireFair waits in the line through the contender loop (see
// line.Contend) until this candidate leads. The candidate's node is kept
// across calls (a line.Keeper: leave removes it): after a loss, a
// candidate whose session survived waits again with the node it has, and
// leads again at once, with the same term, if it still heads the line.
func (e *Election) acquireFair(ctx context.Context, report func(Leader), waits func()) (*Leadership, error) {
	e.mu.Lock()
	cand := e.node
	e.mu.Unlock()
	// When leader changes are reported, the head is watched as well as the
	// predecessor (every candidate then hears of each change, by design).
	var onHead func(line.Name, []byte, *zk.Stat)
	if report != nil {
		onHead = func(h line.Name, data []byte, st *zk.Stat) {
			report(leaderOf(Leader{Term: Term(st.Czxid), Node: e.path + "/" + h.Name, SessionID: st.EphemeralOwner}, data))
		}
	}
	return line.Contend(ctx, e.line(), line.Entry{
		Kind: recipe.KindLatch,
		Data: e.nodeData(),
		// A leader that waited marks its node when the candidate after it
		// is shepherd's (line.AwaitOptions.MarkFor): that candidate is
		// then elected by the node's deletion alone, without listing the
		// line.
		Options: line.AwaitOptions{OnHead: onHead, MarkFor: line.Name.Shepherd, OnWatch: func(l []line.Name, i, w int) {
			waits()
			e.handovers().OnWatch(l, i, w)
		}},
	}, &campaign{e: e, cand: cand, report: report})
}

// campaign is one acquireFair's Driver (and Keeper) of the contender loop:
// the candidate's node is the election's, kept across calls.
type campaign struct {
	line.Head
	e      *Election
	cand   *candidate // the candidate as entered (nil: not in line)
	report func(Leader)
}

// Kept is the node of the candidate from an earlier call, if any.
func (c *campaign) Kept() *line.Node {
	if c.cand == nil {
		return nil
	}
	return c.cand.node
}

// Entered makes own the candidate's node (see Election.entered).
func (c *campaign) Entered(ctx context.Context, ep *session.Epoch, own *line.Node) error {
	cand, err := c.e.entered(ctx, ep, own)
	if err == nil {
		c.cand = cand
	}
	return err
}

// Gone forgets own: our node is gone, its session must be too; the loop
// enters again.
func (c *campaign) Gone(own *line.Node) {
	c.e.mu.Lock()
	if c.e.node != nil && c.e.node.node == own {
		c.e.node = nil
	}
	c.e.mu.Unlock()
}

// Grant makes the leadership of the candidate.
func (c *campaign) Grant(_ context.Context, ep *session.Epoch, _ *line.Node) (*Leadership, error) {
	return c.e.electedFair(ep, c.cand, c.report), nil
}

// acquireNonFair races for the single leader node (race.Race) until
// this candidate leads or ctx ends. A candidate that led before in the same
// session races with the same attempt: if its node is still there (a
// reconnect), it leads again at once with the same term.
func (e *Election) acquireNonFair(ctx context.Context, report func(Leader)) (*Leadership, error) {
	e.mu.Lock()
	prev := e.node
	e.mu.Unlock()
	guid := line.NewGUID()
	if prev != nil {
		guid = prev.guid
	}
	var seen func([]byte, *zk.Stat)
	if report != nil {
		p := e.path + "/" + leaderChild
		seen = func(data []byte, st *zk.Stat) {
			report(leaderOf(Leader{Term: Term(st.Czxid), Node: p, SessionID: st.EphemeralOwner}, data))
		}
	}
	h, err := e.handovers().Race(ctx, guid, seen)
	if err != nil {
		return nil, err
	}
	tok, err := h.Token(ctx) // known from the grant: no round trip
	if err != nil {
		_ = h.Release(ctx)
		return nil, err
	}
	n := &candidate{path: h.Node(), name: leaderChild, sid: h.SessionID(), czxid: int64(tok), guid: guid}
	e.mu.Lock()
	e.node = n
	e.mu.Unlock()
	return e.elected(n, h, report), nil
}

// Run campaigns until ctx ends, calling cb as leadership is gained and lost
// (see Callbacks). After each loss the candidate goes back in line (keeping
// its place if its session survived). When ctx ends the candidate leaves the
// line at once, so another takes over without waiting for a session timeout,
// and Run returns nil. It returns ErrClosed when the session is closed, and
// ErrStopDeadline (after OnElected has finally returned) when OnElected did not
// return within the stop deadline. A session observer is told at the start
// (observe.Campaigning), so that followers too can export a leader metric.
func (e *Election) Run(ctx context.Context, cb Callbacks) error {
	if cb.OnElected == nil {
		return fmt.Errorf("election: %w: Callbacks.OnElected is required", ErrInvalidArgument)
	}
	if err := e.begin(modeRun); err != nil {
		return err
	}
	defer e.end()
	e.report(observe.RecipeEvent{Kind: observe.Campaigning})
	// Leaving when Run ends starts the delete and does not wait for its
	// confirmation once ctx has ended (it goes on in the background).
	defer e.quitBounded(ctx)
	for {
		l, err := e.acquire(ctx, cb.OnLeader)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		e.report(observe.RecipeEvent{Kind: observe.Elected, Term: int64(l.Term())})
		if stop, err := e.serve(ctx, l, cb); stop {
			return err
		}
	}
}

// serve runs Run's term of leadership l: OnElected, until it returns, l is
// lost, Resign is called or ctx ends; then OnRevoked (see endTerm). It
// reports whether Run ends, the line left: when ctx has ended (nil), or
// OnElected overran the stop deadline (ErrStopDeadline). Otherwise the
// candidate goes back in line: at the back after OnElected returned or
// Resign, with the node it has after a loss.
func (e *Election) serve(ctx context.Context, l *Leadership, cb Callbacks) (bool, error) {
	stopAfter := e.handovers().OnShutdown(ctx, &l.ho) // a shutdown
	resign, left := e.setLeading(l)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cb.OnElected(l.ho.Ctx, l.Term())
	}()
	pauses := e.relayPauses(l, cb)
	e.logger().Info("election: elected", "term", l.Term())
	voluntary := false
	select {
	case <-done:
		voluntary = true
	case <-l.ho.Ctx.Done():
	case <-resign:
	}
	l.cancel(recipe.ErrReleased) // OnElected returned, or Resign (a loss's cause came first)
	stopAfter()
	<-pauses
	stuck := e.endTerm(l, done, cb)
	if stuck || ctx.Err() != nil {
		e.handovers().LeaveAtEnd(ctx)
		close(left)
		if stuck {
			return true, fmt.Errorf("%w (term %v)", ErrStopDeadline, l.Term())
		}
		return true, nil
	}
	select {
	case <-resign:
		voluntary = true
	default:
	}
	if voluntary {
		e.leaveBounded(ctx) // back of the line
	}
	close(left)
	return false, nil
}

// endTerm, once l's context is cancelled, waits for OnElected to return
// (done; see awaitStop), then reports the revocation and calls OnRevoked.
// It reports whether OnElected overran the stop deadline.
func (e *Election) endTerm(l *Leadership, done <-chan struct{}, cb Callbacks) bool {
	cancelled := time.Now()
	stuck := e.awaitStop(done, l.Term())
	e.report(observe.RecipeEvent{Kind: observe.Revoked, Term: int64(l.Term()), Took: time.Since(cancelled)})
	e.setLeading(nil)
	if cb.OnRevoked != nil {
		cb.OnRevoked()
	}
	e.logger().Info("election: revoked", "term", l.Term())
	return stuck
}

// relayPauses calls cb.OnPaused and cb.OnResumed as leadership l pauses and
// resumes, on a goroutine of its own, until l ends; the returned channel is
// closed once it has stopped. Under StopOnDisconnect l never pauses.
func (e *Election) relayPauses(l *Leadership, cb Callbacks) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-l.Paused():
			case <-l.ho.Ctx.Done():
				return
			}
			e.logger().Info("election: leadership paused (connection lost)", "term", l.Term())
			if cb.OnPaused != nil {
				cb.OnPaused()
			}
			if err := l.Gate(l.ho.Ctx); err != nil {
				return
			}
			e.logger().Info("election: leadership resumed (same session)", "term", l.Term())
			if cb.OnResumed != nil {
				cb.OnResumed()
			}
		}
	}()
	return done
}

// awaitStop waits for OnElected to return, reporting it when it overruns the
// stop deadline. It reports whether it overran.
func (e *Election) awaitStop(done <-chan struct{}, term Term) bool {
	t := time.NewTimer(e.stopDeadline)
	defer t.Stop()
	select {
	case <-done:
		return false
	case <-t.C:
	}
	e.mu.Lock()
	e.stuck, e.stuckNow = true, true
	e.mu.Unlock()
	e.logger().Error("election: OnElected has not returned after its context was cancelled",
		"term", term, "deadline", e.stopDeadline)
	e.report(observe.RecipeEvent{Kind: observe.CallbackStuck, Term: int64(term)})
	if e.onStuck != nil {
		e.onStuck(term)
	}
	<-done
	e.mu.Lock()
	e.stuckNow = false
	e.mu.Unlock()
	return true
}

const (
	modeNone = iota
	modeRun
	modeCampaign
)

// errNotMade is the error of an Election used without New.
var errNotMade = construct.NotMade("election", "an Election not made by New")

func (e *Election) begin(mode int) error {
	if e.sess == nil {
		return errNotMade
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mode != modeNone {
		return ErrBusy
	}
	e.mode = mode
	return nil
}

func (e *Election) end() {
	e.mu.Lock()
	e.mode = modeNone
	e.mu.Unlock()
}

// setLeading records the current leadership and returns a channel closed by
// Resign, and one Run closes once the leadership's end is dealt with (the
// node released, or kept for a reconnect).
func (e *Election) setLeading(l *Leadership) (resign <-chan struct{}, left chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leading = l
	if l == nil || e.mode != modeRun {
		// Campaign's leaderships need neither: Resign acts at once.
		e.resignCh = nil
		return nil, nil
	}
	e.resignCh, e.leftCh = make(chan struct{}), make(chan struct{})
	return e.resignCh, e.leftCh
}
