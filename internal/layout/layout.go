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
package layout

import (
	"fmt"
	"strings"
)

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

// Seen is what a path shows: its data and its children.
type Seen struct {
	Data     []byte
	Children []Child
}

// Child is one child of a path.
type Child struct {
	Name string
	// Ephemeral: the child is a session's node. Known (Stat read) only
	// for fixed names two kinds share (Ambiguous); false otherwise.
	Ephemeral bool
	// Contender is the child's contender kind if its name parses as a
	// contender's ("lock-", ...), "" otherwise.
	Contender string
}

// Ambiguous reports whether a child named name needs its Stat read to be
// classified: a fixed name that two kinds use, one for a holder's node and
// one for a path.
func Ambiguous(name string) bool { return name == NonFairLeaderNode }

// Evidence is one thing at a path that belongs to some kinds.
type Evidence struct {
	// What it is, for a message: `data "shepherd:semaphore:v1 maxLeases=3"`,
	// `child "nonfair-lock" (the holder's node)`.
	What string
	// Kinds are the kinds it belongs to (more than one only for Kazoo's
	// "__lock__", shared by design).
	Kinds []*Recipe
	// Contender is the contender kind of a line's node ("" for a stamp or a
	// fixed-name child).
	Contender string
}

// Classify returns what at a path belongs to which kinds: its data's stamp,
// its fixed-name children, its contender nodes. Children no kind declares
// (another application's, a name that does not parse) are no evidence.
func Classify(s Seen) []Evidence {
	var ev []Evidence
	for _, k := range Kinds {
		if k.Stamp != "" && strings.HasPrefix(string(s.Data), k.Stamp) {
			ev = append(ev, Evidence{What: fmt.Sprintf("data %q", short(s.Data)), Kinds: []*Recipe{k}})
		}
	}
	for _, c := range s.Children {
		e := Evidence{}
		for _, k := range Kinds {
			if c.Contender != "" && has(k.Contenders, c.Contender) {
				e.Kinds = append(e.Kinds, k)
				e.What = fmt.Sprintf("child %q (a %s contender's node)", c.Name, c.Contender)
				e.Contender = c.Contender
			}
			for _, n := range k.Nodes {
				if n.Stamps && n.Name == c.Name && (!Ambiguous(c.Name) || n.Ephemeral == c.Ephemeral) {
					e.Kinds = append(e.Kinds, k)
					e.What = fmt.Sprintf("child %q (%s)", c.Name, n.What)
				}
			}
		}
		if len(e.Kinds) > 0 {
			ev = append(ev, e)
		}
	}
	for _, k := range Kinds {
		if len(k.Legacy) > 0 && hasAll(s.Children, k.Legacy) {
			ev = append(ev, Evidence{What: fmt.Sprintf("children %q (a %s made before its stamp)", k.Legacy, k.Name),
				Kinds: []*Recipe{k}})
		}
	}
	return ev
}

// hasAll reports whether children include every name (none of them a
// session's node).
func hasAll(children []Child, names []string) bool {
	for _, n := range names {
		found := false
		for _, c := range children {
			found = found || (c.Name == n && !c.Ephemeral)
		}
		if !found {
			return false
		}
	}
	return true
}

// KindOf returns the kind a path is, by the first evidence Classify finds
// (nil: no kind's), and the other kinds whose evidence is there too (a path
// that mixes kinds, which no shepherd recipe makes).
func KindOf(ev []Evidence) (k *Recipe, others []*Recipe) {
	for _, e := range ev {
		for _, ek := range e.Kinds {
			switch {
			case k == nil:
				k = ek
			case ek != k && !hasKind(others, ek) && !hasKind(e.Kinds, k):
				others = append(others, ek)
			}
		}
	}
	return k, others
}

// Mismatch is a path that belongs to another kind than the one that looked.
type Mismatch struct {
	There    *Recipe // the kind it belongs to
	Evidence string  // what says so
	// Contender is the contender kind when the evidence is a line's node
	// ("" for a stamp or a fixed-name child).
	Contender string
	// Part, when set, says which part of There's layout the path is (see
	// RefusePart): the evidence is then its parent's. With Child, it says
	// what the looking kind keeps in that child (see RefuseInPart).
	Part string
	// Child, when set, is the child of the path (a container the looking
	// kind keeps there) whose nodes are the evidence (see RefuseInPart).
	Child string
}

func (m *Mismatch) Error() string {
	if m.Child != "" {
		return fmt.Sprintf("%q under it is %s's: it has %s, %s", m.Child, m.There, m.Evidence, m.Part)
	}
	if m.Part != "" {
		return fmt.Sprintf("it is part of %s's layout: %s, and %s", m.There, m.Evidence, m.Part)
	}
	return fmt.Sprintf("it is %s's path: it has %s", m.There, m.Evidence)
}

// Refuse returns a Mismatch when s shows evidence of a kind other than me
// that is not shared with me (see the package doc), nil when the path is
// free (nothing of any kind's) or me's.
func Refuse(me *Recipe, s Seen) *Mismatch {
	for _, e := range Classify(s) {
		if !hasKind(e.Kinds, me) {
			return &Mismatch{There: e.Kinds[0], Evidence: e.What, Contender: e.Contender}
		}
	}
	return nil
}

