// Package schedule runs a job on one process of a fleet, once per tick of
// an interval: the elected leader runs it, and a record in ZooKeeper says
// which tick was started and finished, so that a new leader continues where
// the last one stopped.
//
//	s, err := schedule.New(sess, "/jobs/compact", "worker-a", time.Hour)
//	err = s.Run(ctx, func(ctx context.Context, t schedule.Tick) error {
//		// tick t.N, due at t.Scheduled; pass t.Term to what you write
//		return compact(ctx, t.Term)
//	})
//
// Every candidate runs Run with the same path and interval. Under path the
// schedule keeps an election ("leader", see package election) and its
// record ("state", a persistent node holding JSON, see Record; read it with
// Schedule.Record, or with Inspect, which needs no candidate and also reads
// the leader and the next tick due: 'shepherd status' uses it). Run
// campaigns until its ctx ends; the leader runs the job.
//
// NewCron makes a schedule whose ticks are a cron expression's activations
// instead (robfig/cron/v3's syntax, time zones included): numbered, due and
// decided by ZooKeeper's clock as below, tick 0 being the first activation
// at or after the epoch; the misfire and catch-up policies are the same.
//
// # Ticks come from ZooKeeper's clock
//
// Tick N is due at the schedule's epoch plus N intervals; the epoch is the
// creation time of the state node (its ctime, set by the ZooKeeper server
// when the first leader created it), and tick 0 is due then. The leader's
// "now" is always a server timestamp: the mtime of one of its own fenced
// writes of the record (ZooKeeper stamps each write with the time of the
// ensemble's leader, in milliseconds). To wait for the next tick the leader
// sleeps the remaining duration on its host's monotonic clock, then asks
// the server again and runs the tick only if the server says it is due
// (else it waits the difference again). A host's wall clock is never read
// for a decision: candidates whose clocks differ by minutes agree on which
// tick is due and never run one twice or skip one because of the skew. What
// is assumed: host clocks tick at the server's rate (a duration measured on
// the host is about as long on the server), and the ZooKeeper servers'
// clocks agree with each other (a ZooKeeper leader change moves "now" by the
// offset between the old and the new server's clock; a clock stepped back
// delays ticks, one stepped forward makes them due early, or missed).
//
// # What is guaranteed
//
// A tick is recorded finished at most once, across all leaders and
// processes, and a job runs only after its tick's start is recorded. Both
// records are fenced writes (see election.Leadership.Fenced): each lands
// only while the leader's leadership holds on the server and only over the
// record's version the leader last read or wrote, so two leaderships can
// never both record the start of the same attempt of a tick, and the end of
// a tick is recorded only by the leadership that recorded its start, and
// only once. A leader whose leadership has ended cannot record anything:
// its write fails with an error matching ErrLost.
//
// The job's ctx ends when leadership may be lost (the connection or the
// session is lost; under PauseOnDisconnect only the session), after the run
// timeout, and when Run's ctx ends. Whatever the job returns while
// leadership holds is recorded as the tick's end (state "finished", outcome
// "ok", "error: ...", "timeout: ..." or "cancelled: ..."), and the tick is
// never run again: a failed job is not retried by this package. A tick is
// left "started" only when its leader could not record the end: its
// leadership was lost while the job ran (a crash, an expired session, a
// partition) or before its end was written. A new leader finds it so and
// follows the misfire policy:
//
//   - RerunInterrupted (the default) runs it again with Attempt one higher.
//     The tick's job has then been started twice. The first run may have
//     done none, part or all of its work; it may even still be running in
//     the old process (its ctx is cancelled at the loss, but the job must
//     return on its own) and its writes to anything but ZooKeeper can land
//     after the second run's. Make the job idempotent per tick (key its
//     effects by Tick.N) and fence its writes with Tick.Term (a resource
//     that has seen a higher term rejects a lower one). Attempt tells the
//     job it is a rerun.
//   - SkipInterrupted leaves it: every tick is started at most once, and an
//     interrupted one is never finished.
//
// The default is RerunInterrupted because a schedule's job usually exists
// for its effect (a report, a compaction, a sync), and a tick cut short by
// a crash then did not happen; a job that must never run twice for a tick
// and may be skipped chooses SkipInterrupted.
//
// # Missed ticks
//
// When the leader decides what to run and more than one tick is due and not
// started (nobody led for a while, the leadership was paused, or the job ran
// longer than an interval), ticks were missed. The catch-up policy says
// which run: CatchUpOnce (the default) runs only the latest due tick, now;
// CatchUpSkip runs none of them, the next to run is the next to come due;
// CatchUpAll(max) runs them all, oldest first, never more than max behind.
// One due tick is not a miss: it runs, at most one interval late. An
// interrupted tick rerun under RerunInterrupted runs before the missed ones
// are considered. CatchUpOnce is the default as it is CronJob's behaviour
// within its startingDeadlineSeconds, and what a periodic job usually
// wants after an outage: one run now, not a burst of stale ones. A job may
// look at Tick.Scheduled to decide whether a late tick is still worth it.
//
// WithMinSpacing keeps a tick from starting sooner than a duration after
// the previous one started (by the server's clock, across leaders);
// WithRunTimeout bounds a job's run.
//
// # Disconnects
//
// With WithElection(election.WithDisconnectPolicy(session.PauseOnDisconnect))
// leadership rides through a lost connection while the session may live: the
// job's ctx is not cancelled, and the record's writes wait at the
// leadership's gate until the same session is back. A pause delays the
// ticks that fall due meanwhile (the catch-up policy then applies), never
// runs one twice. Under the default StopOnDisconnect a lost connection ends
// leadership at once, and the tick in flight is interrupted.
//
// Run's ctx ending is a graceful stop: no new tick starts, the job in flight
// is cancelled and its return recorded, then the candidate leaves the
// election, so the next leader continues with the next tick without
// waiting for a session timeout and without rerunning anything.
// That drops the tick in flight: its job was cut short, and it is recorded
// finished ("cancelled: ..."). For a rolling deploy of candidates, WithDrain
// keeps it: the job in flight runs on for up to the drain and its end is
// recorded as usual; past the drain its ctx is cancelled and, once it
// returns, the tick is recorded interrupted (left "started", outcome
// "interrupted: ..."), so the next leader reruns it under RerunInterrupted.
// Either way the old leader leaves the election only after its job has
// returned, so the tick never runs in two places at once.
//
// # Compared with ShedLock and CronJob
//
// ShedLock guards a job scheduled on every node with a lock that expires
// after lockAtMostFor, a guess at the longest run: a run longer than the
// guess overlaps the next, and a crashed node's lock holds the job up until
// it expires. Here the bound is the ZooKeeper session: a dead leader is
// replaced within the session timeout, and a leader that loses its
// leadership is told at once (its job's ctx ends), before another is
// elected. ShedLock's lockAtLeastFor is WithMinSpacing; its usingDbTime
// (take time from the database, not the hosts) is what this package always
// does with ZooKeeper's time. ShedLock has no record of a tick, so it cannot
// tell a missed or interrupted run from a done one; this package can.
//
// A Kubernetes CronJob with concurrencyPolicy Forbid is the closest model:
// one leader runs one job at a time, and a tick that comes due while the job
// runs waits for it (Allow and Replace are not offered: a new tick never
// starts beside or instead of a running one). startingDeadlineSeconds is
// the catch-up policy: CronJob runs the latest missed schedule once if it
// is within the deadline, as CatchUpOnce does (with a deadline of one
// interval for the tick due now, see above); CatchUpSkip is a deadline too
// short for any missed tick; CatchUpAll(max) has no CronJob counterpart
// (Quartz's misfire instructions name both). Like Quartz's
// requestsRecovery, the misfire policy says what happens to a run whose
// executor died.
//
// # What is not guaranteed
//
// The job's effects outside ZooKeeper are not fenced by the record: an
// effect in flight when the leader lost its session can land after a new
// leader started (see RerunInterrupted above). A job that does not return
// when its ctx ends keeps running: its leadership's end is reported by the
// election (see election.WithStopDeadline), and no new tick starts in that
// process until it returns. A tick runs late when nobody can lead, when the
// ZooKeeper ensemble is unavailable, or while leadership is paused.
// Deleting the state node while a leader leads does not reset the schedule:
// a leadership that has read the record writes it back from what it knows
// (the same epoch, the last tick and its start, so MinSpacing still holds),
// logs a warning, and carries on with the next tick; tick 0 does not run
// again. To reset a schedule, stop every candidate, then delete the node:
// the next leader, having read no record, creates it with a new epoch and
// starts from tick 0.
package schedule
