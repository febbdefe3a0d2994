package session

import "time"

// Observer receives what a session manager and the recipes built on it do,
// for metrics and tracing (see package observe/prometheus for an adapter). It
// is an interface of the core with no dependency: implement it to export to
// anything.
type Observer interface {
	// SessionEvent is called with every state transition, in order, on a
	// goroutine of the observer's own (like a Listen function).
	SessionEvent(Event)
	// RecipeEvent is called by recipes, synchronously: it must not block.
	RecipeEvent(RecipeEvent)
}

// WithObserver reports the session's state changes and its recipes' events
// to o.
func WithObserver(o Observer) Option { return func(c *config) { c.observer = o } }

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
)

var kindNames = map[RecipeEventKind]string{Acquired: "acquired", Released: "released", HoldLost: "hold_lost",
	Elected: "elected", Revoked: "revoked", CallbackStuck: "callback_stuck", OrphanCleanup: "orphan_cleanup",
	DeleteRetry: "delete_retry", HoldPaused: "hold_paused", HoldResumed: "hold_resumed", Campaigning: "campaigning"}

func (k RecipeEventKind) String() string {
	if s, ok := kindNames[k]; ok {
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
	Took   time.Duration // Revoked: loss signal to callback return
	Term   int64         // Elected, Revoked, CallbackStuck
}

// Observed reports whether the session has an observer (recipes skip the
// bookkeeping of events no one receives).
func (s *Session) Observed() bool { return s.cfg.observer != nil }

// Report hands a recipe event to the session's observer, if any.
func (s *Session) Report(ev RecipeEvent) {
	if s.cfg.observer == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	s.cfg.observer.RecipeEvent(ev)
}
