package schedule

import (
	"fmt"
	"math"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shepherdzk/shepherd/session"
)

// Cron schedules: ticks at the activations of a cron expression, parsed by
// robfig/cron/v3's parser (its standard five fields, or six with seconds
// first, the @hourly-style descriptors, and a CRON_TZ= or TZ= prefix naming
// the time zone). Only the
// parser is used: ticks are numbered and due by ZooKeeper's clock as an
// interval schedule's are. Tick 0 is the first activation at or after the
// epoch, tick N+1 the first after tick N; the record keeps each started
// tick's due time (Record.Due), from which the leader counts on.

// NewCron returns a schedule at path for the candidate id whose ticks are
// the activations of the cron expression spec, for example "0 3 * * *"
// (each day at 03:00 UTC), "CRON_TZ=Europe/Paris 0 3 * * *" (03:00 in
// Paris, as robfig/cron reads daylight saving changes: on the day a time
// does not exist, it has no tick) or "*/10 * * * * *"
// (every ten seconds). A ParseCron error matches ErrInvalidArgument. Every candidate of a path must give
// the same spec. Everything else is as New's (misfire, catch-up, spacing).
func NewCron(sess *session.Session, path, id, spec string, opts ...Option) (*Schedule, error) {
	sched, err := ParseCron(spec)
	if err != nil {
		return nil, err
	}
	return newSchedule(sess, path, id, 0, &cronTimes{spec: spec, sched: sched}, opts...)
}

// cronParser reads robfig/cron/v3's standard five fields, or six with
// seconds first, the descriptors (@daily, @every 90s, ...) and a CRON_TZ=
// or TZ= prefix.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron checks a cron expression as NewCron reads it.
func ParseCron(spec string) (cron.Schedule, error) {
	s, err := cronParser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("schedule: %w: cron expression %q: %v", ErrInvalidArgument, spec, err)
	}
	return s, nil
}

// cronTimes are a cron schedule's activations.
type cronTimes struct {
	spec  string
	sched cron.Schedule
}

// never is the due time of a tick that never comes (a cron expression with
// no activation in the five years robfig/cron looks ahead).
const never = math.MaxInt64

// next is the first activation after t (ns since the Unix epoch), or never.
func (c *cronTimes) next(t int64) int64 {
	if t == never {
		return never
	}
	n := c.sched.Next(time.Unix(0, t).UTC())
	if n.IsZero() {
		return never
	}
	return n.UnixNano()
}

// anchor is a tick whose due time is known: the record's last started
// tick (Record.Due), or tick -1 "due" just before the epoch.
func (ld *leader) anchor() (int64, int64) {
	if ld.rec.N >= 0 && ld.rec.Due != 0 {
		return ld.rec.N, ld.rec.Due * int64(time.Millisecond)
	}
	return -1, ld.epoch - 1
}

// cronMemo is the last tick cronDue counted to, from an anchor's time.
type cronMemo struct{ from, n, t int64 }

// cronDue is tick n's due time, counted from the anchor (or from the last
// count from the same anchor, if nearer).
func (ld *leader) cronDue(n int64) int64 {
	an, at := ld.anchor()
	if n < an { // before the record's tick: count from the epoch
		an, at = -1, ld.epoch-1
	}
	from := at
	if m := ld.memo; m.from == from && m.n > an && m.n <= n {
		an, at = m.n, m.t
	}
	for ; an < n && at != never; an++ {
		at = ld.s.cron.next(at)
	}
	ld.memo = cronMemo{from: from, n: an, t: at}
	return at
}

// cronLatest is the latest tick due at now (-1 before tick 0 is due).
func (ld *leader) cronLatest(now int64) int64 {
	an, at := ld.anchor()
	if at > now { // the record's tick is not due yet: count from the epoch
		an, at = -1, ld.epoch-1
	}
	for {
		nx := ld.s.cron.next(at)
		if nx > now {
			return an
		}
		an, at = an+1, nx
	}
}
