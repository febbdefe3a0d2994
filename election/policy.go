package election

// The options of priorities and handovers (issue 38); what they set is
// read by package handover (handover.Policy).

import (
	"fmt"
	"time"

	"github.com/shepherdzk/shepherd/election/internal/handover"
	"github.com/shepherdzk/shepherd/internal/line"
)

// extConfig is what the options of priorities and handovers set.
type extConfig struct {
	priority int
	attrs    map[string]string
	// handover is what the options of handovers set: WithHandOverTimeout,
	// HandOverOnStop and WithPreferredLeader.
	handover handover.Policy
}

// WithHandOverTimeout bounds each wait of a handover (default: the
// session's timeout): for the candidates between the leader and its
// successor to step aside (else the handover is refused, leadership kept),
// and, in a non-fair election, for the successor to take leadership (else
// the reservation is dropped and the others race, as after a resign). It
// must be positive.
func WithHandOverTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.setErr(fmt.Errorf("election: %w: handover timeout %v (must be positive)", ErrInvalidArgument, d))
			return
		}
		c.ext.handover.Timeout = d
	}
}

// HandOverOnStop makes Run hand leadership over when its ctx ends while
// this candidate leads, instead of only leaving the line: to the best
// candidate (highest priority, then line order), after waiting up to wait
// (0: not at all) for one of higher priority than its own to be in line — a
// rolling deploy's new version, started as the old one is told to stop.
// Leadership goes on meanwhile: OnElected's ctx is cancelled only once the
// successor is chosen and the way to it clear (or the handover has failed:
// then the candidate leaves the line as without this option). Run returns
// once the handover is made. Campaign ignores it (its caller hands over with
// Leadership.HandOver). wait must not be negative.
func HandOverOnStop(wait time.Duration) Option {
	return func(c *config) {
		if wait < 0 {
			c.setErr(fmt.Errorf("election: %w: handover wait %v (must not be negative)", ErrInvalidArgument, wait))
			return
		}
		c.ext.handover.OnStop, c.ext.handover.StopWait = true, wait
	}
}

// WithPreferredLeader makes this candidate's leaderships yield: while it
// leads, it watches the other candidates, and hands over (see
// Leadership.HandOver) to the best of them when that one has a strictly
// higher priority than its own, has been in line for window (as this leader
// has seen it), and this leader has led for window. So leadership moves to
// a better candidate by itself, but never flaps: two yields are at least
// window apart, and a candidate that joins and leaves within window never
// leads. A yield that fails (the handover refused, the candidate gone) is
// not tried again before the candidates change. Under Campaign, a yield
// ends the leadership as HandOver does (the candidate leaves the
// election). window must be positive.
func WithPreferredLeader(window time.Duration) Option {
	return func(c *config) {
		if window <= 0 {
			c.setErr(fmt.Errorf("election: %w: preferred-leader window %v (must be positive)", ErrInvalidArgument, window))
			return
		}
		c.ext.handover.YieldWindow = window
	}
}

// checkData checks that a candidate's node data fits (its id and
// attributes; a proclaimed value is checked when proclaimed).
func checkData(id string, x extConfig) error {
	data := encodeCandidate(id, candidateData{Priority: x.priority, Attributes: x.attrs})
	return line.CheckData(data)
}
