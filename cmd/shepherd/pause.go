package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// pausable is a hold that may pause (-on-disconnect=pause): a lock's or a
// lease's hold.Hold, an election's Leadership.
type pausable interface {
	Paused() <-chan struct{}
	Gate(ctx context.Context) error
	RevokeRequested() <-chan struct{}
}

// neverPaused stands for a leadership that has ended already.
type neverPaused struct{}

func (neverPaused) Paused() <-chan struct{}          { return nil }
func (neverPaused) Gate(context.Context) error       { return nil }
func (neverPaused) RevokeRequested() <-chan struct{} { return nil }

// ride follows CMD's hold while CMD runs: when the hold pauses (the
// connection is lost while the session may live) it freezes CMD's
// processes, and when it resumes (the same session is back) it thaws them.
// It returns true when end closes or the hold is lost while paused (the
// caller stops CMD, see stopLost), false when CMD has ended. Under
// -on-disconnect=stop the hold never pauses. An operator's request for the
// hold (shepherd revoke -ask) stops CMD as a SIGTERM to shepherd would
// (SIGKILL after grace): CMD's end then releases the hold.
func (c *cli) ride(h pausable, ch *child, end <-chan struct{}, what, name string, grace time.Duration) bool {
	revoke := h.RevokeRequested()
	for {
		select {
		case <-end:
			return true
		case <-ch.done:
			return false
		case <-revoke:
			revoke = nil
			fmt.Fprintf(c.stderr, "shepherd: an operator asked for the %s (shepherd revoke -ask): stopping %s (SIGTERM, SIGKILL after %v)\n",
				what, name, grace)
			ch.requestStop(syscall.SIGTERM, grace)
			continue
		case <-h.Paused():
		}
		paused := time.Now()
		if running, ok := ch.freeze(); ok {
			still := ""
			if running > 0 {
				still = fmt.Sprintf(" (all but %d, in uninterruptible sleep)", running)
			}
			fmt.Fprintf(c.stderr, "shepherd: connection to ZooKeeper lost: %s frozen%s (the %s is kept while the session lives)\n",
				name, still, what)
		}
		gctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-end:
			case <-ch.done:
			case <-gctx.Done():
			}
			cancel()
		}()
		err := h.Gate(gctx)
		cancel()
		if err != nil {
			select {
			case <-ch.done:
				return false
			default:
				return true
			}
		}
		if ch.thaw() {
			fmt.Fprintf(c.stderr, "shepherd: the %s resumed after %v: %s thawed\n", what, roundPause(time.Since(paused)), name)
		}
	}
}

// roundPause rounds a pause's length for a message: 1.23s, 450ms.
func roundPause(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// lostHow says how a hold whose context is ctx was lost: " revoked by an
// operator" (shepherd revoke), else " lost".
func lostHow(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), recipe.ErrRevoked) {
		return " revoked by an operator"
	}
	return " lost"
}

// stopLost stops CMD's processes after a hold loss and waits until none is
// left (see requestLostStop). It says so on stderr, after lost ("lock on
// /x lost").
func (c *cli) stopLost(ch *child, grace time.Duration, lost, name string) {
	frozen, g := ch.requestLostStop(grace)
	if frozen {
		fmt.Fprintf(c.stderr, "shepherd: %s while paused: killing %s (SIGKILL: its frozen processes never run again)\n", lost, name)
	} else {
		fmt.Fprintf(c.stderr, "shepherd: %s: stopping %s\n", lost, name)
	}
	ch.await(g)
}

// awaitSession, once CMD is gone after a loss, waits (at most the session
// timeout) for the connection to be back, so that the release and the
// session's close that follow remove the holder's nodes at once: the next
// in line is then not kept waiting for the server to expire the session.
// With the session lost meanwhile, the server has removed them already.
func (c *cli) awaitSession(sess *session.Session) {
	if ep, ok := sess.Current(); ok && ep.Context().Err() == nil {
		return
	}
	fmt.Fprintf(c.stderr, "shepherd: removing the hold's node once ZooKeeper is back (at most %v)\n", sess.Timeout())
	ctx, cancel := context.WithTimeout(context.Background(), sess.Timeout())
	defer cancel()
	_, _ = sess.Wait(ctx)
}
