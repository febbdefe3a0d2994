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
// another session (a plain handover, checked as any grant); then the next
// holder hands over to one stalled as the handover begins, healed once its
// session has ended (the server has expired it).
func handoverCutOff(h *harness) {
	h.linger.Store(true)
	defer h.linger.Store(false)
	h.handOver(false)
	h.handOver(true)
}

// handOver makes the holder hand over to a client of another session,
// cut off (stalled) just before the handover begins if cut.
func (h *harness) handOver(cut bool) {
	h.t.Helper()
	c := h.holder()
	hd := c.hold()
	succ := h.waiting(c)
	if hd == nil || hd.handOver == nil || succ == nil {
		h.t.Logf("handover: no leader to hand over (%v)", hd == nil)
		return
	}
	sid := succ.sess.SessionID()
	if cut {
		succ.proxy.Stall() // before it can hear of the handover
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*sessionTimeout)
		defer cancel()
		done <- hd.handOver(ctx, succ.id)
	}()
	if cut {
		h.sessionEnds(succ, sid, 10*time.Millisecond, nil)
		time.Sleep(sessionTimeout / 2) // past the server's expiry too
		succ.proxy.Heal()
	}
	select {
	case err := <-done:
		h.t.Logf("handover from %s to %s (cut off: %v): %v", c.id, succ.id, cut, err)
	case <-time.After(4 * sessionTimeout):
		h.dump()
		h.t.Fatalf("%s: the handover from %s to %s did not return", h.spec.name, c.id, succ.id)
	}
}

// waiting returns a client of another session than c's, in line (waiting
// for leadership), waiting a few seconds for one; nil if none.
func (h *harness) waiting(c *clientRun) *clientRun {
	var opts []election.Option
	if h.spec.name == "election-nonfair" {
		opts = append(opts, election.NonFair())
	}
	e, err := election.New(open(h.t, h.cluster.Servers()), h.path, "chaos-admin", opts...)
	if err != nil {
		return nil
	}
	var found *clientRun
	waitFor(5*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		ps, err := e.Participants(ctx)
		if err != nil {
			return false
		}
		for _, p := range ps {
			for _, o := range h.clients {
				if !p.Leader && p.ID == o.id && o.sess != c.sess && o.proxy != nil {
					found = o
					return true
				}
			}
		}
		return false
	})
	return found
}
