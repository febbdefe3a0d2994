package hold

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/shepherdzk/shepherd/observe"
)

// A hold's reports: its grant, pause, resume, release and loss, to the
// session's observer (session.WithObserver) and its logger.

// Observe reports the grant to the session's observer (recipe is "mutex",
// "semaphore", ...; wait is how long the acquisition took; position the place
// in line it joined at), and from then on the hold's pauses, resumes,
// release or loss.
func (h *Hold) Observe(recipe, path string, wait time.Duration, position int) {
	log := h.sess.Logger()
	if log.Enabled(context.Background(), slog.LevelDebug) {
		log.Debug(recipe+": acquired", "path", path, "node", h.nodes[0], "session", fmt.Sprintf("0x%x", h.sid),
			"wait", wait, "position", position)
	}
	h.mu.Lock()
	h.recipe, h.path, h.observed = recipe, path, true
	h.mu.Unlock()
	if log.Enabled(context.Background(), slog.LevelWarn) {
		h.whenLost(func() {
			log.Warn(recipe+": hold lost", "path", path, "node", h.nodes[0],
				"session", fmt.Sprintf("0x%x", h.sid), "held", time.Since(h.granted), "paused", h.lastPause())
		})
	}
	if !h.sess.Observed() {
		return
	}
	h.report(observe.Acquired, func(ev *observe.RecipeEvent) { ev.Wait, ev.Position = wait, position })
	h.whenLost(func() {
		h.report(observe.HoldLost, func(ev *observe.RecipeEvent) { ev.Held, ev.Paused = time.Since(h.granted), h.lastPause() })
	})
}

// report sends the hold's event of kind, set by set, to the session's
// observer, once the hold has been observed (Observe).
func (h *Hold) report(kind observe.RecipeEventKind, set func(*observe.RecipeEvent)) {
	h.mu.Lock()
	observed, recipe, path := h.observed, h.recipe, h.path
	h.mu.Unlock()
	if !observed || !h.sess.Observed() {
		return
	}
	ev := observe.RecipeEvent{Kind: kind, Recipe: recipe, Path: path, SessionID: h.sid}
	set(&ev)
	h.sess.Report(ev)
}
