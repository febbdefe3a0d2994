// Package layout declares, once, what each kind of shepherd recipe keeps at
// its path: the stamp in the path's data, the fixed-name children, and the
// contender nodes of its waiting line. Every reader of layouts derives from
// these declarations: the recipes' refusals of one another's paths (before
// their first write there and after each grant), admin.Inspect, `shepherd
// status`, `shepherd ls` and `shepherd rm`, and the table in docs/layouts.md
// (TestLayoutTable keeps it true).
//
// The contender nodes' names are Curator's protected "_c_<guid>-lock-<seq>"
// and the other kinds (see package recipe), shared with Curator and Kazoo;
// the stamps and the fixed names are shepherd's own.
//
// Two kinds never share a path: each would grant a holder the other cannot
// see. The one exception is Kazoo's naming, whose Lock, WriteLock and
// Election all name their nodes "__lock__": a shepherd mutex, read-write
// lock and election that use Kazoo's names (recipe.KazooNaming) on one path
// form one line and exclude each other, as Kazoo's own recipes do.
//
// The kinds are declared here (layout.go); classify.go reads the evidence
// at a path, refuse.go answers it for a kind, and table.go draws the docs'
// tables.
package layout

// The non-fair mutex: one ephemeral node under its path, and the path's data
// is NonFairLockStamp followed by the guid of the last grant (its version is
// the grant's fence).
const (
	NonFairLockNode  = "nonfair-lock"
	NonFairLockStamp = "shepherd:mutex:nonfair "
)

// The non-fair election: as the non-fair mutex, with its own node and stamp.
const (
	NonFairLeaderNode  = "leader"
	NonFairLeaderStamp = "shepherd:election:nonfair "
)

// The semaphore: its path's data is SemaphoreStamp followed by maxLeases
// (decimal); its waiters queue in SemaphoreLocks (lock- nodes, as Curator's
// InterProcessSemaphoreV2), its holders' lease nodes are in SemaphoreLeases,
// and with slots each holder's claim is SemaphoreSlots/<n>.
const (
	SemaphoreStamp  = "shepherd:semaphore:v1 maxLeases="
	SemaphoreLocks  = "locks"
	SemaphoreLeases = "leases"
	SemaphoreSlots  = "slots"
)

// The schedule: its path's data is ScheduleStamp, an election at
// ScheduleLeader under its path, and its record (JSON) in ScheduleState.
const (
	ScheduleStamp  = "shepherd:schedule:v1"
	ScheduleLeader = "leader"
	ScheduleState  = "state"
)

// An election's priorities and handovers (issue 38, election's
// candidate.go and package election/internal/handover): a candidate's
// node data is its id, followed, when it has a priority, attributes or a
// proclaimed value, by CandidateSeparator and JSON. A pending handover is the ephemeral node
// ElectionHandOver under the election's path (JSON naming the successor).
// A non-fair election's candidates register as ephemeral children
// "c-<guid>" of ElectionCandidates (a container under the path).
const (
	CandidateSeparator = "\x00shepherd:candidate="
	ElectionHandOver   = "handover"
	ElectionCandidates = "candidates"
)

// Contender node kinds (the name's kind, as recipe.ParseName reads it).
const (
	lockKind      = "lock-"
	latchKind     = "latch-"
	leaseKind     = "lease-"
	readKind      = "__READ__"
	writeKind     = "__WRIT__"
	kazooLockKind = "__lock__"
	kazooReadKind = "__rlock__"
)

// Recipe is one kind of recipe's layout at its path.
type Recipe struct {
	// Name is the kind as status and ls print it: mutex, rwlock,
	// semaphore, election, schedule.
	Name string
	// Fair: the kind keeps a waiting line (or, for the semaphore and the
	// schedule, is built on one); false for a single-node race.
	Fair bool
	// Stamp, if not "", starts the path's data.
	Stamp string
	// Nodes are the fixed-name children the kind makes.
	Nodes []Node
	// Legacy, if set, are children whose presence together identifies a
	// path of the kind made before it had a Stamp (a schedule's, by releases
	// before v0.2).
	Legacy []string
	// Contenders are the kinds of the contender nodes of its line, directly
	// under the path (Curator's names, then Kazoo's).
	Contenders []string
	// Idle says what stays at the path when no one holds or waits.
	Idle string
}

