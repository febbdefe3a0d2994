package semaphore

import (
	"context"
	"fmt"
	"sync"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/session"
)

func (s *Semaphore) grant(ep *session.Epoch, paths []string) *Lease {
	return &Lease{s: s, hold: s.locks.NewHold(ep, 0, paths...)}
}

// Lease is one or more held leases.
type Lease struct {
	s     *Semaphore
	hold  *hold.Hold
	slots []int // WithSlots: one per lease node, in order
	once  sync.Once
	err   error
}

// Slot is the lease's slot (WithSlots): a number in 0..maxLeases−1 that no
// other live lease with a slot on this path holds, the same for the lease's
// whole life (through a pause too: its claim is an ephemeral node of the
// same session), free for others once the lease is released or lost. For a
// lease of several (AcquireN), it is the first of Slots. Without
// WithSlots it is -1.
//
// Uniqueness is among shepherd clients that use WithSlots: a client
// without it (or Curator's InterProcessSemaphoreV2 on the same path) holds
// leases that count toward maxLeases but no slot, which only leaves more
// slots free. After SetMaxLeases lowers the limit, a lease keeps the slot it
// has, even one at or above the new limit; leases granted later get slots
// below the new limit.
func (l *Lease) Slot() int {
	if len(l.slots) == 0 {
		return -1
	}
	return l.slots[0]
}

// Slots are the slots of each of the lease's leases (WithSlots), distinct,
// in the order of Nodes; nil without WithSlots. See Slot.
func (l *Lease) Slots() []int { return append([]int(nil), l.slots...) }

// Release gives the leases back, whatever ctx: Context ends (Lost stays
// open: a release is no loss) and their delete is under way when Release
// returns. ctx only bounds how long Release waits for the server to confirm
// it: if it cannot within ctx, Release returns ctx's error and the delete
// goes on in the background until the leases are gone or their session is.
// It is idempotent: the first call reports ErrLost if the lease had been
// lost before (or ctx's error), later calls return nil.
func (l *Lease) Release(ctx context.Context) error {
	first := false
	l.once.Do(func() {
		first = true
		if err := l.hold.Release(ctx); err != nil {
			l.err = fmt.Errorf("semaphore %s: %w", l.s.path, err)
		}
	})
	if !first {
		return nil
	}
	return l.err
}

// Lost is closed when the lease is, or may be, lost, never by Release (see
// hold.Hold for the hold contract).
func (l *Lease) Lost() <-chan struct{} { return l.hold.Lost() }

// Paused returns the lease's pause signal (PauseOnDisconnect): a channel
// closed when the lease pauses, renewed at each resume (see hold.Hold).
func (l *Lease) Paused() <-chan struct{} { return l.hold.Paused() }

// RevokeRequested is closed when an operator asks for the lease (shepherd
// revoke -ask, admin.AskRevoke, on any of its nodes): release it when the
// work allows (see hold.Hold.RevokeRequested).
func (l *Lease) RevokeRequested() <-chan struct{} { return l.hold.RevokeRequested() }

// Gate returns nil while the lease is held and not paused; while it is
// paused, it waits until the lease resumes (nil), is lost (ErrLost) or ctx
// ends (see hold.Hold.Gate).
func (l *Lease) Gate(ctx context.Context) error { return l.hold.Gate(ctx) }

// Context ends when the lease ends for any reason: a loss (as Lost) or
// Release. Pass it to the work the lease bounds.
func (l *Lease) Context() context.Context { return l.hold.Context() }

// Token is the lease's fencing token (the creation zxid of its first node).
// The grant does not reveal it (the multi-op that creates the leases answers
// with their paths only): the lease's watch on its own node reads it (every
// lease that lasts 10 ms has that watch), and Token starts that read at
// once if it has not started, and waits for it: no request of its own (see
// hold.Hold.Token).
func (l *Lease) Token(ctx context.Context) (hold.Token, error) { return l.hold.Token(ctx) }

// Fenced runs ops as one multi-op that lands only while the lease is held
// (its first node exists: the nodes of one lease are created and deleted
// together); a write after the lease is gone fails with an error matching
// ErrLost. ops are fence.Set, fence.Create and fence.Delete (paths in the
// session's namespace), or fence.Raw's go-zookeeper requests (see
// hold.Hold.Fenced); it returns one response per op (a Set's Stat.Version is the node's new
// version).
func (l *Lease) Fenced(ctx context.Context, ops ...fence.Op) ([]zk.MultiResponse, error) {
	return l.hold.Fenced(ctx, ops...)
}

// Validate checks with the server (after a sync) that the lease is still
// held: its first node exists and belongs to this session. Use it before a
// critical step; between checks, watch Lost.
func (l *Lease) Validate(ctx context.Context) error { return l.hold.Validate(ctx) }

// Nodes are the lease's nodes.
func (l *Lease) Nodes() []string { return l.hold.Nodes() }

// Count is the number of leases held.
func (l *Lease) Count() int { return len(l.hold.Nodes()) }

// Hold is the underlying hold. A lease's fence checks that its first node
// exists (see hold.Hold.Fenced).
func (l *Lease) Hold() *hold.Hold { return l.hold }
