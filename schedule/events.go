package schedule

import (
	"strings"
	"time"

	"github.com/shepherdzk/shepherd/observe"
)

// What the leader reports to the session's observer (package observe):
// a takeover, each tick's start and end, skipped and caught-up ticks.

func (ld *leader) report(ev observe.RecipeEvent) {
	if ld.s.sess == nil { // a decision tested alone
		return
	}
	ev.Recipe, ev.Path, ev.Term = "schedule", ld.s.sess.Path(ld.s.path), int64(ld.term)
	ev.SessionID = ld.s.sess.SessionID()
	ld.s.sess.Report(ev)
}

// takenOver reports that this leadership read the record and leads.
func (ld *leader) takenOver() {
	rec := ld.rec
	outcome := ""
	if rec.State == stateFinished {
		outcome = outcomeClass(rec.Outcome)
	}
	ld.s.log.Info("schedule: leading", "term", int64(ld.term), "last", rec.N, "state", rec.State, "outcome", rec.Outcome)
	ld.report(observe.RecipeEvent{Kind: observe.ScheduleTakeover, Tick: rec.N, Outcome: outcome,
		Started: ms(rec.Started), Interval: ld.interval(rec.N + 1), LastOK: ld.lastOK()})
}

// lastOK is the start of the last tick that ended ok, or the epoch.
func (ld *leader) lastOK() time.Time {
	switch {
	case ld.rec.LastOK != 0:
		return ms(ld.rec.LastOK)
	case ld.rec.State == stateFinished && ld.rec.Outcome == "ok": // a record older than LastOK
		return ms(ld.rec.Started)
	}
	return time.Unix(0, ld.epoch)
}

// interval is the time from tick n's due time to the next one's.
func (ld *leader) interval(n int64) time.Duration { return time.Duration(ld.due(n+1) - ld.due(n)) }

// outcomeClass is an outcome's first word: ok, error, timeout, cancelled
// or interrupted.
func outcomeClass(o string) string {
	c, _, _ := strings.Cut(o, ":")
	return c
}

func ms(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}
