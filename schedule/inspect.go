package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/construct"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/session"
)

// Leadership is the candidate's leadership while it leads, else nil: a
// job that runs something outside the process (a command) follows its
// pauses under PauseOnDisconnect with Paused and Gate.
func (s *Schedule) Leadership() *election.Leadership { return s.e.Leadership() }

// Status is what Inspect reads at a schedule's path.
type Status struct {
	Path   string
	Every  time.Duration   // 0 for a cron schedule
	Cron   string          // a cron schedule's expression
	Record Record          // Epoch is tick 0's due time (see Record)
	Leader election.Leader // the zero Leader when none
	// NextN is the next tick to come due after the record's (N+1), due at
	// NextDue = epoch + NextN intervals, on the ZooKeeper server's clock
	// (the leader may skip it under a catch-up policy if it is missed); a
	// cron schedule's NextDue is its next activation after tick N (zero if
	// it has none in the next five years).
	NextN   int64
	NextDue time.Time
}

// Inspect reads the schedule at path (as given to New, under the session's
// namespace): its record and its leader, with no candidate of its own and
// without knowing the interval (the record holds it). It reports ok false,
// and no error, when path holds no schedule record (nothing there, or
// another recipe).
func Inspect(ctx context.Context, sess *session.Session, path string) (st *Status, ok bool, err error) {
	if err := construct.Check("schedule", sess, path); err != nil {
		return nil, false, err
	}
	var data []byte
	var stat *zk.Stat
	err = sess.Do(ctx, func(ep *session.Epoch) error {
		d, s, err := ep.Conn().Get(sess.Path(path + "/" + layout.ScheduleState))
		data, stat = d, s
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var r Record
	if json.Unmarshal(data, &r) != nil {
		return nil, false, nil
	}
	r.Epoch = epochOf(r, stat)
	st = &Status{Path: path, Cron: r.Cron, Record: r, NextN: r.N + 1}
	switch {
	case r.Cron != "" && r.Every == "":
		sched, err := ParseCron(r.Cron)
		if err != nil {
			return nil, false, nil
		}
		ld := &leader{s: &Schedule{cron: &cronTimes{spec: r.Cron, sched: sched}}, rec: r, epoch: r.Epoch * int64(time.Millisecond)}
		if due := ld.due(st.NextN); due != never {
			st.NextDue = time.Unix(0, due).UTC()
		}
	default:
		every, err := time.ParseDuration(r.Every)
		if err != nil || every <= 0 {
			return nil, false, nil
		}
		st.Every = every
		st.NextDue = time.UnixMilli(r.Epoch).Add(time.Duration(st.NextN) * every).UTC()
	}
	if e, err := election.New(sess, path+"/"+layout.ScheduleLeader, "inspect"); err == nil {
		l, err := e.Leader(ctx)
		switch {
		case err == nil:
			st.Leader = l
		case !errors.Is(err, election.ErrNoLeader) && !errors.Is(err, zk.ErrNoNode):
			return nil, false, err
		}
	}
	return st, true, nil
}
