package line

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/shepherdzk/shepherd/session"
)

// Driver is what a fair recipe plugs into the contender loop (Contend):
// its turn rule and its grant. Everything else (entering the line,
// waiting, going round again across reconnects and lost answers, giving up
// and leaving the line) is the loop's, once for every recipe. A Driver may
// also be a Keeper (it keeps its node across calls) or a Fixer (it prepares
// each wait and repairs what an error reports).
type Driver[T any] interface {
	// Turn is the recipe's rule (see Turn; embed Head for HeadTurn).
	Turn(line []Name, i int) (granted bool, watch int, deletionGrants bool)
	// Grant makes the recipe's hold once own is granted within ep. On
	// success own is the hold's. An error matching ErrNodeGone means own
	// has left the line (the contender enters again at once); one wrapped
	// by Spent means own was consumed (the error is then classified);
	// ErrWouldWait, when the contender does not wait, is returned; any
	// other leaves own in line (see Fixer).
	Grant(ctx context.Context, ep *session.Epoch, own *Node) (T, error)
}

// Entry is how a contender enters the line and waits: its node's kind and
// data (see Line.Enter) and the waiting options (see AwaitOptions).
type Entry struct {
	Kind    string
	Data    []byte
	Options AwaitOptions
}

// A Keeper is a Driver that keeps its node in line across Contend calls
// (an election's candidate keeps its place after a loss): Contend waits
// with the kept node while its session lives, and leaves in line a node the
// Keeper accepted when it fails (the Keeper removes it).
type Keeper interface {
	// Kept is the node kept from an earlier call (nil: none).
	Kept() *Node
	// Entered is given each node the loop enters the line with, within
	// the epoch that made it; it keeps it. An error removes the node (see
	// Line.Leave) and is classified as Enter's are; but when the epoch
	// ended during the call (a lost connection: the session may live), the
	// node keeps its place and Entered is called again with it in the next
	// round of the same session (a node Entered never accepted is removed
	// when Contend fails).
	Entered(ctx context.Context, ep *session.Epoch, own *Node) error
	// Gone is told when own has left the line (ErrNodeGone).
	Gone(own *Node)
}

// A Fixer is a Driver that prepares each wait and repairs what an error
// reports (the semaphore reads its limit, and makes its containers again).
type Fixer interface {
	// Prepare is called before each wait, within its epoch, with the node
	// in line. Its errors are classified as Enter's are.
	Prepare(ctx context.Context, ep *session.Epoch) error
	// Fix is told each error of a wait or of Grant that leaves the node
	// in line (not ErrWouldWait, ErrNodeGone or Spent), before it is
	// classified: it returns nil to go round again at once (having
	// repaired what the error reported), or the error to classify.
	Fix(ctx context.Context, ep *session.Epoch, err error) error
}

// Head is the turn of a line whose head alone is granted (see HeadTurn):
// a Driver embeds it.
type Head struct{}

// Turn is HeadTurn.
func (Head) Turn(line []Name, i int) (bool, int, bool) { return HeadTurn(line, i) }

// HeadTurn is the turn of a line whose head alone is granted (a lock, a
// writer, the semaphore's head, the leader): a waiter watches its
// predecessor, whose deletion alone grants it when that was the head
// (sequence numbers only grow).
func HeadTurn(line []Name, i int) (bool, int, bool) {
	if i == 0 {
		return true, 0, false
	}
	return false, i - 1, i == 1
}

// Spent wraps err, returned by a Driver's Grant that consumed the node (a
// multi-op that deleted it, a hold given back): the loop enters again if err
// is retryable, and never removes the node.
func Spent(err error) error { return &spentError{err} }

type spentError struct{ err error }

func (e *spentError) Error() string { return e.err.Error() }
func (e *spentError) Unwrap() error { return e.err }

// Contend is the contender loop of every fair recipe: it waits for the
// session, enters l as e says (or with the node a Keeper kept), waits for
// its turn (see Line.AwaitWith) and returns what d.Grant makes of the
// grant. It goes round again, paced (see Pacer), after an error matching
// Retryable (a lost connection or answer, a session lost: a node of a lost
// session is never reused), and at once when its node has left the line or
// a Fixer repaired an error. It returns ctx.Err() once ctx has ended,
// ErrWouldWait with e.Options.NoWait when not granted at once, and any other
// error as it is. On any failure the contender's node is removed (unless a
// Keeper accepted it) before Contend returns: it waits for the delete while
// ctx and the epoch live, and then at most a short while (see Line.Leave).
func Contend[T any](ctx context.Context, l *Line, e Entry, d Driver[T]) (T, error) {
	c := contender[T]{l: l, e: e, d: d}
	c.keeper, _ = d.(Keeper)
	c.fixer, _ = d.(Fixer)
	if c.keeper != nil {
		c.own = c.keeper.Kept()
	}
	defer c.leave(ctx)
	for {
		ep, err := l.Sess.Wait(ctx)
		if err != nil {
			var zero T
			return zero, err
		}
		res, err := c.round(ctx, ep)
		if err == nil {
			return res, nil
		}
		if err = c.classify(ctx, ep, err); err != nil {
			var zero T
			return zero, err
		}
	}
}

