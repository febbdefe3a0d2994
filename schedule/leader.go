package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/recipe"
)

// The leader's side of a Run: its record, its clock (the server's) and its
// runs. Its decisions, which tick to run when, are in decide.go.

// leader is one leadership of a Run: it owns the record while it leads.
type leader struct {
	s    *Schedule
	r    *runner
	l    *election.Leadership
	term election.Term

	rec    Record
	loaded bool  // rec is the record as last read or written (else step reads it)
	ver    int32 // the record's version as last read or written
	epoch  int64 // ns since the Unix epoch: tick 0's due time
	// skipped: ticks up to this one were skipped by a catch-up policy of
	// this leadership (not recorded: a new leader decides again).
	skipped int64
	// mine is a start this leadership wrote (or tried to: its outcome may
	// be unknown) whose job has not run.
	mine *Record
	// done is the end of a job that ran and is still to be recorded.
	done      *Record
	announced bool          // the takeover is reported
	caught    int64         // the run decided is a catch-up after this many missed ticks
	took      time.Duration // how long the job of done ran
	memo      cronMemo      // a cron schedule's last count of due times
	// fresh, if not 0, is the server's time (ns) of the write just made:
	// the next decision takes it as "now" instead of asking again.
	fresh int64
}

// errEnded: the leadership has ended (lost, or Run is stopping).
var errEnded = errors.New("leadership ended")

// lead runs ticks while the leadership lasts. It returns a fatal error
// (not this schedule's record), or nil when the leadership ends.
func (ld *leader) lead(ctx context.Context) error {
	ld.skipped = -1
	var fails int
	for ctx.Err() == nil {
		err := ld.step(ctx)
		switch {
		case err == nil:
			fails = 0
			continue
		case errors.Is(err, errEnded) || ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrIntervalMismatch) || errors.Is(err, ErrBadRecord):
			return err
		case errors.Is(err, ErrLost):
			return nil // the leadership's ctx ends with it
		case errors.Is(err, recipe.ErrPaused):
			// The write's outcome is unknown: wait for the leadership to
			// resume, then read the record again.
			if err := ld.l.Gate(ctx); err != nil {
				return nil
			}
		default:
			fails++
			ld.s.log.Debug("schedule: retrying", "err", err)
			if !sleep(ctx, min(20*time.Millisecond<<min(fails, 6), time.Second)) {
				return nil
			}
		}
		if err := ld.load(ctx); err != nil {
			if errors.Is(err, ErrIntervalMismatch) || errors.Is(err, ErrBadRecord) {
				return err
			}
			ld.loaded = false // unknown: step loads again
		}
	}
	return nil
}

// step makes one move: load the record, record a job's end, wait for the
// next tick, or run one.
func (ld *leader) step(ctx context.Context) error {
	if !ld.loaded {
		return ld.load(ctx)
	}
	if ld.done != nil {
		return ld.finish(ctx)
	}
	if ld.r.stopping0() || closed(ld.l.RevokeRequested()) {
		// Stopping, or an operator asked for the leadership (shepherd
		// revoke -ask): between ticks, step down.
		return errEnded
	}
	now := ld.fresh // the time of the job's end, just recorded: no probe needed
	ld.fresh = 0
	if now == 0 {
		var err error
		if now, err = ld.probe(ctx); err != nil {
			return err
		}
	}
	n, attempt, wait := ld.decide(now)
	if wait > 0 {
		ld.s.log.Debug("schedule: waiting", "next", ld.rec.N+1, "for", wait)
		if !sleepOr(ctx, ld.r.runCtx, ld.l.RevokeRequested(), wait) {
			return errEnded
		}
		return nil // and confirm with a new server timestamp
	}
	return ld.run(ctx, n, attempt, now)
}

// load reads the record, creating it (tick 0 due now) when there is none.
// A leadership that has read a record and finds it gone (deleted by hand
// under it) writes back what it knows instead (restore): a new epoch would
// run tick 0 again at once and forget MinSpacing's last start.
func (ld *leader) load(ctx context.Context) error {
	rec, st, err := ld.s.read(ctx)
	if errors.Is(err, zk.ErrNoNode) {
		if ld.epoch != 0 {
			return ld.restore(ctx)
		}
		return ld.create(ctx)
	}
	if err != nil {
		return err
	}
	ld.set(rec, st)
	ld.reconcile()
	return nil
}

