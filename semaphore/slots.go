package semaphore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/observe"
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

// awaitDeadClaim waits for a dead claim in dir to go, and reports whether
// there was one. A claim is dead when the lease node its data names is gone
// while the session that owns the claim lives on: an operator's forced
// revocation deletes the lease node of a holder whose process or
// connection has stalled, and its claim goes only when that holder is back
// (it deletes what its lost hold attached) or its session ends. Its slot
// is then taken by no live lease, and a grant can find every slot taken.
// The claim is not deleted here: only its own session deletes a claim
// (zkdelete's attached nodes are deleted at the version read, which a claim
// made again under the same name would also have). The wait ends early
// when the connection is lost (the caller goes on in the next epoch) or
// our own lease is (the caller's next pass returns ErrLost).
func (s *Semaphore) awaitDeadClaim(ctx context.Context, r *claimResult, h *hold.Hold, dir string) (bool, error) {
	if err := s.ready(ctx, r, h); err != nil {
		return false, err
	}
	f, err := epcall.Call(ctx, r.ep, func(c *zk.Conn) (deadClaim, error) { return s.findDeadClaim(c, dir) }, nil)
	if err != nil {
		return false, err // op may still run: do not read f
	}
	if !f.dead || f.w == nil {
		return f.dead, nil
	}
	select {
	case <-f.w:
	case <-r.ep.Done():
	case <-h.Lost(): // ours: the next pass's ready() says so
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return true, nil
}

// deadClaim is what findDeadClaim found: whether a dead claim is there (or
// went meanwhile), and a watch of its deletion (nil: gone already).
type deadClaim struct {
	dead bool
	w    <-chan zk.Event
}

// findDeadClaim looks in dir for a claim whose lease node is gone (see
// awaitDeadClaim), and watches it.
func (s *Semaphore) findDeadClaim(c *zk.Conn, dir string) (deadClaim, error) {
	names, _, err := c.Children(dir)
	if err != nil {
		return deadClaim{}, aclerr.Map("getChildren", dir, err)
	}
	for _, n := range names {
		if _, ok := parseSlot(n); !ok {
			continue
		}
		p := dir + "/" + n
		data, _, err := c.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			return deadClaim{dead: true}, nil // gone meanwhile: a slot is free
		} else if err != nil {
			return deadClaim{}, aclerr.Map("getData", p, err)
		}
		if len(data) == 0 || bytes.IndexByte(data, '/') >= 0 {
			continue // not a claim's data: no lease to look for
		}
		lease := s.leases + "/" + string(data)
		if live, _, err := c.Exists(lease); err != nil {
			return deadClaim{}, aclerr.Map("exists", lease, err)
		} else if live {
			continue
		}
		there, _, w, err := c.ExistsW(p)
		if err != nil {
			return deadClaim{}, aclerr.Map("exists", p, err)
		}
		if !there {
			w = nil
		}
		return deadClaim{true, w}, nil
	}
	return deadClaim{}, nil
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

// createClaim creates the claim of slot k with data, in r.ep (moved on to
// the session's next epoch when a lost answer is looked up): true if the
// slot is ours now, false if it is taken.
func (s *Semaphore) createClaim(ctx context.Context, r *claimResult, h *hold.Hold, dir string, k int, data []byte) (bool, error) {
	p := dir + "/" + strconv.Itoa(k)
	noNode := 0
	for try := 0; ; try++ {
		if err := s.ready(ctx, r, h); err != nil {
			return false, err
		}
		err := s.createClaimNode(ctx, r.ep, p, data)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, zk.ErrNodeExists):
			return false, nil
		case errors.Is(err, zk.ErrNoNode) && noNode < 3:
			// The slots container is missing (not made yet, or removed
			// when its last claim went): our lease pins the path.
			noNode++
			if err := s.ensureSlots(ctx, r.ep, dir); err != nil {
				return false, err
			}
			continue
		case !session.OutcomeUnknown(err) || ctx.Err() != nil || try >= claimTries:
			if session.OutcomeUnknown(err) {
				r.unknown = true
			}
			return false, err
		}
		// The answer is lost: did it land? Look once the same session is
		// usable again.
		r.unknown = true
		seen, err := s.lookClaim(ctx, r, h, dir, p, data)
		if err != nil {
			return false, err
		}
		if seen != claimAgain {
			return seen == claimOurs, nil
		}
	}
}

// createClaimNode sends the create of the claim p (after the test hook).
func (s *Semaphore) createClaimNode(ctx context.Context, ep *session.Epoch, p string, data []byte) error {
	if f := testHookBeforeClaim.Load(); f != nil {
		(*f)()
	}
	return epcall.Exec(ctx, ep, func(c *zk.Conn) error {
		_, err := c.Create(p, data, zk.FlagEphemeral, s.sess.ACL())
		return aclerr.Map("create", p, err)
	})
}