// contender is the state of one Contend.
type contender[T any] struct {
	l      *Line
	e      Entry
	d      Driver[T]
	keeper Keeper // d as a Keeper (nil: it is not one)
	fixer  Fixer  // d as a Fixer (nil: it is not one)
	own    *Node  // our node in line (nil: none)
	// ownEp is the epoch own was created in (nil: an earlier call's).
	ownEp *session.Epoch
	// unentered: own is not accepted by the Keeper yet (its call was cut
	// off by a lost connection).
	unentered bool
	pace      Pacer
}

// again wraps an error after which the loop goes round again at once (its
// node gone, or the error fixed).
type again struct{ err error }

func (e *again) Error() string { return e.err.Error() }
func (e *again) Unwrap() error { return e.err }

// round is one pass of the loop within ep: enter (if not in line), wait,
// grant. An error is for classify.
func (c *contender[T]) round(ctx context.Context, ep *session.Epoch) (T, error) {
	var zero T
	if c.own != nil && c.own.SessionID != ep.SessionID() {
		c.own = nil // a node of a lost session is never reused
	}
	if c.own == nil {
		if err := c.enter(ctx, ep); err != nil {
			return zero, err
		}
	} else if err := c.entered(ctx, ep); err != nil {
		return zero, err
	}
	if c.fixer != nil {
		if err := c.fixer.Prepare(ctx, ep); err != nil {
			return zero, err
		}
	}
	err := c.l.AwaitWith(ctx, ep, c.own, c.d.Turn, c.e.Options)
	if err == nil {
		var res T
		res, err = c.d.Grant(ctx, ep, c.own)
		if err == nil {
			c.own = nil // the hold's now
			return res, nil
		}
	}
	var spent *spentError
	switch {
	case errors.As(err, &spent):
		c.own = nil
		return zero, spent.err
	case errors.Is(err, ErrWouldWait):
		return zero, err
	case errors.Is(err, ErrNodeGone):
		if c.keeper != nil {
			c.keeper.Gone(c.own)
		}
		c.own = nil
		return zero, &again{err}
	case c.fixer != nil && ctx.Err() == nil:
		if ferr := c.fixer.Fix(ctx, ep, err); ferr != nil {
			return zero, ferr
		}
		return zero, &again{err}
	}
	return zero, err
}

// enter enters the line within ep (see Keeper.Entered).
func (c *contender[T]) enter(ctx context.Context, ep *session.Epoch) error {
	own, err := c.l.Enter(ctx, ep, c.e.Kind, c.e.Data)
	if err != nil {
		return err
	}
	c.own, c.ownEp, c.unentered = own, ep, c.keeper != nil
	return c.entered(ctx, ep)
}

// entered gives own to the Keeper if it has not accepted it yet. An
// error removes the node, unless ep ended during the call (the session may
// live): the node then keeps its place, for the next round to try again.
func (c *contender[T]) entered(ctx context.Context, ep *session.Epoch) error {
	if !c.unentered {
		return nil
	}
	if err := c.keeper.Entered(ctx, ep, c.own); err != nil {
		if ep.Context().Err() == nil || errors.Is(err, ErrNodeGone) {
			c.remove(ctx, ep)
			c.own, c.unentered = nil, false
		}
		return err
	}
	c.unentered = false
	return nil
}

// classify decides what an error of round means: nil to go round again
// (after a pause when the error is retryable), or the error to return.
func (c *contender[T]) classify(ctx context.Context, ep *session.Epoch, err error) error {
	var a *again
	switch {
	case errors.As(err, &a):
		return nil
	case errors.Is(err, ErrWouldWait):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	case !Retryable(err):
		return err
	}
	return c.pace.Wait(ctx, ep)
}

// leave removes our node, not granted, unless the driver keeps it: now, or
// once the session is back.
func (c *contender[T]) leave(ctx context.Context) {
	if c.own == nil || (c.keeper != nil && !c.unentered) {
		return // the Keeper keeps the node it accepted
	}
	ep := c.ownEp
	if ep == nil {
		cur, ok := c.l.Sess.Current()
		if !ok {
			return
		}
		ep = cur
	}
	c.remove(ctx, ep)
}

// remove deletes our node (Line.Leave) and, while ctx and ep live, waits
// until it is gone: a call that fails with its ctx alive (another kind's
// node, an exhausted line) leaves nothing behind when it returns. Leave
// alone waits 15 ms, and beside six busy loops a Try on an exhausted line
// returned with its node still there. Once ctx or ep has ended, Leave's
// bound is all the caller waits; the delete goes on in the background.
func (c *contender[T]) remove(ctx context.Context, ep *session.Epoch) {
	done := c.l.Leave(ep, c.own.Path)
	select {
	case <-done:
	case <-ctx.Done():
	case <-ep.Done():
	}
}

// Pacer paces a loop that goes round again after a failure: exponential
// backoff with jitter, from 20 ms up to 1 s (see backoff.ExponentialBackOff),
// cut short when the epoch ends (the next one is the hint to go again). The
// zero value is ready to use; a Pacer is for one goroutine.
type Pacer struct {
	b *backoff.ExponentialBackOff
}

// Wait waits for the next try: until ep ends, the next delay passes, or ctx
// ends (it then returns ctx.Err()).
func (p *Pacer) Wait(ctx context.Context, ep *session.Epoch) error {
	if p.b == nil {
		p.b = backoff.NewExponentialBackOff(backoff.WithInitialInterval(20*time.Millisecond),
			backoff.WithMaxInterval(time.Second), backoff.WithMaxElapsedTime(0))
	}
	t := time.NewTimer(p.b.NextBackOff())
	defer t.Stop()
	select {
	case <-ep.Done():
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
