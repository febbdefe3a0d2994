package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// acquire waits until this candidate leads, reporting leader changes to
// onLeader. The returned leadership's ctx derives from the granting epoch's
// context: it is cancelled synchronously when the connection is lost.
func (e *Election) acquire(ctx context.Context, onLeader func(Leader)) (*leadership, error) {
	var seen string // the leader node last reported
	var report func(Leader)
	if onLeader != nil {
		report = func(l Leader) {
			if l.Node != seen {
				seen = l.Node
				onLeader(l)
			}
		}
	}
	for {
		ep, err := e.sess.Wait(ctx)
		if err != nil {
			return nil, err
		}
		var l *leadership
		if e.fair {
			l, err = e.tryFair(ctx, ep, report)
		} else {
			l, err = e.tryNonFair(ctx, ep, report)
		}
		if l != nil || err == nil {
			return l, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, session.ErrClosed) {
			return nil, err
		}
		if !session.OutcomeUnknown(err) && !errors.Is(err, session.ErrLost) && !errors.Is(err, errRetry) {
			return nil, err
		}
		// A connection problem: wait until the session is usable again.
		select {
		case <-ep.Done():
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// errRetry asks acquire to go round again at once.
var errRetry = errors.New("election: retry")

// elected grants leadership for node, bound to ep: its context derives from
// the epoch's, so it is cancelled synchronously when the connection is lost.
func (e *Election) elected(ep *session.Epoch, n *candidate, report func(Leader)) *leadership {
	lctx, cancel := context.WithCancel(ep.Context())
	if report != nil {
		report(Leader{ID: e.id, Term: Term(n.czxid), Node: n.path, SessionID: n.sid})
	}
	return &leadership{term: Term(n.czxid), ctx: lctx, cancel: cancel}
}

// tryFair runs the fair line within one epoch: it returns a leadership, or an
// error (errRetry to go round again).
func (e *Election) tryFair(ctx context.Context, ep *session.Epoch, report func(Leader)) (*leadership, error) {
	e.mu.Lock()
	node := e.node
	e.mu.Unlock()
	if node != nil && node.sid != ep.SessionID() {
		node = nil // a node of an earlier session is never trusted
	}
	if node == nil {
		n, err := e.create(ctx, ep)
		if err != nil {
			return nil, err
		}
		e.mu.Lock()
		e.node = n
		e.mu.Unlock()
		node = n
		e.mu.Lock()
		first := !e.checkedIDs
		e.checkedIDs = true
		e.mu.Unlock()
		if first {
			// Once per Election: it costs a read per candidate.
			_ = recipe.Do(ctx, ep, func(*zk.Conn) error { e.warnDuplicates(ep, n); return nil })
		}
	}
	// Wait through the line's one loop. When leader changes are reported,
	// the head is watched as well as the predecessor (every candidate then
	// hears of each change, by design).
	var onHead func(recipe.Name, []byte, *zk.Stat)
	if report != nil {
		onHead = func(h recipe.Name, data []byte, st *zk.Stat) {
			report(Leader{ID: string(data), Term: Term(st.Czxid), Node: e.path + "/" + h.Name, SessionID: st.EphemeralOwner})
		}
	}
	err := e.line().AwaitWith(ctx, ep, node.node, headTurn, recipe.AwaitOptions{OnHead: onHead})
	switch {
	case err == nil:
		return e.elected(ep, node, report), nil
	case errors.Is(err, recipe.ErrNodeGone):
		// Our node is gone: its session must be too. Re-enter.
		e.mu.Lock()
		if e.node == node {
			e.node = nil
		}
		e.mu.Unlock()
		return nil, errRetry
	}
	return nil, err
}

// headTurn: the head of the line leads; a candidate watches its
// predecessor, whose deletion alone elects it when it was the head
// (sequence numbers only grow).
func headTurn(line []recipe.Name, i int) (bool, int, bool) {
	if i == 0 {
		return true, 0, false
	}
	return false, i - 1, i == 1
}

// tryNonFair races for the single leader node within one epoch.
func (e *Election) tryNonFair(ctx context.Context, ep *session.Epoch, report func(Leader)) (*leadership, error) {
	p := e.path + "/" + leaderChild
	if err := e.awaitDelete(ctx); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		_, err := ep.Conn().Create(p, []byte(e.id), zk.FlagEphemeral, e.sess.ACL())
		switch {
		case errors.Is(err, zk.ErrNoNode) && attempt < 3:
			if err := e.ensureParents(ep); err != nil {
				return nil, err
			}
			continue
		case err != nil && !errors.Is(err, zk.ErrNodeExists) && !session.OutcomeUnknown(err):
			return nil, err
		}
		// Created, exists, or unknown: read the truth and watch it.
		data, st, w, gerr := ep.Conn().GetW(p)
		if errors.Is(gerr, zk.ErrNoNode) {
			continue
		} else if gerr != nil {
			return nil, gerr
		}
		if st.EphemeralOwner == ep.SessionID() {
			if ep.Context().Err() != nil {
				return nil, errRetry
			}
			n := &candidate{ep: ep, path: p, name: leaderChild, sid: ep.SessionID(), czxid: st.Czxid}
			e.mu.Lock()
			e.node = n
			e.mu.Unlock()
			return e.elected(ep, n, report), nil
		}
		if report != nil {
			report(Leader{ID: string(data), Term: Term(st.Czxid), Node: p, SessionID: st.EphemeralOwner})
		}
		select {
		case <-w:
		case <-ep.Done():
			return nil, errRetry
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// warnDuplicates logs other candidates using our id (a second process
// configured with the same id, or the node of our own previous session that
// the server has not removed yet).
func (e *Election) warnDuplicates(ep *session.Epoch, n *candidate) {
	ms, err := e.list(ep)
	if err != nil {
		return
	}
	for _, m := range ms {
		if m.name == n.name {
			continue
		}
		data, st, err := ep.Conn().Get(e.path + "/" + m.name)
		if err == nil && string(data) == e.id {
			e.log.Warn("election: another candidate uses this id", "node", m.name,
				"session", fmt.Sprintf("0x%x", st.EphemeralOwner))
		}
	}
}

// leave removes our node (the next candidate is notified at once).
func (e *Election) leave() {
	e.mu.Lock()
	n := e.node
	e.node = nil
	e.mu.Unlock()
	if n == nil {
		return
	}
	ep, ok := e.sess.Current()
	if !ok || ep.SessionID() != n.sid {
		ep = n.ep // not connected now: delete once its session is back
	}
	if ep != nil {
		e.deleteNode(n.path, ep)
	}
}

// Run campaigns until ctx ends, calling cb as leadership is gained and lost
// (see Callbacks). After each loss the candidate goes back in line (keeping
// its place if its session survived). When ctx ends the candidate leaves the
// line at once, so another takes over without waiting for a session timeout,
// and Run returns nil. It returns ErrClosed when the session is closed, and
// ErrStopDeadline (after OnElected has finally returned) when OnElected did not
// return within the stop deadline.
func (e *Election) Run(ctx context.Context, cb Callbacks) error {
	if cb.OnElected == nil {
		return fmt.Errorf("election: %w: Callbacks.OnElected is required", ErrInvalidArgument)
	}
	if err := e.begin(modeRun); err != nil {
		return err
	}
	defer e.end()
	defer e.leave()
	for {
		began := time.Now()
		l, err := e.acquire(ctx, cb.OnLeader)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		e.report(session.RecipeEvent{Kind: session.Acquired, Wait: time.Since(began), Term: int64(l.term)})
		e.report(session.RecipeEvent{Kind: session.Elected, Term: int64(l.term)})
		stopAfter := context.AfterFunc(ctx, l.cancel)
		resign := e.setLeading(l)
		done := make(chan struct{})
		go func() {
			defer close(done)
			cb.OnElected(l.ctx, l.term)
		}()
		e.log.Info("election: elected", "term", l.term)
		voluntary := false
		select {
		case <-done:
			voluntary = true
		case <-l.ctx.Done():
		case <-resign:
		}
		l.cancel()
		stopAfter()
		cancelled := time.Now()
		stuck := e.awaitStop(done, l.term)
		e.report(session.RecipeEvent{Kind: session.Revoked, Term: int64(l.term), Took: time.Since(cancelled)})
		e.setLeading(nil)
		if cb.OnRevoked != nil {
			cb.OnRevoked()
		}
		e.log.Info("election: revoked", "term", l.term)
		if stuck {
			return fmt.Errorf("%w (term %v)", ErrStopDeadline, l.term)
		}
		if ctx.Err() != nil {
			return nil
		}
		select {
		case <-resign:
			voluntary = true
		default:
		}
		if voluntary {
			e.leave() // back of the line
		}
	}
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
	e.log.Error("election: OnElected has not returned after its context was cancelled",
		"term", term, "deadline", e.stopDeadline)
	e.report(session.RecipeEvent{Kind: session.CallbackStuck, Term: int64(term)})
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

func (e *Election) begin(mode int) error {
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
// Resign.
func (e *Election) setLeading(l *leadership) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leading = l
	if l == nil {
		e.resignCh = nil
		return nil
	}
	e.resignCh = make(chan struct{})
	return e.resignCh
}

// Campaign blocks until this candidate leads (or ctx ends) and returns the
// term. Leadership lasts until Resign or until it may be lost: Lost() closes.
// A failed Campaign leaves the line.
func (e *Election) Campaign(ctx context.Context) (Term, error) {
	if err := e.begin(modeCampaign); err != nil {
		return 0, err
	}
	l, err := e.acquire(ctx, nil)
	if err != nil {
		e.leave()
		e.end()
		return 0, err
	}
	e.setLeading(l)
	return l.term, nil
}

// Lost returns a channel closed when the leadership won by Campaign may be
// lost (or was resigned); a closed channel when not leading.
func (e *Election) Lost() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leading == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return e.leading.ctx.Done()
}

// Resign gives leadership up: OnElected's ctx (or Lost) is cancelled and the
// node is deleted, so the next candidate is elected at once. Under Run the
// candidate goes back in line; after Campaign it leaves the election. It
// returns ErrNotLeader when not leading.
func (e *Election) Resign(ctx context.Context) error {
	e.mu.Lock()
	l, mode := e.leading, e.mode
	if l == nil {
		e.mu.Unlock()
		return ErrNotLeader
	}
	l.cancel()
	if e.resignCh != nil {
		close(e.resignCh)
		e.resignCh = nil
	}
	if mode == modeCampaign {
		e.leading = nil
	}
	e.mu.Unlock()
	if mode == modeCampaign {
		e.leave()
		e.end()
	}
	return ctx.Err()
}
