// Package holdtest is the contract every hold keeps (package hold), written
// once as a table of scenarios and run against each recipe that grants holds,
// the way testing/fstest.TestFS is run against each file system: a recipe's
// test package describes how the recipe makes a contender (a Recipe) and calls
// Run from one short test. What only one recipe does (a semaphore's limit, an
// election's Run, a lock's read side) stays in that recipe's own tests.
//
// The contract, scenario by scenario (each a subtest of Run):
//
//   - EndSignals: a release ends Context and leaves Lost open; a loss (the
//     session expired, or the connection stalled) closes Lost and ends
//     Context, and does not close the Lost of a hold released before it.
//   - TokenCost: Token costs no request of its own; concurrent first calls
//     share the one read.
//   - ReleaseWithDoneCtx: a release with a cancelled or expired ctx lets go.
//   - TwoValuesOneSession: two contenders on one session exclude each other.
//   - FencedAnswerLost: a fenced write whose answer is lost fails with ErrLost.
//   - CtxDeadlineUnderStall: every blocking call returns within its ctx's
//     deadline while the connection is stalled.
//   - SequenceExhausted: a line whose sequence counter is stuck fails closed.
//   - TopLevelPath: a hold directly under a root leaves nothing behind.
//   - PathIsAContainer, NonFairPathIsPersistent: what the path is when idle.
//   - ExpiredHolderIsToldFirst, StalledHolderIsToldFirst: a holder is told of
//     its loss before anyone else is granted.
//   - WaiterKeepsPlace, LostCreateAnswerLeavesNoOrphan: a waiter's place in
//     line survives a dropped connection, and a lost answer leaves no orphan.
//   - LossIsLogged: a loss is logged at Warn.
//   - LongLineHandoff: a handoff in a line of a thousand costs what it costs
//     in a short one.
//
// It starts no server: Run takes the test package's own (zktest), and opens
// its sessions there and through zktest's proxies. Library code must not
// import it.
package holdtest

import (
	"context"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/hold"
	"github.com/shepherdzk/shepherd/session"
)

// Hold is what a recipe's grant offers: a Mutex (whose Release is its Unlock
// or RUnlock), a semaphore Lease, an election Leadership (whose Release is
// Resign). Its Lost and Context are the grant's own: captured at the grant,
// they stay that hold's.
type Hold interface {
	Lost() <-chan struct{}
	Context() context.Context
	Validate(ctx context.Context) error
	Fenced(ctx context.Context, ops ...fence.Op) ([]zk.MultiResponse, error)
	Token(ctx context.Context) (hold.Token, error)
	// Release ends the hold (Unlock, Release, Resign).
	Release(ctx context.Context) error
}

// Contender is one value of a recipe on one session: it acquires a hold
// (a Lock, an Acquire, a Campaign) and waits in line for it.
type Contender struct {
	// Acquire waits for a hold; on failure it leaves nothing behind.
	Acquire func(ctx context.Context) (Hold, error)
	// Try takes a hold only if it is free: a nil Hold and no error when it
	// is not. Nil for a recipe with no such call (an election).
	Try func(ctx context.Context) (Hold, error)
	// Held reports whether the contender holds now (IsHeld, IsLeader). Nil
	// for a recipe whose value does not say (a semaphore).
	Held func() bool
	// Holder asks the server who holds (an election's Leader: its id). Nil
	// for a recipe that does not name its holder.
	Holder func(ctx context.Context) (string, error)
}

// Recipe describes a recipe to Run: how it makes contenders, and the few
// answers in which recipes differ.
type Recipe struct {
	// Name is the recipe's name in its log lines ("mutex", "rwlock",
	// "semaphore", "election").
	Name string
	// Kind is the kind of its line's nodes (recipe.KindLock, ...): the
	// nodes made to stand in its line are of this kind.
	Kind string
	// NonFair is set for a recipe whose holds are won in a race on one
	// node: no line (the line's scenarios do not apply), and a persistent
	// path.
	NonFair bool
	// New makes a contender named id at path on s. Two contenders on one
	// path exclude each other: at most one holds at a time.
	New func(t *testing.T, s *session.Session, path, id string) Contender
	// Line is the path of the waiting line for a recipe at path (nil: path
	// itself), as given to the recipe (namespace not included).
	Line func(path string) string
	// Containers are the nodes below its full path (namespace included)
	// that the recipe keeps and documents (containers the server removes),
	// beside the path itself.
	Containers func(full string) []string
	// TokenAtGrant is set for a recipe whose grant knows its token (a
	// non-fair race's, an election's term): Token asks the server nothing,
	// so a stalled connection does not fail it.
	TokenAtGrant bool
	// Nodes is how many nodes below the recipe's path a holder has while it
	// holds, beside the kept ones (0: one); a non-fair election's candidate
	// is registered too.
	Nodes int
	// ReleaseLost is what a release of a lost hold returns (matched with
	// errors.Is): ErrLost, or nil for a release that reports no error.
	ReleaseLost error
	// ReleaseAgain is what a second release of a released hold returns (nil:
	// no error).
	ReleaseAgain error
	// ReleasedValidate and ReleasedFenced are what Validate and Fenced of a
	// released hold return (matched with errors.Is).
	ReleasedValidate, ReleasedFenced error
	// ErrSequenceExhausted is the recipe's own name for
	// recipe.ErrSequenceExhausted.
	ErrSequenceExhausted error
	// Later, when set, checks what the recipe says of two holds granted
	// one after the other to one contender (an election's terms grow).
	Later func(t *testing.T, earlier, later Hold)
	// Handoff bounds the cost of a handoff in a long line (zero: the
	// scenario does not run).
	Handoff Handoff
}

// Handoff bounds what one handoff costs behind a line of a thousand,
// counted by the server (zero: not bounded).
type Handoff struct {
	// Bytes per handoff.
	Bytes float64
	// BytesLessListing per handoff, less one listing of the whole line
	// (which a loaded machine may take now and then).
	BytesLessListing float64
	// Requests per handoff.
	Requests float64
}
