package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/shepherdzk/shepherd/internal/race"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/election/internal/handover"
	"github.com/shepherdzk/shepherd/internal/construct"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// Errors, matched with errors.Is.
var (
	ErrInvalidPath     = recipe.ErrInvalidPath
	ErrInvalidID       = line.NewError("election: invalid candidate id")
	ErrInvalidArgument = recipe.ErrInvalidArgument
	ErrNotLeader       = line.NewError("election: not the leader")
	ErrBusy            = line.NewError("election: already campaigning")
	ErrNoLeader        = line.NewError("election: no leader")
	ErrStopDeadline    = line.NewError("election: OnElected did not return within the stop deadline")
	ErrClosed          = session.ErrClosed
	ErrLost            = session.ErrLost
	// ErrWrongKind: the path belongs to another kind of recipe, or to an
	// election of the other mode (fair or non-fair).
	ErrWrongKind = recipe.ErrWrongKind
)

// MaxIDLen bounds a candidate id (it is stored as the node's data).
const MaxIDLen = 1024

// Term identifies one leadership: the creation zxid of the leader's node,
// the leadership's fencing token. It is hold.Token (the election's name
// for it): terms grow strictly from one leadership to the next, and print in
// decimal, as the CLI's SHEPHERD_TOKEN and `shepherd status` do.
type Term = hold.Token

// Leader describes the current leader.
type Leader struct {
	ID        string // the candidate id
	Term      Term
	Node      string // the leader's node
	SessionID int64  // the leader's ZooKeeper session
	Priority  int    // the leader's priority (WithPriority)
	Value     string // what the leader proclaimed (Leadership.Proclaim), "" before
	attrs     string // its attributes (see Attributes), comparable
}

// Participant is one candidate in line.
type Participant struct {
	ID        string
	Node      string
	Seq       int64
	SessionID int64
	Leader    bool
	Priority  int       // the candidate's priority (WithPriority)
	Joined    time.Time // when its node was created (ZooKeeper's clock)
	attrs     string    // its attributes (see Attributes)
}

// Callbacks are what Run calls. Only OnElected is required.
type Callbacks struct {
	// OnElected runs when this candidate becomes leader. Its ctx is the
	// leadership's Context: cancelled the moment leadership may be lost (or
	// is given up); it must then return promptly. Returning early gives
	// leadership up (the candidate re-enters the line). Within it,
	// Election.Leadership returns the leadership (Lost, Validate, Fenced).
	OnElected func(ctx context.Context, term Term)
	// OnRevoked runs after OnElected has returned, each time.
	OnRevoked func()
	// OnPaused runs when leadership is paused (PauseOnDisconnect: the
	// connection was lost while the session may live): OnElected keeps
	// running, its ctx live, but must not act as leader until OnResumed
	// (Leadership.Gate waits for that). OnResumed runs when the same
	// session is back with the leader's node confirmed: leadership goes on,
	// same term. Both run on a goroutine of Run's, one at a time and in
	// order, and must not block for long. A paused leadership that is lost
	// ends as any loss: OnElected's ctx is cancelled; OnResumed is not
	// called.
	OnPaused  func()
	OnResumed func()
	// OnLeader runs when the leader seen by this candidate changes (ID "" when
	// there is none). It runs on Run's goroutine and must not block.
	OnLeader func(Leader)
}

// Option configures an Election. An invalid value makes New fail with an
// error matching ErrInvalidArgument.
type Option func(*config)

type config struct {
	fair         bool
	stopDeadline time.Duration
	onStuck      func(Term)
	names        recipe.Naming
	policy       session.DisconnectPolicy
	ext          extConfig // priorities and handovers (policy.go)
	err          error     // the first invalid option
}

func (c *config) setErr(err error) {
	if c.err == nil {
		c.err = err
	}
}

// NonFair makes candidates race for a single ephemeral node instead of queueing.
func NonFair() Option { return func(c *config) { c.fair = false } }

// WithStopDeadline sets how long OnElected may take to return after its ctx is
// cancelled before it is reported (default 10s). It must be positive.
func WithStopDeadline(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.setErr(fmt.Errorf("election: %w: stop deadline %v (must be positive)", ErrInvalidArgument, d))
			return
		}
		c.stopDeadline = d
	}
}

