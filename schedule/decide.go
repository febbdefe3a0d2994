package schedule

import (
	"time"

	"github.com/shepherdzk/shepherd/observe"
)

// The leader's decisions: which tick is due, which to run now (its
// misfire and catch-up policies, MinSpacing), or how long to wait.

// due is the time tick n is due (ns since the Unix epoch, server clock).
func (ld *leader) due(n int64) int64 {
	if ld.s.cron != nil {
		return ld.cronDue(n)
	}
	return ld.epoch + n*int64(ld.s.every)
}

// latest is the latest tick due at now (-1 before the epoch).
func (ld *leader) latest(now int64) int64 {
	if ld.s.cron != nil {
		return ld.cronLatest(now)
	}
	if now < ld.epoch {
		return -1
	}
	return (now - ld.epoch) / int64(ld.s.every)
}

// decide says which tick to run now (wait 0), or how long to wait before
// deciding again (on the host's monotonic clock: a duration measured on
// the server's clock, so the host's wall clock does not matter).
func (ld *leader) decide(now int64) (n int64, attempt int, wait time.Duration) {
	if h := ld.s.cfg.hooks.decided; h != nil {
		h(time.Unix(0, now))
	}
	ld.caught = 0
	rec := ld.rec
	last := rec.N
	if rec.State == stateStarted {
		switch {
		case ld.mine != nil && same(rec, *ld.mine):
			return rec.N, rec.Attempt, 0 // our start landed; the job has not run
		case ld.s.cfg.misfire == RerunInterrupted:
			if w := ld.spacing(now); w > 0 {
				return 0, 0, w
			}
			return rec.N, rec.Attempt + 1, 0
		}
		// SkipInterrupted: the tick counts as done.
	}
	last = max(last, ld.skipped)
	latest := ld.latest(now)
	if latest <= last {
		return 0, 0, time.Duration(ld.due(last+1) - now)
	}
	next := latest // one tick due, or CatchUpOnce
	if missed := latest - last; missed > 1 {
		switch c := ld.s.cfg.catchUp; c.kind {
		case catchSkip:
			ld.skip(latest, missed)
			return 0, 0, time.Duration(ld.due(latest+1) - now)
		case catchOnce:
			ld.skip(latest-1, missed-1)
			ld.caught = missed
		case catchAll:
			next = last + 1
			ld.caught = missed
			if missed > int64(c.max) {
				next = latest - int64(c.max) + 1
				ld.skip(next-1, missed-int64(c.max))
			}
		}
	}
	if w := ld.spacing(now); w > 0 {
		return 0, 0, w
	}
	return next, 1, 0
}

// skip records (in memory) that ticks up to n are skipped.
func (ld *leader) skip(n, count int64) {
	if n > ld.skipped {
		ld.skipped = n
		ld.s.log.Info("schedule: missed ticks skipped", "through", n, "count", count, "policy", ld.s.cfg.catchUp)
		ld.report(observe.RecipeEvent{Kind: observe.TicksSkipped, Tick: n, Count: count})
	}
}

// spacing is how long the next start must wait for MinSpacing.
func (ld *leader) spacing(now int64) time.Duration {
	if ld.s.cfg.minSpacing == 0 || ld.rec.Started == 0 {
		return 0
	}
	return time.Duration(ld.rec.Started*int64(time.Millisecond) + int64(ld.s.cfg.minSpacing) - now)
}