// create writes the first record, fenced: its node's ctime is the
// schedule's epoch. The Set in the same multi returns the Stat (a create's
// answer has none).
func (ld *leader) create(ctx context.Context) error {
	rec := ld.s.newRecord()
	rec.N, rec.State = -1, stateFinished
	data, _ := json.Marshal(rec)
	res, err := ld.l.Fenced(ctx, fence.Create(ld.s.state, data), fence.Set(ld.s.state, data, 0))
	if errors.Is(err, fence.ErrNodeExists) {
		return ld.load(ctx)
	}
	if err != nil {
		return err
	}
	ld.set(rec, res[1].Stat)
	ld.s.log.Info("schedule: created", "epoch", time.UnixMilli(res[1].Stat.Ctime).UTC())
	return nil
}

// restore writes back the record as this leadership last read or wrote
// it, epoch included, fenced: the node was deleted under a live leader.
// The schedule carries on from its last tick; a job's start or end whose
// write was lost with the node is reconciled as after any unknown outcome.
func (ld *leader) restore(ctx context.Context) error {
	rec := ld.rec
	rec.Epoch = ld.epoch / int64(time.Millisecond)
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	res, err := ld.l.Fenced(ctx, fence.Create(ld.s.state, data), fence.Set(ld.s.state, data, 0))
	if errors.Is(err, fence.ErrNodeExists) {
		return ld.load(ctx)
	}
	if err != nil {
		return err
	}
	ld.s.log.Warn("schedule: the record was deleted under the leader; written back from what it knew (to reset a schedule, stop every candidate first)",
		"tick", rec.N, "state", rec.State, "epoch", time.UnixMilli(rec.Epoch).UTC())
	ld.set(rec, res[1].Stat)
	ld.reconcile()
	return nil
}

func (ld *leader) set(rec Record, st *zk.Stat) {
	rec.Epoch = epochOf(rec, st)
	ld.rec, ld.ver, ld.epoch = rec, st.Version, rec.Epoch*int64(time.Millisecond)
	ld.loaded = true
	if !ld.announced {
		ld.announced = true
		ld.takenOver()
	}
}

// reconcile matches a freshly read record with what this leadership wrote
// or meant to write when a write's outcome was unknown.
func (ld *leader) reconcile() {
	if ld.done != nil {
		d := *ld.done
		switch {
		case ld.rec.State == d.State && ld.rec.Outcome == d.Outcome && same(ld.rec, d):
			ld.clearDone() // the end landed
		case ld.rec.State == stateStarted && same(ld.rec, d):
			// not landed: finish writes it again
		default:
			ld.s.log.Warn("schedule: the record changed under the leader; the job's end is not recorded", "tick", d.N)
			ld.clearDone()
		}
	}
	if ld.mine != nil && !(ld.rec.State == stateStarted && same(ld.rec, *ld.mine)) {
		ld.mine = nil // the start did not land: decide again
	}
}

// same reports whether a and b are the same attempt of the same tick by the
// same leadership.
func same(a, b Record) bool { return a.N == b.N && a.Attempt == b.Attempt && a.Term == b.Term }

// write writes rec fenced over the version last seen.
func (ld *leader) write(ctx context.Context, rec Record) (*zk.Stat, error) {
	rec.Epoch = ld.epoch / int64(time.Millisecond)
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	res, err := ld.l.Fenced(ctx, fence.Set(ld.s.state, data, ld.ver))
	if err != nil {
		return nil, err
	}
	ld.rec, ld.ver = rec, res[0].Stat.Version
	return res[0].Stat, nil
}

// probe asks the server for the time: a fenced write of the record as it
// is, with the version last seen (so it also confirms that the record has
// not changed and that the leadership holds). The answer's mtime is the
// ZooKeeper leader's clock, in milliseconds.
func (ld *leader) probe(ctx context.Context) (int64, error) {
	st, err := ld.write(ctx, ld.rec)
	if err != nil {
		return 0, err
	}
	now := st.Mtime * int64(time.Millisecond)
	if ld.s.log.Enabled(ctx, slog.LevelDebug) {
		ld.s.log.Debug("schedule: server time", "server", time.Unix(0, now).UTC(),
			"host-offset", ld.s.cfg.clock().Sub(time.Unix(0, now)))
	}
	return now, nil
}

