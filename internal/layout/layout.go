// Package layout names the nodes and records of shepherd's recipes, in one
// place: each recipe builds its layout from these names, and the readers of
// layouts (recipe.Inspect, shepherd status and ls, the recipes' refusals of
// one another's paths) recognise a recipe by them.
//
// The contender nodes' names (the protected "_c_<guid>-lock-<seq>" and the
// other kinds) are recipe.Name's, shared with Curator and Kazoo; these are
// shepherd's own.
package layout

// The fair mutex, the read-write lock and the fair election keep only
// contender nodes under their path (see recipe.Name).

// The non-fair mutex: one ephemeral node under its path, and the path's data
// is NonFairLockMark followed by the guid of the last grant (its version is
// the grant's fence).
const (
	NonFairLockNode = "nonfair-lock"
	NonFairLockMark = "shepherd:mutex:nonfair "
)

// The non-fair election: as the non-fair mutex, with its own node and mark.
const (
	NonFairLeaderNode = "leader"
	NonFairLeaderMark = "shepherd:election:nonfair "
)

// The semaphore: its path's data is SemaphoreMarker followed by maxLeases
// (decimal); its waiters queue in SemaphoreLocks (lock- nodes, as Curator's
// InterProcessSemaphoreV2), its holders' lease nodes are in SemaphoreLeases,
// and with slots each holder's claim is SemaphoreSlots/<n>.
const (
	SemaphoreMarker = "shepherd:semaphore:v1 maxLeases="
	SemaphoreLocks  = "locks"
	SemaphoreLeases = "leases"
	SemaphoreSlots  = "slots"
)

// The schedule: an election at ScheduleLeader under its path, and its record
// (JSON) in ScheduleState.
const (
	ScheduleLeader = "leader"
	ScheduleState  = "state"
)

// An election's priorities and handovers (issue 38, election's
// candidate.go and handover.go): a candidate's node data is its id,
// followed, when it has a priority, attributes or a proclaimed value, by
// CandidateMark and JSON. A pending handover is the ephemeral node
// ElectionHandOver under the election's path (JSON naming the successor).
// A non-fair election's candidates register as ephemeral children
// "c-<guid>" of ElectionCandidates (a container under the path).
const (
	CandidateMark      = "\x00shepherd:candidate="
	ElectionHandOver   = "handover"
	ElectionCandidates = "candidates"
)
