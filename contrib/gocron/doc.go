// Package gocron runs github.com/go-co-op/gocron/v2 schedulers on shepherd:
// an Elector and a Locker for gocron's distributed options, backed by
// ZooKeeper through a shepherd session.
//
// It is a module of its own (github.com/shepherdzk/shepherd/contrib/gocron),
// so that shepherd's core does not depend on gocron.
//
// # Locker: each scheduled run once
//
// Every instance schedules the job; gocron asks the Locker before each run.
// The Locker names the run by its scheduled time, read on ZooKeeper's clock
// (not the host's: the time of a write), and claims it with a
// version-fenced write of the job's record: the first instance to claim a run runs it, the others are told
// ErrAlreadyRun and skip it. Claims only move forward, so a run is claimed
// at most once, whatever the instances' clocks, their splay, and whatever
// happens to the instance running it (a crash, a stop): the others claim
// the next runs without waiting for it.
//
//	l, err := gocron.NewLocker(sess, "/jobs/gocron", "host-a",
//		gocron.JobEvery("report", time.Minute))
//	s, err := gocronv2.NewScheduler(gocronv2.WithDistributedLocker(l))
//	_, err = s.NewJob(gocronv2.DurationJob(time.Minute), gocronv2.NewTask(report),
//		gocronv2.WithName("report"))
//
// A run's name is the first activation of the job's times (JobEvery's
// multiples of an interval since the Unix epoch, or JobCron's cron
// expression) at or after the server's time of the claim less the
// tolerance (WithTolerance): an instance whose clock is early or late by
// less than the tolerance names the same run as the others. The tolerance
// must be less than half the time between two runs.
//
// What it does not do: a run claimed by an instance that dies is not run
// again (at most once; see package schedule for a schedule that reruns an
// interrupted tick), and runs of different times may overlap when a run
// outlasts the interval (use gocron's WithSingletonMode within a process).
//
// # Elector: only the leader runs
//
// An Elector campaigns in a shepherd election; IsLeader returns nil only
// while this instance's leadership holds: elected, not paused (under
// PauseOnDisconnect), and confirmed on the server (a sync and a read of its
// node: a process resumed after a stop learns there that its session is
// gone). Runs due while no instance leads (between a leader's crash and its
// session's expiry) are skipped; use the Locker where every run counts.
package gocron