// run records tick n's start (fenced, over the version read: no other
// leadership can have recorded anything since), runs the job, and keeps its
// end to be recorded.
func (ld *leader) run(ctx context.Context, n int64, attempt int, now int64) error {
	if !ld.r.beginJob() {
		return errEnded
	}
	if ld.mine == nil || !same(ld.rec, *ld.mine) || ld.rec.State != stateStarted {
		start := ld.s.newRecord()
		start.N, start.Attempt, start.State, start.Due = n, attempt, stateStarted, ld.due(n)/int64(time.Millisecond)
		start.Leader, start.Term, start.Started, start.LastOK = ld.s.id, int64(ld.term), now/int64(time.Millisecond), ld.rec.LastOK
		ld.mine = &start
		if _, err := ld.write(ctx, start); err != nil {
			ld.r.endJob()
			return err
		}
	}
	t := Tick{N: n, Scheduled: time.Unix(0, ld.due(n)), Attempt: attempt, Term: ld.term}
	ld.s.log.Info("schedule: tick", "tick", n, "attempt", attempt, "scheduled", t.Scheduled.UTC())
	if ld.caught > 0 {
		ld.report(observe.RecipeEvent{Kind: observe.TickCaughtUp, Tick: n, Count: ld.caught})
	}
	ld.report(observe.RecipeEvent{Kind: observe.TickStarted, Tick: n, Attempt: attempt, Scheduled: t.Scheduled,
		Started: ms(ld.rec.Started), Lag: time.Duration(ms(ld.rec.Started).UnixNano() - ld.due(n)), Interval: ld.interval(n)})
	begin := time.Now()
	outcome := ld.runJob(ctx, t)
	ld.took = time.Since(begin)
	end := ld.rec
	end.State, end.Outcome = stateFinished, outcome
	if outcome == "ok" {
		end.LastOK = end.Started
	}
	if strings.HasPrefix(outcome, outcomeInterrupted) {
		// Past the drain: left started, for the next leader's misfire
		// policy; the outcome says why.
		end.State = stateStarted
	}
	ld.mine, ld.done = nil, &end
	return ld.finish(ctx)
}

var (
	errTimeout = errors.New("schedule: run timeout")
	errDrained = errors.New("schedule: drain passed")
)

// outcomeInterrupted begins the outcome of a tick interrupted by a graceful
// stop past its drain (WithDrain); its record stays "started".
const outcomeInterrupted = "interrupted: "

// runJob runs the job and returns the outcome to record.
func (ld *leader) runJob(ctx context.Context, t Tick) string {
	jctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(ld.r.runCtx, func() {
		if !ld.s.cfg.hasDrain {
			cancel(context.Canceled)
			return
		}
		// Let the job finish within the drain, then interrupt it.
		tm := time.AfterFunc(ld.s.cfg.drain, func() { cancel(errDrained) })
		context.AfterFunc(jctx, func() { tm.Stop() })
	})
	defer stop()
	if d := ld.s.cfg.runTimeout; d > 0 {
		tm := time.AfterFunc(d, func() { cancel(errTimeout) })
		defer tm.Stop()
	}
	err := ld.r.job(jctx, t)
	switch cause := context.Cause(jctx); {
	case err == nil:
		return "ok"
	case errors.Is(cause, errDrained):
		return fmt.Sprintf("%sdrain %v passed: %s", outcomeInterrupted, ld.s.cfg.drain, truncate(err.Error(), 500))
	case errors.Is(cause, errTimeout):
		return "timeout: " + truncate(err.Error(), 500)
	case ld.r.runCtx.Err() != nil && !ld.s.cfg.hasDrain:
		return "cancelled: " + truncate(err.Error(), 500)
	}
	return "error: " + truncate(err.Error(), 500)
}

// finish records the end of the job that ran (ld.done), fenced over the
// version of its start: it lands only if the record still says this
// leadership started this attempt of the tick, so a tick is never recorded
// finished twice.
func (ld *leader) finish(ctx context.Context) error {
	end := *ld.done
	st, err := ld.write(ctx, end)
	if err == nil {
		ld.fresh = st.Mtime * int64(time.Millisecond)
	}
	if h := ld.s.cfg.hooks.finished; h != nil {
		h(end, err)
	}
	if err == nil {
		ld.report(observe.RecipeEvent{Kind: observe.TickFinished, Tick: end.N, Attempt: end.Attempt,
			Scheduled: time.Unix(0, ld.due(end.N)), Started: ms(end.Started), Outcome: outcomeClass(end.Outcome),
			Took: ld.took, LastOK: ld.lastOK()})
	}
	if err == nil || errors.Is(err, ErrLost) || ctx.Err() != nil {
		if err != nil {
			ld.s.log.Warn("schedule: the tick's end is not recorded: leadership lost", "tick", end.N, "err", err)
		}
		if ld.clearDone() && err == nil {
			return errEnded
		}
	}
	return err
}

// clearDone: the job's end is dealt with (recorded, or it cannot be). It
// reports whether Run is stopping.
func (ld *leader) clearDone() bool {
	ld.done = nil
	return ld.r.endJob()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	return sleepOr(ctx, context.Background(), nil, d)
}

// sleepOr is sleep, also ending early (false) when stop ends or revoke
// closes.
func sleepOr(ctx, stop context.Context, revoke <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-stop.Done():
		return false
	case <-revoke:
		return false
	}
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
