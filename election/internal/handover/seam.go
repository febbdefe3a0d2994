package handover

// The seam with package election: what a candidate's handovers are given
// of it (Config) and of each of its leaderships (Leadership), and what
// they read of a candidate's node (Said, Cand).

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/hold"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/race"
	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// Config is what a candidate's handovers know of it: the election's
// values (what they call of the candidate is Candidate). The values are
// read as the election's own code did before it was split; none of them
// is changed by the handovers. The handovers keep no copy: they
// ask their candidate (Candidate.HandoverConfig) each time, so that a
// candidate's handovers cost fewer bytes while it leads.
type Config struct {
	Sess     *session.Session
	Path     string // the election's full path (namespace included)
	ID       string // the candidate's id (the "by" of the records it makes)
	Fair     bool   // the fair layout (else the non-fair race)
	Names    recipe.Naming
	Priority int // the candidate's priority (WithPriority)
	Policy   Policy
	Errors   *Errors // the election's sentinels, returned by handovers
	// Race is the non-fair race for the leader node, and Layout its
	// path's check (before the registration's first write); the non-fair
	// layout's alone use them.
	Race   *race.Race
	Layout *line.PathCheck
}

// Candidate is what a candidate's handovers ask of it, implemented by the
// election's.
type Candidate interface {
	// HandoverConfig is the candidate's config.
	HandoverConfig() Config
	// Line is the candidate's line: listed in the fair layout; its Leave
	// (a guaranteed delete) removes a registration too.
	Line() *line.Line
	// InLine is the candidate's node while it waits or leads in the fair
	// line (ok false: none): its name and sequence number.
	InLine() (name string, seq int64, ok bool)
	// Data is the candidate's node data, saying also a proclaimed value
	// and, in a non-fair leader's node, the registration it hands over to
	// ("" for none: the data the candidate enters with).
	Data(value, handOverTo string) []byte
	// Said reads what a candidate's node data says.
	Said(data []byte) Said
	// Report reports an event of the election to the session's observer.
	Report(observe.RecipeEvent)
	// LeaveBounded leaves the line (the candidate's node deleted),
	// waiting at most one session timeout (and not past ctx).
	LeaveBounded(ctx context.Context)
	// Logger is the candidate's logger (made when asked: a logger with
	// the candidate's attributes is not kept with every candidate).
	Logger() *slog.Logger
}

// Errors are the election's sentinel errors, which handovers return
// (declared in package election, where its users read them). This
// package's comments call them by their names there: ErrNoCandidate,
// ErrHandOverRefused, ErrNotTaken, ErrHandedOver, ErrNotLeader.
type Errors struct {
	NoCandidate error // ErrNoCandidate
	Refused     error // ErrHandOverRefused
	NotTaken    error // ErrNotTaken
	HandedOver  error // ErrHandedOver: the cause of a handed-over leadership's Context
	NotLeader   error // ErrNotLeader
}

// Said is what a candidate's node data says, of what a handover reads.
type Said struct {
	ID       string
	Priority int
	// HandOverTo, in a non-fair leader's node, names the candidate the
	// leader is handing over to (its registration node): the racers watch
	// the leader's node, so the successor learns it will be the one let
	// through before the node goes (see reserve.go).
	HandOverTo string
}

// Leadership is one held leadership of the candidate, as its handovers
// see it: the election keeps one in each of its leaderships (no
// allocation of its own), set at the grant, and gives it to Watch and to
// the calls that hand it over.
type Leadership struct {
	Ctx  context.Context // the leadership's Context: it ends with it
	Hold *hold.Hold      // its grant: its session, what its release deletes with its node (Attach)
	Term hold.Token
	// Of is the election's leadership, for what a handover does to it.
	Of Leader

	// checks: the leader's reading of the election's record (leadwatch.go).
	checks            sync.Mutex
	checking, recheck bool
}

// name is the leadership's node, relative to the election's path (a child
// of it: the last element of its full path).
func (l *Leadership) name() string {
	n := l.Hold.Node()
	return n[strings.LastIndexByte(n, '/')+1:]
}

// Leader is what a handover does to a held leadership, implemented by the
// election's.
type Leader interface {
	// Ended is nil while the leadership holds; else the error of a call
	// on an ended leadership (matching ErrNotLeader and ErrLost).
	Ended() error
	// Fenced runs ops as one multi-op that lands only while the
	// leadership holds.
	Fenced(ctx context.Context, ops ...fence.Op) ([]zk.MultiResponse, error)
	// Release gives the leadership up as Resign does, its Context ending
	// with cause.
	Release(ctx context.Context, cause error) error
	// Cancel ends its Context with cause (Run's shutdown).
	Cancel(cause error)
}

// Cand is a candidate as a handover sees it.
type Cand struct {
	// Name is its node, relative to the election's path (a line node's
	// name, or "candidates/c-<guid>" in the non-fair registry).
	Name string
	Node string // its node's full path
	Seq  int64  // its sequence number in line (0 in the registry)
	// Shepherd: a node of shepherd's, which steps aside when asked (see
	// line.Name.Shepherd); another library's does not.
	Shepherd  bool
	ID        string
	Priority  int
	SessionID int64
	// Stat and Data are its node's, as read (the election's Participant
	// is made of them).
	Stat *zk.Stat
	Data []byte
}

// cand is the candidate whose node (name relative to the path, node the
// full path) holds data (its Stat st).
func (h *Handovers) cand(name, node string, seq int64, shepherd bool, st *zk.Stat, data []byte) Cand {
	s := h.of.Said(data)
	return Cand{Name: name, Node: node, Seq: seq, Shepherd: shepherd, ID: s.ID, Priority: s.Priority,
		SessionID: st.EphemeralOwner, Stat: st, Data: data}
}
