package hold

// How a hold ends when it may be lost: its Context first, then Lost, on
// the goroutine that ends its epoch or session (lose, loseLocked), and a
// pause's settling (settle); the signals' channels, made only when asked
// for (chanLocked).

import (
	"github.com/shepherdzk/shepherd/internal/zkdelete"
)

// loseWithContext makes the hold lost as its epoch's or session's context
// says (it has ended: the cause is that context's).
func (h *Hold) loseWithContext() { h.lose(nil) }

// lose makes the hold lost, unless it was lost or released already. cause
// (matching ErrLost) is the Context's cause, unless the context the hold's
// derives from has ended first (then that one's cause is).
func (h *Hold) lose(cause error) {
	h.mu.Lock()
	fns := h.loseLocked(cause)
	h.mu.Unlock()
	runLost(fns)
}

// settle applies a signalled loss or pause (see settleLocked).
func (h *Hold) settle() {
	h.mu.Lock()
	fns := h.settleLocked()
	h.mu.Unlock()
	runLost(fns)
}

// closedChan is a closed channel: what a channel made when first asked
// for is, when asked for after its event.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// signalLocked closes *ch, or, if nobody has asked for it yet, makes it a
// closed channel (under h.mu).
func signalLocked(ch *chan struct{}) {
	if *ch == nil {
		*ch = closedChan
		return
	}
	if *ch != closedChan {
		close(*ch)
	}
}

// chanLocked is *ch, made if nobody had asked for it (under h.mu).
func chanLocked(ch *chan struct{}) chan struct{} {
	if *ch == nil {
		*ch = make(chan struct{})
	}
	return *ch
}

// runLost runs what waited for a loss.
func runLost(fns []func()) {
	if len(fns) > 0 {
		// Observers (a log, the session's observer) run on a goroutine of
		// their own: lose may run on a goroutine that must not block.
		go func() {
			for _, f := range fns {
				f()
			}
		}()
	}
}

// loseLocked closes lost and ends the hold's context (neither calls the
// connection nor blocks), and returns what waits for the loss.
func (h *Hold) loseLocked(cause error) []func() {
	if h.released || h.state == lost {
		return nil
	}
	if h.state == paused {
		h.pz.end()
	}
	h.state = lost
	if cause == nil {
		cause = ErrLost
	}
	// Context first (and those derived from it): whoever sees Lost closed
	// sees Context ended too.
	h.endContextLocked(cause)
	signalLocked(&h.lost)
	fns := h.onLost
	h.onLost = nil
	if len(h.attached) > 0 {
		// What the hold attached ends with it, as soon as its session can
		// delete (if the session is gone, its ephemeral nodes went with
		// it): its nodes may stay (a kept place, a release to come), the
		// attached ones may not.
		attached, ep, recipe := h.attached, h.ep, h.recipe
		h.attached = nil
		fns = append(fns, func() { zkdelete.Start(false, h.sess, recipe, ep, nil, nil, attached, nil) })
	}
	h.onRead = nil
	if unwatch := h.unwatch; len(unwatch) > 0 {
		h.unwatch = nil
		fns = append(fns, func() { stopWatching(unwatch) })
	}
	return fns
}

// settleLocked applies a loss or a pause whose signal has fired (the
// epoch's or session's context is cancelled) but whose hook has not run yet
// (it runs right after the cancellation, on the goroutine that cancelled):
// whoever looks first applies it, the hook then finds nothing to do.
func (h *Hold) settleLocked() []func() {
	if h.released || h.state != held {
		return nil
	}
	switch {
	case h.pauses && h.ep.SessionContext().Err() != nil:
		return h.loseLocked(nil)
	case h.pauses && h.ep.Context().Err() != nil:
		h.pauseLocked(h.ep)
	case h.ep.Context().Err() != nil:
		return h.loseLocked(nil)
	}
	return nil
}

// whenLost runs f once the hold is lost (at once if it was), never if it is
// released first.
func (h *Hold) whenLost(f func()) {
	h.mu.Lock()
	if h.state != lost {
		h.onLost = append(h.onLost, f)
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	f()
}

// Lost is closed when the hold is, or may be, lost (see Hold), before any
// other client can be granted it, right after its Context ends (so a holder
// that sees Lost closed sees Context ended; one that sees Context end first
// reads why with context.Cause). Release never closes it: after a Release it
// stays open for good.
func (h *Hold) Lost() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return chanLocked(&h.lost)
}
