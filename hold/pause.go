package hold

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/session"
)

// A hold's pause (PauseOnDisconnect). See Hold for the states; this file is
// how a hold moves between them (its own-node watch is in ownwatch.go).
//
// Why a pause is safe: a hold is the existence of an ephemeral node of its
// session. While the session lives, the node lives (unless someone deletes
// it, which the own-node watch reports), so nobody else can be granted the
// hold. A paused hold resumes only in an epoch of the *same* session
// (Reconnected: the server accepted the session again, so it never expired)
// and after reading its node back; it is lost, never resumed, as soon as the
// session is lost, which the manager declares on its own clock before the
// server can expire it (session.lossMargin). In between, the holder is told
// not to act (Paused, Gate), and fenced writes wait at the gate.

// Paused returns a channel that is closed when the hold pauses: the
// connection was lost while the session may live (PauseOnDisconnect only;
// under StopOnDisconnect it never closes, the hold is lost instead). After a
// resume, Paused returns a new channel, open until the next pause: call it
// again each time round a loop. A typical holder:
//
//	for {
//		select {
//		case <-h.Paused():
//			// stop acting on the hold, then wait
//			if err := h.Gate(ctx); err != nil {
//				return err // lost (or released, or ctx ended)
//			}
//		case <-h.Lost():
//			return ErrLost
//		case <-work:
//			...
//		}
//	}
func (h *Hold) Paused() <-chan struct{} {
	h.settle()
	h.mu.Lock()
	defer h.mu.Unlock()
	return chanLocked(&h.pausingLocked().paused)
}

// IsPaused reports whether the hold is paused now.
func (h *Hold) IsPaused() bool {
	h.settle()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state == paused && !h.released
}

// Gate returns nil at once while the hold is held and not paused. While it
// is paused, Gate waits until it resumes (nil), is lost (an error matching
// ErrLost) or ctx ends (ctx.Err()). On a released hold it returns an error
// matching ErrNotHeld.
func (h *Hold) Gate(ctx context.Context) error {
	_, err := h.gate(ctx)
	return err
}

