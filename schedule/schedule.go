package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/zkpath"
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
	// interval (every); tick numbers would mean other times. Run fails with
	// it, before or after it is elected.
	ErrIntervalMismatch = recipe.NewError("schedule: interval differs from the one recorded at the path")
	// ErrBadRecord: the state node holds something other than a schedule's
	// record.
	ErrBadRecord = recipe.NewError("schedule: the state node does not hold a schedule record")
	// ErrNoRecord: the schedule has no record yet (it never had a leader).
	ErrNoRecord = recipe.NewError("schedule: no record yet")
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

// Misfire says what a new leader does with a tick recorded started and not
// finished: its leader was lost (crash, session expiry, partition) while
// the job ran, or before it could record the job's end.
type Misfire int

const (
	// RerunInterrupted runs the tick again, Attempt one higher (the
	// default): the job may have done part of its work, or all of it.
	RerunInterrupted Misfire = iota + 1
	// SkipInterrupted leaves the tick as it is (never run again): each
	// tick is started at most once.
	SkipInterrupted
)

func (m Misfire) String() string {
	switch m {
	case RerunInterrupted:
		return "RerunInterrupted"
	case SkipInterrupted:
		return "SkipInterrupted"
	}
	return fmt.Sprintf("Misfire(%d)", int(m))
}

type catchKind int8

const (
	catchSkip catchKind = iota + 1
	catchOnce
	catchAll
)

// CatchUp says what the leader does when ticks were missed: when, at the
// moment it decides what to run, more than one tick is due and not yet
// started (nobody led, the leader was paused, or the job ran for longer
// than the interval). A single due tick is not a miss: it runs, at most one
// interval late. The value is CatchUpSkip, CatchUpOnce or CatchUpAll(max).
type CatchUp struct {
	kind catchKind
	max  int
}

var (
	// CatchUpSkip runs none of the due ticks: the next to run is the next
	// one to come due, on time.
	CatchUpSkip = CatchUp{kind: catchSkip}
	// CatchUpOnce runs the latest due tick once, now, and skips the earlier
	// ones (the default, like a CronJob that runs the most recent missed
	// schedule once).
	CatchUpOnce = CatchUp{kind: catchOnce}
)

// CatchUpAll runs the due ticks one after the other, in order, but never
// more than max behind: when more than max are due, the oldest are skipped.
// max must be at least 1.
func CatchUpAll(max int) CatchUp { return CatchUp{kind: catchAll, max: max} }

func (c CatchUp) String() string {
	switch c.kind {
	case catchSkip:
		return "CatchUpSkip"
	case catchOnce:
		return "CatchUpOnce"
	case catchAll:
		return fmt.Sprintf("CatchUpAll(%d)", c.max)
	}
	return "CatchUp(invalid)"
}

// Option configures a Schedule. An invalid value makes New fail with an
// error matching ErrInvalidArgument.
type Option func(*config)

type config struct {
	misfire    Misfire
	catchUp    CatchUp
	minSpacing time.Duration
	runTimeout time.Duration
	election   []election.Option
	clock      func() time.Time
	hooks      hooks
	err        error
}

// hooks let tests see what the leader records.
type hooks struct {
	// finished is called after each attempt to record a tick's end, with
	// the record and the write's error.
	finished func(r Record, err error)
	// decided is called with the server's time of each decision.
	decided func(now time.Time)
}

func (c *config) setErr(err error) {
	if c.err == nil {
		c.err = err
	}
}

// WithMisfire sets what a new leader does with an interrupted tick
// (default RerunInterrupted).
func WithMisfire(m Misfire) Option {
	return func(c *config) {
		if m != RerunInterrupted && m != SkipInterrupted {
			c.setErr(fmt.Errorf("schedule: %w: misfire policy %v", ErrInvalidArgument, m))
			return
		}
		c.misfire = m
	}
}

// WithCatchUp sets what the leader does with missed ticks (default
// CatchUpOnce).
func WithCatchUp(p CatchUp) Option {
	return func(c *config) {
		if p.kind == 0 || (p.kind == catchAll && p.max < 1) {
			c.setErr(fmt.Errorf("schedule: %w: catch-up policy %v (CatchUpAll needs max >= 1)", ErrInvalidArgument, p))
			return
		}
		c.catchUp = p
	}
}

// WithMinSpacing makes a tick start no less than d after the previous one
// started (on the server's clock, across leaders): ShedLock's
// lockAtLeastFor. It spaces catch-up runs and a rerun after an
// interruption. d must not be negative (0: no spacing, the default).
func WithMinSpacing(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.setErr(fmt.Errorf("schedule: %w: min spacing %v", ErrInvalidArgument, d))
			return
		}
		c.minSpacing = d
	}
}

