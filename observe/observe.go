// Package observe is the vocabulary of what shepherd's recipes report: a
// RecipeEvent and its RecipeEventKind. Recipes hand events to their session
// (session.Session.Report), which passes them on to the session's
// session.Observer, if it has one; package observe/prometheus turns them
// into metrics.
//
// The package depends on nothing of shepherd's, so that an observer, a
// recipe of one's own or an exporter can name the events without importing
// the session or a recipe.
package observe

import "time"

// RecipeEventKind says what happened to a recipe.
type RecipeEventKind int

// Kinds of recipe events.
const (
	// Acquired: a lock, lease or leadership was granted (Wait, Position).
	Acquired RecipeEventKind = iota + 1
	// Released: a hold was given up by its holder (Held).
	Released
	// HoldLost: a hold's loss signal fired (Held): the connection or session
	// was lost while it was held.
	HoldLost
	// Elected: leadership gained (Term).
	Elected
	// Revoked: a leader's callback returned after leadership ended (Term,
	// Took: from the loss signal to the callback's return).
	Revoked
	// CallbackStuck: a leader's callback overran its stop deadline (Term).
	CallbackStuck
	// OrphanCleanup: a node left by an abandoned or lost-answer create was
	// found and removed.
	OrphanCleanup
	// DeleteRetry: a release met a connection problem and is retried in the
	// background (guaranteed delete).
	DeleteRetry
	// HoldPaused: a hold riding through a disconnect (PauseOnDisconnect) was
	// paused (Held: how long it had been held).
	HoldPaused
	// HoldResumed: a paused hold resumed, its session back and its node
	// confirmed (Paused: how long it was paused).
	HoldResumed
	// Campaigning: an election's Run began campaigning at Path; the process
	// takes part in that election from now on, as a follower until Elected.
	Campaigning
	// ScheduleTakeover: a leadership of the schedule at Path read its record
	// and leads it from now on (Term; Tick and Outcome: the last tick
	// recorded and its outcome, "" while started; Interval; LastOK).
	ScheduleTakeover
	// TickStarted: a schedule's leader recorded a tick's start and runs its
	// job (Tick, Attempt, Term, Interval; Scheduled: when it was due; Lag:
	// how long after that it started, both on the ZooKeeper server's
	// clock).
	TickStarted
	// TickFinished: a tick's end was recorded (Tick, Attempt, Term,
	// Scheduled; Outcome: "ok", "error", "timeout", "cancelled" or
	// "interrupted" (left to the next leader: WithDrain); Took: how long
	// the job ran; LastOK).
	TickFinished
	// TicksSkipped: the catch-up policy skipped Count missed ticks, through
	// Tick.
	TicksSkipped
	// TickCaughtUp: a tick runs late under the catch-up policy, after Count
	// ticks were missed (Tick).
	TickCaughtUp
)

// String names k in snake case ("acquired", "hold_lost", ...), or returns
// "unknown".
func (k RecipeEventKind) String() string {
	switch k {
	case Acquired:
		return "acquired"
	case Released:
		return "released"
	case HoldLost:
		return "hold_lost"
	case Elected:
		return "elected"
	case Revoked:
		return "revoked"
	case CallbackStuck:
		return "callback_stuck"
	case OrphanCleanup:
		return "orphan_cleanup"
	case DeleteRetry:
		return "delete_retry"
	case HoldPaused:
		return "hold_paused"
	case HoldResumed:
		return "hold_resumed"
	case Campaigning:
		return "campaigning"
	case ScheduleTakeover:
		return "schedule_takeover"
	case TickStarted:
		return "tick_started"
	case TickFinished:
		return "tick_finished"
	case TicksSkipped:
		return "ticks_skipped"
	case TickCaughtUp:
		return "tick_caught_up"
	}
	if s, ok := handoverKindName(k); ok {
		return s
	}
	return "unknown"
}

// RecipeEvent is one thing a recipe did.
type RecipeEvent struct {
	Kind      RecipeEventKind
	Recipe    string // "mutex", "rwlock", "semaphore", "election", or a recipe of one's own
	Path      string // the recipe's path; for OrphanCleanup and DeleteRetry, the node's
	SessionID int64
	Time      time.Time
	Wait      time.Duration // Acquired: from the call to the grant
	Position  int           // Acquired: place in line when it joined (0: head)
	Held      time.Duration // Released, HoldLost, HoldPaused: how long it was held
	// Paused: HoldResumed, and HoldLost of a paused hold: how long it was
	// paused (0 for a hold lost while not paused).
	Paused time.Duration
	Took   time.Duration // Revoked: loss signal to callback return; TickFinished: the job's run; HandedOver: the handover's length
	Term   int64         // Elected, Revoked, CallbackStuck, HandedOver, and the schedule's kinds

	// The schedule's kinds (Recipe "schedule", Path the schedule's).
	Tick    int64 // the tick's number
	Attempt int   // TickStarted, TickFinished: 1, or more for a rerun
	// Outcome: TickFinished (and ScheduleTakeover): ok, error, timeout,
	// cancelled, interrupted; HandedOver: handed_over, refused, not_taken,
	// no_candidate or failed.
	Outcome   string
	Scheduled time.Time     // TickStarted, TickFinished: when the tick was due (server clock)
	Started   time.Time     // TickStarted, TickFinished, ScheduleTakeover: when the (last) tick started (server clock)
	Lag       time.Duration // TickStarted: from Scheduled to the start (server clock)
	Count     int64         // TicksSkipped, TickCaughtUp: ticks skipped or missed
	Interval  time.Duration // ScheduleTakeover, TickStarted: the time to the next tick
	// LastOK: ScheduleTakeover, TickFinished: when the last tick that ended
	// ok was started (server clock), or the schedule's epoch (tick 0's due
	// time) while none has.
	LastOK time.Time

	// Handovers (issue 38; see handover.go).
	Successor string // HandedOver: the successor's candidate id
	Reason    string // HandedOver: directed, yield, stop or operator
}