// WithStuckHandler sets a function called (once per leadership) when OnElected
// has not returned within the stop deadline — for example one that exits the
// process, as a leader that cannot stop must not go on.
func WithStuckHandler(f func(term Term)) Option { return func(c *config) { c.onStuck = f } }

// WithDisconnectPolicy sets what a lost connection does to this
// candidate's leaderships (default: the session's, see
// session.WithDisconnectPolicy). With session.StopOnDisconnect leadership
// ends at the disconnect (OnElected's ctx is cancelled; if the session
// survives with the node still at the head, the candidate is elected again
// at once, same term). With session.PauseOnDisconnect it is paused
// instead: OnElected keeps running with its ctx live, Callbacks.OnPaused
// and OnResumed are called, and Leadership.Gate blocks until the same
// session is back (see hold.Hold). The term never changes across a pause.
func WithDisconnectPolicy(p session.DisconnectPolicy) Option {
	return func(c *config) {
		if !p.Valid() {
			c.setErr(fmt.Errorf("election: %w: disconnect policy %v", ErrInvalidArgument, p))
			return
		}
		c.policy = p
	}
}

// WithNaming names the candidates' nodes as names says (recipe.CuratorNaming,
// the default: _c_<guid>-latch-<seq>, as Curator's LeaderLatch; or
// recipe.KazooNaming: <guid>__lock__<seq>, as Kazoo's Election, whose nodes
// hold the candidate's id as this election's do). A default-built Kazoo
// Election then sees shepherd's candidates and the path has one leader. A
// path is named one way only: a candidate finding nodes named the other way
// (or another recipe's) fails with ErrForeignRecipe. The non-fair mode has
// one node and no naming; it ignores this option.
func WithNaming(names recipe.Naming) Option {
	return func(c *config) {
		if !names.Valid() {
			c.setErr(fmt.Errorf("election: %w: names %v", ErrInvalidArgument, names))
			return
		}
		c.names = names
	}
}

// Election is one candidate in one election. Its methods are safe for
// concurrent use; Run and Campaign are exclusive.
type Election struct {
	sess         *session.Session
	path         string // full path, namespace included
	id           string
	names        recipe.Naming
	policy       session.DisconnectPolicy
	stopDeadline time.Duration
	onStuck      func(Term)
	ext          extConfig                          // priorities and handovers (policy.go)
	ho           atomic.Pointer[handover.Handovers] // their state, made when first needed (handovers; package handover; the seam: handover.go)

	mu      sync.Mutex
	mode    int
	node    *candidate // our node in line, if any
	leading *Leadership
	stuck   bool
	// stuckNow: OnElected is still running past its stop deadline.
	stuckNow bool
	// checkedIDs: the line was searched for our id once already.
	checkedIDs bool
	fair       bool // set by New (beside the other bools: packed)
	resignCh   chan struct{}
	leftCh     chan struct{} // closed by Run once a leadership's end is dealt with
	// Each mode makes only what it uses (a held leadership's heap is
	// counted: bench/cmd/holdscale): the fair mode its line's check of the
	// path; the non-fair mode its race and its registration's check.
	single   *race.Race      // the non-fair race (nil: fair)
	layout   *line.PathCheck // the fair line's check of the path (nil: non-fair)
	nfLayout *line.PathCheck // the non-fair registration's (nil: fair)
}

// candidate is our node, bound to the session that created it.
type candidate struct {
	ep    *session.Epoch // the epoch it was created in (its session's)
	path  string         // full path
	name  string
	seq   int64
	sid   int64
	czxid int64
	// hold is the node's last grant of leadership (nil before the first):
	// releasing it deletes the node (guarded in the non-fair race).
	hold *hold.Hold
	// guid is the non-fair race's attempt that won the node.
	guid string
	// node is the line's node of a fair candidate (with the line as listed
	// with its create), used by the goroutine that campaigns with it; nil in
	// non-fair mode.
	node *line.Node
}