// WithRunTimeout ends the job's ctx d after the tick starts. The tick is
// then recorded finished when the job returns, with the outcome "timeout"
// (it is not run again). d must not be negative (0: no timeout, the
// default).
func WithRunTimeout(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.setErr(fmt.Errorf("schedule: %w: run timeout %v", ErrInvalidArgument, d))
			return
		}
		c.runTimeout = d
	}
}

// WithElection passes options to the schedule's election, for example
// election.WithDisconnectPolicy(session.PauseOnDisconnect) or
// election.WithStopDeadline.
func WithElection(opts ...election.Option) Option {
	return func(c *config) { c.election = append(c.election, opts...) }
}

// withClock sets the host clock the schedule may consult (tests inject a
// skewed one: no decision may depend on it).
func withClock(f func() time.Time) Option { return func(c *config) { c.clock = f } }

// withHooks sets test hooks.
func withHooks(h hooks) Option { return func(c *config) { c.hooks = h } }

// Schedule runs a job on the elected leader once per tick (see the package
// doc). Its methods are safe for concurrent use; Run is exclusive.
type Schedule struct {
	sess  *session.Session
	path  string // in the session's namespace
	state string // the record's node, in the session's namespace
	id    string
	every time.Duration
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
	c := config{misfire: RerunInterrupted, catchUp: CatchUpOnce, clock: time.Now}
	for _, o := range opts {
		if o == nil {
			c.setErr(fmt.Errorf("schedule: %w: nil option", ErrInvalidArgument))
			continue
		}
		o(&c)
	}
	if c.err != nil {
		return nil, c.err
	}
	if sess == nil {
		return nil, fmt.Errorf("schedule: %w: nil session", ErrInvalidArgument)
	}
	if err := zkpath.Validate(path); err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	if every < time.Millisecond {
		return nil, fmt.Errorf("schedule: %w: interval %v (at least 1ms)", ErrInvalidArgument, every)
	}
	e, err := election.New(sess, path+"/"+layout.ScheduleLeader, id, c.election...)
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	return &Schedule{sess: sess, path: path, state: path + "/" + layout.ScheduleState, id: id, every: every, cfg: c, e: e,
		log: sess.Logger().With("schedule", sess.Path(path), "id", id)}, nil
}

// Record is the schedule's state as its node holds it (JSON): the last
// tick started, and whether its end was recorded.
type Record struct {
	Every   string `json:"every"`             // the interval (time.Duration's String)
	Epoch   int64  `json:"epoch_ms"`          // tick 0's due time: the node's ctime (server clock, ms)
	N       int64  `json:"tick"`              // the last tick started; -1: none yet
	Attempt int    `json:"attempt,omitempty"` // its attempt
	State   string `json:"state"`             // "started" or "finished"
	Leader  string `json:"leader,omitempty"`  // the candidate id that started it
	Term    int64  `json:"term,omitempty"`    // that leadership's term
	Started int64  `json:"started_ms,omitempty"`
	Outcome string `json:"outcome,omitempty"` // of a finished tick: ok, timeout, cancelled, error: ...
}

const (
	stateStarted  = "started"
	stateFinished = "finished"
)

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
	// Fail fast on another schedule's record, before standing for election.
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

// Record reads the schedule's record as it is now (no sync: a read of the
// server this session talks to). A schedule that never had a leader has
// none: the error then matches ErrNoRecord. Epoch is the node's ctime.
func (s *Schedule) Record(ctx context.Context) (Record, error) {
	r, st, err := s.read(ctx)
	if errors.Is(err, zk.ErrNoNode) {
		return Record{}, fmt.Errorf("%w: %s", ErrNoRecord, s.state)
	}
	if err != nil {
		return Record{}, err
	}
	r.Epoch = st.Ctime
	return r, nil
}

// read reads the record and its node's Stat.
func (s *Schedule) read(ctx context.Context) (Record, *zk.Stat, error) {
	var data []byte
	var st *zk.Stat
	err := s.sess.Do(ctx, func(ep *session.Epoch) error {
		d, stat, err := ep.Conn().Get(s.sess.Path(s.state))
		data, st = d, stat
		return err
	})
	if err != nil {
		return Record{}, nil, err
	}
	r, err := s.decode(data)
	return r, st, err
}

func (s *Schedule) decode(data []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil || r.Every == "" {
		return Record{}, fmt.Errorf("%w: %s: %q", ErrBadRecord, s.state, truncate(string(data), 200))
	}
	if r.Every != s.every.String() {
		return Record{}, fmt.Errorf("%w: %s records every %s, this candidate has %v", ErrIntervalMismatch, s.state, r.Every, s.every)
	}
	return r, nil
}
