package schedule

import (
	"fmt"
	"time"

	"github.com/shepherdzk/shepherd/election"
)

// Misfire says what a new leader does with a tick recorded started and not
// finished: its leader was lost (crash, session expiry, partition) while
// the job ran, or before it could record the job's end.
type Misfire int

const (
	// RerunInterrupted runs the tick again, Attempt one higher (the
	// default): the job may have done part of its work, or all of it.
	RerunInterrupted Misfire = iota + 1
	// SkipInterrupted leaves the tick as it is (never run again): each
	// tick is started at most once.
	SkipInterrupted
)

func (m Misfire) String() string {
	switch m {
	case RerunInterrupted:
		return "RerunInterrupted"
	case SkipInterrupted:
		return "SkipInterrupted"
	}
	return fmt.Sprintf("Misfire(%d)", int(m))
}

type catchKind int8

const (
	catchSkip catchKind = iota + 1
	catchOnce
	catchAll
)

// CatchUp says what the leader does when ticks were missed: when, at the
// moment it decides what to run, more than one tick is due and not yet
// started (nobody led, the leader was paused, or the job ran for longer
// than the interval). A single due tick is not a miss: it runs, at most one
// interval late. The value is CatchUpSkip, CatchUpOnce or CatchUpAll(max).
type CatchUp struct {
	kind catchKind
	max  int
}

var (
	// CatchUpSkip runs none of the due ticks: the next to run is the next
	// one to come due, on time.
	CatchUpSkip = CatchUp{kind: catchSkip}
	// CatchUpOnce runs the latest due tick once, now, and skips the earlier
	// ones (the default, like a CronJob that runs the most recent missed
	// schedule once).
	CatchUpOnce = CatchUp{kind: catchOnce}
)

// CatchUpAll runs the due ticks one after the other, in order, but never
// more than max behind: when more than max are due, the oldest are skipped.
// max must be at least 1.
func CatchUpAll(max int) CatchUp { return CatchUp{kind: catchAll, max: max} }

func (c CatchUp) String() string {
	switch c.kind {
	case catchSkip:
		return "CatchUpSkip"
	case catchOnce:
		return "CatchUpOnce"
	case catchAll:
		return fmt.Sprintf("CatchUpAll(%d)", c.max)
	}
	return "CatchUp(invalid)"
}

// Option configures a Schedule. An invalid value makes New fail with an
// error matching ErrInvalidArgument.
type Option func(*config)

type config struct {
	misfire    Misfire
	catchUp    CatchUp
	minSpacing time.Duration
	runTimeout time.Duration
	drain      time.Duration
	hasDrain   bool // WithDrain was given
	election   []election.Option
	clock      func() time.Time
	hooks      hooks
	err        error
}

// hooks let tests see what the leader records.
type hooks struct {
	// finished is called after each attempt to record a tick's end, with
	// the record and the write's error.
	finished func(r Record, err error)
	// decided is called with the server's time of each decision.
	decided func(now time.Time)
}

func (c *config) setErr(err error) {
	if c.err == nil {
		c.err = err
	}
}

// WithMisfire sets what a new leader does with an interrupted tick
// (default RerunInterrupted).
func WithMisfire(m Misfire) Option {
	return func(c *config) {
		if m != RerunInterrupted && m != SkipInterrupted {
			c.setErr(fmt.Errorf("schedule: %w: misfire policy %v", ErrInvalidArgument, m))
			return
		}
		c.misfire = m
	}
}

// WithCatchUp sets what the leader does with missed ticks (default
// CatchUpOnce).
func WithCatchUp(p CatchUp) Option {
	return func(c *config) {
		if p.kind == 0 || (p.kind == catchAll && p.max < 1) {
			c.setErr(fmt.Errorf("schedule: %w: catch-up policy %v (CatchUpAll needs max >= 1)", ErrInvalidArgument, p))
			return
		}
		c.catchUp = p
	}
}

// WithMinSpacing makes a tick start no less than d after the previous one
// started (on the server's clock, across leaders): ShedLock's
// lockAtLeastFor. It spaces catch-up runs and a rerun after an
// interruption. d must not be negative (0: no spacing, the default).
func WithMinSpacing(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.setErr(fmt.Errorf("schedule: %w: min spacing %v", ErrInvalidArgument, d))
			return
		}
		c.minSpacing = d
	}
}

// WithRunTimeout ends the job's ctx d after the tick starts. The tick is
// then recorded finished when the job returns, with the outcome "timeout"
// (it is not run again). d must not be negative (0: no timeout, the
// default).
func WithRunTimeout(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.setErr(fmt.Errorf("schedule: %w: run timeout %v", ErrInvalidArgument, d))
			return
		}
		c.runTimeout = d
	}
}

// WithDrain makes Run's ctx ending (a graceful stop: SIGTERM in a
// deploy) let the job in flight run on for up to d: if it returns within
// d, its end is recorded as usual and the leadership is handed over; if
// not, its ctx is cancelled and, once it returns, the tick is recorded
// interrupted (state "started", outcome "interrupted: ..."), so the next
// leader runs it again under RerunInterrupted (Attempt one higher) or
// leaves it under SkipInterrupted. WithDrain(0) interrupts at once.
// Without WithDrain, a graceful stop cancels the job at once and records
// its return as the tick's end ("cancelled: ..."), never run again. d must
// not be negative.
func WithDrain(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.setErr(fmt.Errorf("schedule: %w: drain %v", ErrInvalidArgument, d))
			return
		}
		c.drain, c.hasDrain = d, true
	}
}

// WithElection passes options to the schedule's election, for example
// election.WithDisconnectPolicy(session.PauseOnDisconnect) or
// election.WithStopDeadline.
func WithElection(opts ...election.Option) Option {
	return func(c *config) { c.election = append(c.election, opts...) }
}

// withClock sets the host clock the schedule may consult (tests inject a
// skewed one: no decision may depend on it).
func withClock(f func() time.Time) Option { return func(c *config) { c.clock = f } }

// withHooks sets test hooks.
func withHooks(h hooks) Option { return func(c *config) { c.hooks = h } }
