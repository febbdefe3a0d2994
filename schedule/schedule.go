package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/construct"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// Errors, matched with errors.Is.
var (
	ErrInvalidPath     = recipe.ErrInvalidPath
	ErrInvalidArgument = recipe.ErrInvalidArgument
	ErrLost            = session.ErrLost
	ErrClosed          = session.ErrClosed
	// ErrIntervalMismatch: the schedule's record was written with another
	// interval (every) or cron expression; tick numbers would mean other
	// times. Run fails with
	// it, before or after it is elected.
	ErrIntervalMismatch = line.NewError("schedule: interval differs from the one recorded at the path")
	// ErrBadRecord: the state node holds something other than a schedule's
	// record.
	ErrBadRecord = line.NewError("schedule: the state node does not hold a schedule record")
	// ErrNoRecord: the schedule has no record yet (it never had a leader).
	ErrNoRecord = line.NewError("schedule: no record yet")
)

// Tick is one run of the job.
type Tick struct {
	// N is the tick's number: tick N is due at the schedule's epoch (the
	// creation time of its state node, on the ZooKeeper leader's clock)
	// plus N intervals. The first tick is 0.
	N int64
	// Scheduled is when tick N was due, on the ZooKeeper server's clock.
	Scheduled time.Time
	// Attempt is 1, or more for a tick run again after its leader was
	// lost while it ran (RerunInterrupted).
	Attempt int
	// Term is the fencing token of the leadership that runs the tick
	// (see election.Term): pass it to what the job writes.
	Term election.Term
}

// Schedule runs a job on the elected leader once per tick (see the package
// doc). Its methods are safe for concurrent use; Run is exclusive.
type Schedule struct {
	sess  *session.Session
	path  string // in the session's namespace
	state string // the record's node, in the session's namespace
	id    string
	every time.Duration // 0 for a cron schedule
	cron  *cronTimes    // a cron schedule's activations, else nil
	cfg   config
	e     *election.Election
	log   *slog.Logger
}

// New returns a schedule at path for the candidate id, ticking every every
// (at least a millisecond: the server's clock counts milliseconds). It
// does no I/O. Its candidates queue at path+"/leader" (an election, see
// package election), its record is the node path+"/state". Every candidate
// of a path must use the same every.
func New(sess *session.Session, path, id string, every time.Duration, opts ...Option) (*Schedule, error) {
	if every < time.Millisecond {
		return nil, fmt.Errorf("schedule: %w: interval %v (at least 1ms)", ErrInvalidArgument, every)
	}
	return newSchedule(sess, path, id, every, nil, opts...)
}

// newSchedule makes an interval schedule (cron nil) or a cron schedule.
func newSchedule(sess *session.Session, path, id string, every time.Duration, cron *cronTimes, opts ...Option) (*Schedule, error) {
	c := config{misfire: RerunInterrupted, catchUp: CatchUpOnce, clock: time.Now}
	construct.Apply("schedule", &c, opts, c.setErr)
	if c.err != nil {
		return nil, c.err
	}
	if err := construct.Check("schedule", sess, path); err != nil {
		return nil, err
	}
	e, err := election.New(sess, path+"/"+layout.ScheduleLeader, id, c.election...)
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	return &Schedule{sess: sess, path: path, state: path + "/" + layout.ScheduleState, id: id, every: every, cron: cron, cfg: c, e: e,
		log: sess.Logger().With("schedule", sess.Path(path), "id", id)}, nil
}

// Run campaigns for the schedule's leadership until ctx ends, and while it
// leads runs job once per due tick (see the package doc). job's ctx ends
// when leadership may be lost (not at a pause under PauseOnDisconnect),
// after the run timeout, or when Run's ctx ends; its return (nil or an
// error) is recorded as the tick's end, unless leadership was lost first.
// When ctx ends, Run stops starting ticks, waits for the job in flight to
// return and records its end, then leaves the election (so the next
// candidate continues with the next tick) and returns nil. It returns
// ErrIntervalMismatch or ErrBadRecord when the record at the path is not
// this schedule's, ErrClosed when the session is closed.
func (s *Schedule) Run(ctx context.Context, job func(ctx context.Context, t Tick) error) error {
	if job == nil {
		return fmt.Errorf("schedule: %w: nil job", ErrInvalidArgument)
	}
	if s.e == nil {
		return construct.NotMade("schedule", "a Schedule not made by New")
	}
	// Another kind of recipe's path is refused before anything is written
	// there (see package layout), then the path is stamped as a schedule's;
	// another schedule's record is refused before standing for election.
	if err := line.ClaimPath(ctx, s.sess, layout.Schedule, s.sess.Path(s.path)); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("schedule: %w", err)
	}
	if _, _, err := s.read(ctx); err != nil && !errors.Is(err, zk.ErrNoNode) {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	r := &runner{s: s, job: job, runCtx: ctx}
	// The election outlives ctx until the job in flight has returned and
	// its end is recorded: only a leadership that holds can record it.
	ectx, ecancel := context.WithCancel(context.WithoutCancel(ctx))
	defer ecancel()
	r.stopElection = ecancel
	stop := context.AfterFunc(ctx, r.shutdown)
	defer stop()
	err := s.e.Run(ectx, election.Callbacks{OnElected: r.onElected})
	r.mu.Lock()
	fatal := r.fatal
	r.mu.Unlock()
	if fatal != nil {
		return fatal
	}
	if err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	return nil
}

// runner is one Run.
type runner struct {
	s            *Schedule
	job          func(context.Context, Tick) error
	runCtx       context.Context
	stopElection context.CancelFunc

	mu       sync.Mutex
	inJob    bool
	stopping bool
	fatal    error
}

// shutdown: Run's ctx has ended. Without a job in flight, leave at once.
func (r *runner) shutdown() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopping = true
	if !r.inJob {
		r.stopElection()
	}
}

// beginJob reports whether a job may start (Run's ctx has not ended).
func (r *runner) beginJob() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping {
		return false
	}
	r.inJob = true
	return true
}

// endJob: the job's end is dealt with; it reports whether Run is stopping.
func (r *runner) endJob() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inJob = false
	if r.stopping {
		r.stopElection()
	}
	return r.stopping
}

func (r *runner) onElected(lctx context.Context, term election.Term) {
	l := r.s.e.Leadership()
	if l == nil || l.Term() != term {
		return // ended already
	}
	ld := &leader{s: r.s, r: r, l: l, term: term}
	err := ld.lead(lctx)
	// The job has returned (lead runs it): whatever lead could not record,
	// no job is in flight now.
	r.mu.Lock()
	r.inJob = false
	if err != nil && r.fatal == nil {
		r.fatal = err
	}
	stop := r.stopping || err != nil
	r.mu.Unlock()
	if stop {
		r.stopElection()
	}
}

func (r *runner) stopping0() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopping
}