// New returns a candidate with the given id for the election at path. It does
// no I/O. The id must be non-empty valid UTF-8 without "/" and at most
// MaxIDLen bytes. A nil session, an invalid path or id, or an invalid
// option is an error (ErrInvalidArgument, ErrInvalidPath, ErrInvalidID).
func New(sess *session.Session, path, id string, opts ...Option) (*Election, error) {
	c := config{fair: true, stopDeadline: 10 * time.Second}
	construct.Apply("election", &c, opts, c.setErr)
	if c.err != nil {
		return nil, c.err
	}
	if err := construct.Check("election", sess, path); err != nil {
		return nil, err
	}
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	if err := checkData(id, c.ext); err != nil {
		return nil, err
	}
	e := &Election{sess: sess, path: sess.Path(path), id: id, fair: c.fair, names: c.names, policy: c.policy,
		stopDeadline: c.stopDeadline, onStuck: c.onStuck, ext: c.ext}
	if e.fair {
		e.layout = line.NewPathCheck(layout.FairElection)
	} else {
		e.single = &race.Race{Sess: sess, Recipe: "election", Path: e.path, Name: leaderChild, Stamp: nonFairStamp,
			Layout: layout.NonFairElection, OnDisconnect: c.policy}
		e.nfLayout = line.NewPathCheck(layout.NonFairElection)
	}
	return e, nil
}

// logger is the candidate's logger: the session's, with the election's path
// and the candidate's id. It is made when something is logged (rarely: a
// term's start and end), not kept: a handler's copy with these attributes
// would cost every Election while it lasts.
func (e *Election) logger() *slog.Logger {
	return e.sess.Logger().With("election", e.path, "id", e.id)
}

// ValidateID reports why id cannot be a candidate id.
func ValidateID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidID)
	case len(id) > MaxIDLen:
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidID, MaxIDLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidID)
	}
	for _, r := range id {
		if r == '/' || r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w %q: contains %q", ErrInvalidID, id, r)
		}
	}
	return nil
}

// ID is this candidate's id.
func (e *Election) ID() string { return e.id }

// IsLeader reports whether this candidate holds leadership now (granted and
// not yet possibly lost).
func (e *Election) IsLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading != nil && e.leading.ho.Ctx.Err() == nil
}

// isNoNode reports ZooKeeper's "no node".
func isNoNode(err error) bool { return errors.Is(err, zk.ErrNoNode) }

func (e *Election) report(ev observe.RecipeEvent) {
	ev.Recipe, ev.Path = "election", e.path
	if cur, ok := e.sess.Current(); ok {
		ev.SessionID = cur.SessionID()
	}
	e.sess.Report(ev)
}

// Healthy is a liveness check for a process that runs this candidate (like
// client-go's HealthzAdaptor): it reports an error when OnElected is still
// running past its stop deadline after leadership was lost (a leader that
// cannot stop must not go on; the error matches ErrStopDeadline), or when the session has been Suspended for
// longer than maxSuspended (0: no bound).
func (e *Election) Healthy(maxSuspended time.Duration) error {
	e.mu.Lock()
	stuck := e.stuckNow
	e.mu.Unlock()
	if stuck {
		return fmt.Errorf("election %s: %w: it has not returned %v after leadership was lost", e.path, ErrStopDeadline, e.stopDeadline)
	}
	if st, since := e.sess.StateSince(); maxSuspended > 0 && st == session.Suspended && time.Since(since) > maxSuspended {
		return fmt.Errorf("election %s: ZooKeeper connection suspended for %v (bound %v)", e.path,
			time.Since(since).Round(time.Millisecond), maxSuspended)
	}
	return nil
}

// ErrSequenceExhausted: the path's sequence counter has run out and the line
// of candidates has no order (see recipe.ErrSequenceExhausted): Campaign and
// Run fail closed.
var ErrSequenceExhausted = recipe.ErrSequenceExhausted

// ErrForeignRecipe: the path holds nodes named by another library or
// naming, or another recipe's (see WithNaming and recipe.ErrForeignRecipe):
// Campaign and Run fail closed.
var ErrForeignRecipe = recipe.ErrForeignRecipe
