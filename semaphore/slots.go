package semaphore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/hold"
	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/session"
)

// Slots (WithSlots). A lease's slot is an ephemeral claim node
// <path>/slots/<n>, created by the lease's session after the grant, its data
// the name of the lease node it numbers. The name is the mutual exclusion:
// a create of a slot that is taken fails with NodeExists, whoever (which
// session, which Semaphore value) took it. Why a slot is free: a claim is
// created after its lease node and deleted with it (in the release's
// multi-op, see hold.Hold.Attach), at the lease's loss while its session
// lives, or with its session, so every claim belongs to a lease node that
// is there, one claim each, but for a while after someone else deleted the
// lease node (an operator's forced revocation) of a holder that cannot
// act (stalled): that dead claim goes when the holder is back or its
// session ends, and a grant that finds every slot taken waits for it
// (awaitDeadClaim). A head is granted n leases only when at most max−n are
// held, so at most max−n live claims exist: n of 0..max−1 are free, or
// will be once the dead claims go. (Leases of clients that take no slot,
// Curator's, count toward max and hold no claim: more are free, never
// fewer.)

// slotsChild is the container of the slot claims.
const slotsChild = layout.SemaphoreSlots

// claimPasses bounds the listings of the slots one lease node's claim
// makes: each pass tries every slot it saw free, so a pass ends without a
// slot only when others took those slots meanwhile.
const claimPasses = 5

// claimTries bounds the creates of one slot whose answers were lost.
const claimTries = 5

// testHookBeforeClaim, if set (by tests), runs before each claim's create.
var testHookBeforeClaim atomic.Pointer[func()]

// WithSlots gives each lease a slot: a number in 0..maxLeases−1 that no
// other live lease of a shepherd client with slots holds, kept for the
// lease's life (a pause included: see WithDisconnectPolicy), freed by its
// release or loss. See Lease.Slot. It costs two requests per lease granted
// (a listing of the slots, and the create of a claim); the release is the
// same one multi-op.
func WithSlots() Option {
	return func(c *config) { c.slots = true }
}

// claimSlots takes the slots of l, a lease just granted with the limit read
// (see claim), and attaches the claims to its hold: its release deletes them
// with its lease nodes. On failure the lease is given back (its release goes
// on in the background) and a claim that may have landed unseen is swept.
func (s *Semaphore) claimSlots(ctx context.Context, ep *session.Epoch, l *Lease) error {
	r, err := s.claim(ctx, ep, l.hold, s.MaxLeases())
	if err == nil {
		attached := make([]hold.Attached, len(r.claims))
		for i, c := range r.claims {
			// A claim's data names the lease node it numbers.
			attached[i] = hold.Attached{Path: c, Data: []byte(path.Base(l.hold.Nodes()[i]))}
		}
		err = l.hold.Attach(attached...)
	}
	if err != nil {
		// Given back at once: nothing waits for the server.
		rctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = l.hold.Release(rctx)
		go s.sweepClaims(r.ep, l.hold.Nodes(), nil)
		return err
	}
	if r.unknown {
		go s.sweepClaims(r.ep, l.hold.Nodes(), r.claims)
	}
	l.slots = r.slots
	return nil
}

// claimResult is what a claim made: a slot and its claim for each lease
// node (in order), and whether a create's outcome was unknown (a claim of
// ours may then land unseen: see sweepClaims).
type claimResult struct {
	slots   []int
	claims  []string
	unknown bool
	ep      *session.Epoch // the epoch the claim ended in
}

// claim takes a free slot for each of the hold's lease nodes (of a lease
// granted with limit max), lowest first. It lists the slots, then creates
// the lowest one seen free; a create that finds it taken tries the next,
// and a pass that finds all it saw taken lists again (claimPasses). A create
// whose answer is lost is looked up (after the session is back: the same
// session, or ErrLost) and adopted only if it is ours: our session owns it
// and its data names our lease node. Never a second slot for one node.
// When the passes find no slot free because of a dead claim (see
// awaitDeadClaim), it waits for that claim to go and tries again.
func (s *Semaphore) claim(ctx context.Context, ep *session.Epoch, h *hold.Hold, max int) (claimResult, error) {
	r := claimResult{ep: ep}
	dir := s.path + "/" + slotsChild
	taken := map[int]bool{}
	listed := false
	for _, lease := range h.Nodes() {
		data := []byte(path.Base(lease))
		got := -1
		for got < 0 {
			var err error
			if got, err = s.passes(ctx, &r, h, dir, max, data, taken, &listed); err != nil {
				return r, err
			}
			if got >= 0 {
				break
			}
			dead, err := s.awaitDeadClaim(ctx, &r, h, dir)
			if err != nil {
				return r, err
			}
			if !dead {
				return r, fmt.Errorf("semaphore %s: %w (%d passes over slots 0..%d; taken at the last: %v)",
					s.path, ErrNoSlot, claimPasses, max-1, slices.Sorted(maps.Keys(taken)))
			}
			listed = false // a dead claim went: list again
		}
		r.slots = append(r.slots, got)
		r.claims = append(r.claims, dir+"/"+strconv.Itoa(got))
	}
	return r, nil
}

// passes tries to claim a slot for the lease node named data, in at most
// claimPasses passes (see claim): the slot, or -1. listed says that taken
// is the listing to go on from (the one a previous lease node's claim was
// made from); it is false after a pass that found no slot.
func (s *Semaphore) passes(ctx context.Context, r *claimResult, h *hold.Hold, dir string, max int, data []byte,
	taken map[int]bool, listed *bool) (int, error) {
	for pass := 0; pass < claimPasses; pass++ {
		if !*listed {
			// What this listing shows, not what the last pass found
			// taken: a slot freed since is tried again.
			clear(taken)
			if err := s.listSlots(ctx, r, h, dir, taken); err != nil {
				return -1, err
			}
		}
		*listed = false // a pass that ends without a slot lists again
		for k := 0; k < max; k++ {
			if taken[k] {
				continue
			}
			ok, err := s.createClaim(ctx, r, h, dir, k, data)
			if err != nil {
				return -1, err
			}
			taken[k] = true
			if ok {
				*listed = true // the next lease node goes on from this listing
				return k, nil
			}
		}
	}
	return -1, nil
}

// listSlots marks in taken the slots claimed now (the claims in dir).
func (s *Semaphore) listSlots(ctx context.Context, r *claimResult, h *hold.Hold, dir string, taken map[int]bool) error {
	if err := s.ready(ctx, r, h); err != nil {
		return err
	}
	names, err := epcall.Call(ctx, r.ep, func(c *zk.Conn) ([]string, error) {
		names, _, err := c.Children(dir)
		if errors.Is(err, zk.ErrNoNode) {
			err = nil // created with the first claim
		}
		return names, err
	}, nil)
	if err != nil {
		return err
	}
	for _, n := range names {
		if k, ok := parseSlot(n); ok {
			taken[k] = true
		}
	}
	return nil
}

// parseSlot reads a claim's name: a slot number in decimal.
func parseSlot(name string) (int, bool) {
	if name == "" || len(name) > 5 || (len(name) > 1 && name[0] == '0') {
		return 0, false
	}
	for _, c := range name {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	k, err := strconv.Atoi(name)
	return k, err == nil && k >= 0 && k < MaxLeasesLimit
}