// PartOf returns the kind whose layout a path named name is a part of, and
// which part, when its parent's data (parentData) stamps that kind and the
// kind keeps a fixed-name child of that name (a semaphore's "leases", a
// schedule's "state"); nil when it is none.
func PartOf(parentData []byte, name string) (*Recipe, *Node) {
	for _, k := range Kinds {
		if k.Stamp == "" || !strings.HasPrefix(string(parentData), k.Stamp) {
			continue
		}
		for i, n := range k.Nodes {
			if n.Name == name {
				return k, &k.Nodes[i]
			}
		}
	}
	return nil, nil
}

// RefusePart returns a Mismatch when a path named name, whose parent's
// data is parentData, is a part of another kind's layout (see PartOf) and
// me may not be made there (Node.Recipes): a recipe there would write its
// nodes into another recipe's layout, which neither would tell apart. nil
// otherwise.
func RefusePart(me *Recipe, parentData []byte, name string) *Mismatch {
	k, n := PartOf(parentData, name)
	if k == nil || hasKind(n.Recipes, me) {
		return nil
	}
	return &Mismatch{There: k, Evidence: fmt.Sprintf("its parent's data %q", short(parentData)),
		Part: fmt.Sprintf("%q is %s", name, n.What)}
}

// RefuseInPart returns a Mismatch when part n of me's layout (a container
// of contender nodes: n.Holds), whose children are seen, holds another
// kind's evidence: a contender of a kind n does not hold (a lock's line
// made at a path that a semaphore made later is part of), or another
// kind's fixed names. nil when it holds only what me keeps there.
func RefuseInPart(me *Recipe, n *Node, seen Seen) *Mismatch {
	for _, e := range Classify(seen) {
		if e.Contender != "" && has(n.Holds, e.Contender) {
			continue
		}
		return &Mismatch{There: e.Kinds[0], Evidence: e.What, Contender: e.Contender, Child: n.Name,
			Part: fmt.Sprintf("where %s keeps %s", me, n.What)}
	}
	return nil
}

// RefusesChild reports, for a listing of a line's path (names only, no
// Stat), whether a child named name belongs to another kind than me: one of
// another kind's stamping fixed names, or a contender of a kind me's line
// does not take. It names that kind. An Ambiguous name, which a listing
// cannot tell, is no evidence here (the single-node race, whose node it is,
// refuses a line's node after its own grant).
func RefusesChild(me *Recipe, name, contender string) (*Recipe, bool) {
	for _, k := range Kinds {
		if k == me {
			continue
		}
		for _, n := range k.Nodes {
			if n.Stamps && n.Name == name && !Ambiguous(name) && !hasNode(me.Nodes, name) {
				return k, true
			}
		}
		if contender != "" && has(k.Contenders, contender) && !has(me.Contenders, contender) {
			return k, true
		}
	}
	return nil, false
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

// Table is the layouts as a Markdown table (docs/layouts.md shows it).
func Table() string {
	var b strings.Builder
	b.WriteString("| kind | mode | data of the path | children | contender nodes | when idle |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, k := range Kinds {
		stamp := "-"
		if k.Stamp != "" {
			stamp = "`" + k.Stamp + "…`"
		}
		var nodes []string
		for _, n := range k.Nodes {
			e := ""
			if n.Ephemeral {
				e = ", ephemeral"
			}
			nodes = append(nodes, fmt.Sprintf("`%s` (%s%s)", n.Name, n.What, e))
		}
		var cs []string
		for _, c := range k.Contenders {
			cs = append(cs, "`"+c+"`")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", k.Name, k.Mode(), stamp, orDash(strings.Join(nodes, "; ")),
			orDash(strings.Join(cs, " ")), k.Idle)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Trace is what a path of the kind shows while held: its stamp, its stamping
// children, a contender of its first kind.
func (k *Recipe) Trace() Seen {
	s := Seen{Data: []byte(k.Stamp)}
	for _, n := range k.Nodes {
		if n.Stamps {
			s.Children = append(s.Children, Child{Name: n.Name, Ephemeral: n.Ephemeral})
		}
	}
	if len(k.Contenders) > 0 {
		s.Children = append(s.Children, Child{Name: "_c_guid-" + k.Contenders[0] + "0000000001", Contender: k.Contenders[0]})
	}
	if len(s.Data) == 0 && len(s.Children) == 0 {
		for _, n := range k.Legacy {
			s.Children = append(s.Children, Child{Name: n})
		}
	}
	return s
}

// Matrix is, as a Markdown table, what each kind (row) does on a path
// another kind (column) holds: refused, or shared.
func Matrix() string {
	label := func(k *Recipe) string {
		if k.Name == "mutex" || k.Name == "election" {
			return k.Mode() + " " + k.Name
		}
		return k.Name
	}
	var b strings.Builder
	b.WriteString("| on the path of → | ")
	for _, k := range Kinds {
		b.WriteString(label(k) + " | ")
	}
	b.WriteString("\n|---|")
	for range Kinds {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, second := range Kinds {
		b.WriteString("| " + label(second) + " | ")
		for _, first := range Kinds {
			cell := "refused"
			switch {
			case first == second:
				cell = "-"
			case Refuse(second, first.Trace()) == nil:
				cell = "shared"
			}
			b.WriteString(cell + " | ")
		}
		b.WriteString("\n")
	}
	return b.String()
}