// Node is a fixed-name child of a kind's path.
type Node struct {
	Name string
	// Ephemeral: a holder's node (else a container or a persistent
	// record). Two kinds use the name "leader": the non-fair election's
	// holder's node (ephemeral) and the schedule's election (a path).
	Ephemeral bool
	// Stamps: the child alone stamps its parent as the kind's path. Names
	// as common as a schedule's "leader" and "state" do not: an
	// application may have a child of that name (an election at
	// /services/cron/leader is no schedule at /services/cron).
	Stamps bool
	What   string
	// Recipes are the kinds of recipe that may be made at the child's
	// path (the schedule's election, at its "leader"); none for every
	// other child: a recipe there would write into another's layout (see
	// RefusePart).
	Recipes []*Recipe
	// Holds, for a container of contender nodes, are the contender kinds
	// the kind keeps in it (a semaphore's waiters in "locks", its leases in
	// "leases"): anything else there is another recipe's (see
	// RefuseInPart).
	Holds []string
}

// The kinds, each declared once.
var (
	FairMutex = &Recipe{Name: "mutex", Fair: true, Contenders: []string{lockKind, kazooLockKind},
		Idle: "nothing (an empty container, removed by the server)"}
	NonFairMutex = &Recipe{Name: "mutex", Stamp: NonFairLockStamp,
		Nodes: []Node{{Name: NonFairLockNode, Ephemeral: true, Stamps: true, What: "the holder's node"}},
		Idle:  "the path, persistent, its data the stamp (its version fences the grants)"}
	RWLock = &Recipe{Name: "rwlock", Fair: true, Contenders: []string{readKind, writeKind, kazooReadKind, kazooLockKind},
		Idle: "nothing (an empty container, removed by the server)"}
	Semaphore = &Recipe{Name: "semaphore", Fair: true, Stamp: SemaphoreStamp, Nodes: []Node{
		{Name: SemaphoreLocks, Stamps: true, What: "the waiters' line, a container", Holds: []string{lockKind}},
		{Name: SemaphoreLeases, Stamps: true, What: "the lease nodes, a container", Holds: []string{leaseKind}},
		{Name: SemaphoreSlots, What: "the slot claims, a container"}},
		Idle: "the path's data (maxLeases) until the server removes the empty containers"}
	FairElection = &Recipe{Name: "election", Fair: true, Contenders: []string{latchKind, kazooLockKind},
		Nodes: []Node{{Name: ElectionHandOver, Ephemeral: true, What: "a pending handover's record"}},
		Idle:  "nothing (an empty container, removed by the server)"}
	NonFairElection = &Recipe{Name: "election", Stamp: NonFairLeaderStamp,
		Nodes: []Node{{Name: NonFairLeaderNode, Ephemeral: true, Stamps: true, What: "the leader's node"},
			{Name: ElectionCandidates, Stamps: true, What: "the candidates' registrations, a container"},
			{Name: ElectionHandOver, Ephemeral: true, What: "a pending handover's record"}},
		Idle: "the path, persistent, its data the stamp (its version fences the grants)"}
	Schedule = &Recipe{Name: "schedule", Fair: true, Stamp: ScheduleStamp, Nodes: []Node{
		{Name: ScheduleLeader, What: "its election's path", Recipes: []*Recipe{FairElection, NonFairElection}},
		{Name: ScheduleState, What: "its record, persistent"}},
		Legacy: []string{ScheduleLeader, ScheduleState},
		Idle:   "the path (its data the stamp) and the record (state), persistent, once a tick has run"}
)

// Kinds are all the kinds, in the order a path is classified by (see
// Classify) and the docs list them.
var Kinds = []*Recipe{FairMutex, NonFairMutex, RWLock, Semaphore, FairElection, NonFairElection, Schedule}

// Mode is "fair" or "non-fair".
func (k *Recipe) Mode() string {
	if k.Fair {
		return "fair"
	}
	return "non-fair"
}

// String names the kind as a refusal does: "a non-fair mutex", "a semaphore".
func (k *Recipe) String() string {
	switch {
	case k == NonFairMutex || k == NonFairElection:
		return "a non-fair " + k.Name
	case k == FairMutex || k == FairElection:
		return "a fair " + k.Name
	case k == RWLock:
		return "a read-write lock"
	}
	return "a " + k.Name
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func hasKind(list []*Recipe, k *Recipe) bool {
	for _, x := range list {
		if x == k {
			return true
		}
	}
	return false
}

func hasNode(list []Node, name string) bool {
	for _, n := range list {
		if n.Name == name {
			return true
		}
	}
	return false
}

// short is data for a message: at most 64 bytes.
func short(d []byte) string {
	if len(d) > 64 {
		return string(d[:64]) + "…"
	}
	return string(d)
}