// gate is Gate, returning the epoch the hold is valid in.
func (h *Hold) gate(ctx context.Context) (*session.Epoch, error) {
	for {
		h.settle()
		h.mu.Lock()
		st, released, ep := h.state, h.released, h.ep
		var resumed chan struct{}
		if st == paused {
			resumed = h.pz.resumed
		}
		h.mu.Unlock()
		switch {
		case released:
			return nil, fmt.Errorf("%w: hold on %s was released", ErrNotHeld, h.nodes[0])
		case st == lost:
			return nil, fmt.Errorf("%w: hold on %s", ErrLost, h.nodes[0])
		case st == held:
			return ep, nil
		}
		select {
		case <-resumed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// lastPause is how long the current pause has lasted, or the last one did.
func (h *Hold) lastPause() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pz == nil {
		return 0
	}
	if h.state == paused {
		return time.Since(h.pz.at)
	}
	return h.pz.lasted
}

// epochEnded pauses the hold if ep is the epoch it is valid in (or loses
// it, if ep's session has ended too). It runs on the goroutine that ends ep
// (see Epoch.OnEnd): it must not block.
func (h *Hold) epochEnded(ep *session.Epoch) {
	h.mu.Lock()
	if h.released || h.state != held || h.ep != ep {
		h.mu.Unlock()
		return
	}
	// An epoch ended by its session's end (an expiry heard while connected,
	// Close) loses the hold at once: no pause first.
	fns := h.settleLocked()
	h.mu.Unlock()
	runLost(fns)
}

// pausing is a hold's pauses, made when first needed (a pause, or Paused
// asked): a hold that never pauses costs none of it.
type pausing struct {
	paused  chan struct{} // closed when the current (or next) pause begins (made when asked: Paused)
	resumed chan struct{} // closed when the current pause ends (resume, loss, release)
	at      time.Time     // when the current pause began
	lasted  time.Duration // how long the last pause lasted
}

// end ends the current pause (at a resume or a loss).
func (pz *pausing) end() {
	pz.lasted = time.Since(pz.at)
	close(pz.resumed)
}

// pausingLocked is h.pz, made if need be.
func (h *Hold) pausingLocked() *pausing {
	if h.pz == nil {
		h.pz = &pausing{}
	}
	return h.pz
}

// pauseLocked pauses the hold, which was valid in ep, and starts what
// resumes it.
func (h *Hold) pauseLocked(ep *session.Epoch) {
	pz := h.pausingLocked()
	h.state = paused
	pz.at = time.Now()
	pz.resumed = make(chan struct{})
	signalLocked(&pz.paused)
	go h.resume(ep)
}

// resume waits for the hold's session to be usable again and resumes the
// hold there, once its node is confirmed; or finds it lost.
func (h *Hold) resume(from *session.Epoch) {
	h.report(observe.HoldPaused, func(ev *observe.RecipeEvent) { ev.Held = time.Since(h.granted) })
	h.log(slog.LevelInfo, "hold paused (connection lost; kept while the session lives)")
	for {
		ep, err := h.sess.Wait(h.ctx) // ends at a loss or release
		if err != nil {
			return // closed: the session's end loses the hold
		}
		if ep.SessionID() != h.sid {
			h.lose(fmt.Errorf("%w: hold on %s: a new session", ErrLost, h.nodes[0])) // ours is gone (its end loses the hold too)
			return
		}
		// A pause that begins while the node is read is seen by this hook
		// once the hold is valid in ep (see epochEnded), and below before.
		stop := ep.OnEnd(func() { h.epochEnded(ep) })
		ok, err := h.confirm(ep)
		if err != nil {
			stop()
			select { // a connection problem: the next epoch
			case <-ep.Done():
				continue
			case <-h.ctx.Done():
				return
			}
		}
		if !ok {
			stop()
			h.lose(fmt.Errorf("%w: hold on %s: its node is gone", ErrLost, h.nodes[0]))
			return
		}
		h.mu.Lock()
		if h.released || h.state != paused || ep.Context().Err() != nil {
			again := !h.released && h.state == paused
			h.mu.Unlock()
			stop()
			if again {
				continue
			}
			return
		}
		h.ep = ep
		h.state = held
		h.pz.end()
		h.stopHooks = append(h.stopHooks, stop)
		h.pz.paused = nil // made when asked for
		pausedFor := h.pz.lasted
		h.mu.Unlock()
		h.report(observe.HoldResumed, func(ev *observe.RecipeEvent) { ev.Paused = pausedFor })
		h.log(slog.LevelInfo, "hold resumed (same session, node confirmed)", "paused", pausedFor)
		return
	}
}

// confirm reads the hold's node in ep: it is still there and still this
// hold's (its session's, and the same node: a fixed-name node has the
// token's creation zxid when the token is known).
func (h *Hold) confirm(ep *session.Epoch) (bool, error) {
	st, err := h.stat(h.ctx, ep)
	if err != nil {
		return false, err
	}
	return h.ours(h.nodes[0], st), nil
}

// ours reports whether st (nil: no node) is the hold's node: owned by its
// session and, for the first node (whose czxid is the token), created when
// the token says.
func (h *Hold) ours(node string, st *zk.Stat) bool {
	if st == nil || st.EphemeralOwner != h.sid {
		return false
	}
	if node != h.nodes[0] {
		return true
	}
	t := h.knownToken()
	return t == 0 || int64(t) == st.Czxid
}

func (h *Hold) log(level slog.Level, msg string, args ...any) {
	log := h.sess.Logger()
	if !log.Enabled(context.Background(), level) {
		return
	}
	h.mu.Lock()
	recipe, path := h.recipe, h.path
	h.mu.Unlock()
	if recipe == "" {
		recipe = "recipe"
	}
	if path == "" { // a hold never Observed (an election's): its node's parent
		path = h.nodes[0][:strings.LastIndex(h.nodes[0], "/")]
	}
	log.Log(context.Background(), level, recipe+": "+msg,
		append([]any{"path", path, "node", h.nodes[0], "session", fmt.Sprintf("0x%x", h.sid)}, args...)...)
}