// ensureSlots creates the slots container dir if it is missing.
func (s *Semaphore) ensureSlots(ctx context.Context, ep *session.Epoch, dir string) error {
	return epcall.Exec(ctx, ep, func(c *zk.Conn) error {
		_, err := c.CreateContainer(dir, nil, zk.FlagContainer, s.sess.ACL())
		if errors.Is(err, zk.ErrNodeExists) {
			err = nil
		}
		return aclerr.Map("create", dir, err)
	})
}

// claimSeen is what lookClaim found of a claim whose create's answer was
// lost.
type claimSeen int

const (
	claimAgain  claimSeen = iota // not landed, or not known: create again
	claimOurs                    // landed: ours, adopted
	claimTheirs                  // someone else's
)

// lookClaim looks, once the same session is usable again (r.ep moved on to
// it), whether the claim p landed and is ours: our session owns it and its
// data is data. A lookup whose own answer is lost is claimAgain (the caller's
// claimTries bound it).
func (s *Semaphore) lookClaim(ctx context.Context, r *claimResult, h *hold.Hold, dir, p string, data []byte) (claimSeen, error) {
	if err := s.ready(ctx, r, h); err != nil {
		return claimAgain, err
	}
	cur := r.ep
	type found struct {
		ok   bool
		data []byte
		st   *zk.Stat
	}
	f, err := epcall.Call(ctx, cur, func(c *zk.Conn) (found, error) {
		// Sync first: the server we are on now may not have applied yet
		// a create the one we lost forwarded to the leader.
		if _, err := c.Sync(dir); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return found{}, err
		}
		d, st, err := c.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			return found{}, nil
		}
		return found{true, d, st}, err
	}, nil)
	switch {
	case err != nil:
		if !session.OutcomeUnknown(err) {
			return claimAgain, err
		}
		return claimAgain, nil // look again (bounded by claimTries)
	case !f.ok:
		return claimAgain, nil // it did not land: create again
	case f.st.EphemeralOwner == cur.SessionID() && bytes.Equal(f.data, data):
		return claimOurs, nil // ours: adopted
	default:
		return claimTheirs, nil // someone else's
	}
}

// ready moves r.ep on to the session's current epoch if it has ended
// (waiting for the same session, see sameSession), and checks that the
// lease is still held: one lost meanwhile (a lost connection ends a lease
// under StopOnDisconnect) is given back and the acquire starts again.
func (s *Semaphore) ready(ctx context.Context, r *claimResult, h *hold.Hold) error {
	if r.ep.Context().Err() != nil {
		cur, err := s.sameSession(ctx, r.ep)
		if err != nil {
			return err
		}
		r.ep = cur
	}
	if !h.Valid() {
		return fmt.Errorf("semaphore %s: %w: the lease was lost while its slot was claimed", s.path, ErrLost)
	}
	return nil
}

// sameSession waits (at most a session timeout and a second) for ep's
// session to be usable again: ErrLost if it is gone.
func (s *Semaphore) sameSession(ctx context.Context, ep *session.Epoch) (*session.Epoch, error) {
	wctx, cancel := context.WithTimeout(ctx, s.sess.Timeout()+time.Second)
	defer cancel()
	cur, err := s.sess.Wait(wctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if cur.SessionID() != ep.SessionID() {
		return nil, fmt.Errorf("semaphore %s: %w: a new session while a slot was claimed", s.path, ErrLost)
	}
	return cur, nil
}

// sweepClaims removes claims of ep's session whose data names one of
// leases (the nodes of one grant) and that are not in keep: the claim of a
// create whose answer was lost and that landed after it was looked up, or
// of a claim given up on. Such a claim is known to no one else, so only this
// sweep deletes it (its name cannot have passed to someone else between the
// read and the delete). It looks a few times over a session timeout and
// ends with the session.
func (s *Semaphore) sweepClaims(ep *session.Epoch, leases, keep []string) {
	dir := s.path + "/" + slotsChild
	names := map[string]bool{}
	for _, l := range leases {
		names[path.Base(l)] = true
	}
	kept := map[string]bool{}
	for _, k := range keep {
		kept[k] = true
	}
	line.AfterDelays(s.sess, ep, []time.Duration{0, 100 * time.Millisecond, time.Second, s.sess.Timeout()}, func(cur *session.Epoch) {
		conn := cur.Conn()
		if _, err := conn.Sync(dir); err != nil {
			return
		}
		children, _, err := conn.Children(dir)
		if err != nil {
			return
		}
		for _, c := range children {
			p := dir + "/" + c
			if _, ok := parseSlot(c); !ok || kept[p] {
				continue
			}
			data, st, err := conn.Get(p)
			if err != nil || st.EphemeralOwner != ep.SessionID() || !names[string(data)] {
				continue
			}
			s.sess.Report(observe.RecipeEvent{Kind: observe.OrphanCleanup, Recipe: "semaphore", Path: p, SessionID: ep.SessionID()})
			_ = conn.Delete(p, st.Version)
		}
	})
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
