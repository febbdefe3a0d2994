package chaos_test

// The handover fault (issue 38): a leader hands leadership over to another
// client, whose connection is stalled (a partition) the moment the
// handover begins, past its session's expiry. The election must go on
// (every client granted again) with never two leaders.

import (
	"context"
	"errors"
	"time"

	"github.com/shepherdzk/shepherd/election"
)

func init() {
	faults = append(faults, fault{name: "handover", elections: true, reps: 1, inject: handoverCutOff})
}

// handedOver returns a channel closed once l has been handed over (its
// Context ended with election.ErrHandedOver).
func handedOver(l *election.Leadership) <-chan struct{} {
	ch := make(chan struct{})
	context.AfterFunc(l.Context(), func() {
		if errors.Is(context.Cause(l.Context()), election.ErrHandedOver) {
			close(ch)
		}
	})
	return ch
}

// handoverCutOff is the fault: the holder hands over to a client of
// another session, stalled as the handover begins and healed once its
// session has ended (the server has expired it).
func handoverCutOff(h *harness) {
	h.linger.Store(true)
	defer h.linger.Store(false)
	c := h.holder()
	hd := c.hold()
	var succ *clientRun
	for _, o := range h.clients {
		if o.sess != c.sess && o.proxy != nil {
			succ = o
			break
		}
	}
	if hd == nil || hd.handOver == nil || succ == nil {
		h.t.Logf("handover: no leader to hand over (%v)", hd == nil)
		return
	}
	sid := succ.sess.SessionID()
	// Cut off as the handover begins: before it can hear of it.
	succ.proxy.Stall()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*sessionTimeout)
		defer cancel()
		done <- hd.handOver(ctx, succ.id)
	}()
	h.sessionEnds(succ, sid, 10*time.Millisecond, nil)
	time.Sleep(sessionTimeout / 2) // past the server's expiry too
	succ.proxy.Heal()
	select {
	case err := <-done:
		h.t.Logf("handover from %s to %s (cut off): %v", c.id, succ.id, err)
	case <-time.After(4 * sessionTimeout):
		h.dump()
		h.t.Fatalf("%s: the handover from %s to %s did not return", h.spec.name, c.id, succ.id)
	}
}
