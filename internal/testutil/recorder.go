package testutil

import (
	"sync"

	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/session"
)

// Recorder is a session observer (session.WithObserver) that keeps every
// recipe event.
type Recorder struct {
	mu     sync.Mutex
	events []observe.RecipeEvent
}

// SessionEvent implements session.Observer (state changes are not kept).
func (r *Recorder) SessionEvent(session.Event) {}

// RecipeEvent implements session.Observer.
func (r *Recorder) RecipeEvent(ev observe.RecipeEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

// Seen reports whether an event of kind was reported.
func (r *Recorder) Seen(kind observe.RecipeEventKind) bool { return r.Count(kind, "", "") > 0 }

// Count is how many events of kind were reported for recipe at path ("":
// any).
func (r *Recorder) Count(kind observe.RecipeEventKind, recipe, path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.events {
		if ev.Kind == kind && (recipe == "" || ev.Recipe == recipe) && (path == "" || ev.Path == path) {
			n++
		}
	}
	return n
}

// Events is the events of kind reported for path ("": any), in order.
func (r *Recorder) Events(kind observe.RecipeEventKind, path string) []observe.RecipeEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []observe.RecipeEvent
	for _, ev := range r.events {
		if ev.Kind == kind && (path == "" || ev.Path == path) {
			out = append(out, ev)
		}
	}
	return out
}

// Reset forgets the events reported so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = nil
}

// All is every event reported so far.
func (r *Recorder) All() []observe.RecipeEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]observe.RecipeEvent(nil), r.events...)
}
