package semaphore

// One slot's claim (see slots.go): its create, which a lost answer
// makes a lookup (only our session's, with our lease node's name, is
// adopted); the epoch a claim goes on in; and the sweep of our claims that
// landed after we gave up on them.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/hold"
	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/session"
)

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
