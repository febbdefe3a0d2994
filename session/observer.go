package session

import (
	"time"

	"github.com/shepherdzk/shepherd/observe"
)

// Observer receives what a session manager and the recipes built on it do,
// for metrics and tracing (see package observe/prometheus for an adapter). It
// is an interface of the core with no dependency: implement it to export to
// anything. The recipes' events are package observe's vocabulary.
type Observer interface {
	// SessionEvent is called with every state transition, in order, on a
	// goroutine of the observer's own (like a Listen function).
	SessionEvent(Event)
	// RecipeEvent is called by recipes, synchronously: it must not block.
	RecipeEvent(observe.RecipeEvent)
}

// WithObserver reports the session's state changes and its recipes' events
// to o.
func WithObserver(o Observer) Option { return func(c *config) { c.observer = o } }

// RecipeEvent is one thing a recipe did.
//
// Deprecated: use observe.RecipeEvent. The alias is kept until v0.3.
type RecipeEvent = observe.RecipeEvent

// RecipeEventKind says what happened to a recipe.
//
// Deprecated: use observe.RecipeEventKind. The alias is kept until v0.3.
type RecipeEventKind = observe.RecipeEventKind

// Kinds of recipe events, kept until v0.3.
const (
	// Deprecated: use observe.Acquired.
	Acquired = observe.Acquired
	// Deprecated: use observe.Released.
	Released = observe.Released
	// Deprecated: use observe.HoldLost.
	HoldLost = observe.HoldLost
	// Deprecated: use observe.Elected.
	Elected = observe.Elected
	// Deprecated: use observe.Revoked.
	Revoked = observe.Revoked
	// Deprecated: use observe.CallbackStuck.
	CallbackStuck = observe.CallbackStuck
	// Deprecated: use observe.OrphanCleanup.
	OrphanCleanup = observe.OrphanCleanup
	// Deprecated: use observe.DeleteRetry.
	DeleteRetry = observe.DeleteRetry
	// Deprecated: use observe.HoldPaused.
	HoldPaused = observe.HoldPaused
	// Deprecated: use observe.HoldResumed.
	HoldResumed = observe.HoldResumed
	// Deprecated: use observe.Campaigning.
	Campaigning = observe.Campaigning
)

// Observed reports whether the session has an observer (recipes skip the
// bookkeeping of events no one receives).
func (s *Session) Observed() bool { return s.cfg.observer != nil }

// Report hands a recipe event to the session's observer, if any, stamped
// with the current time if ev.Time is zero.
func (s *Session) Report(ev observe.RecipeEvent) {
	if s.cfg.observer == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	s.cfg.observer.RecipeEvent(ev)
}
