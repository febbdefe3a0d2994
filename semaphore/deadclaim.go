package semaphore

// A dead slot claim (see slots.go): one whose lease node is gone while the
// session that owns it lives on. A grant that finds every slot taken waits
// for it to go; it never deletes it.

import (
	"bytes"
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/hold"
	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/epcall"
)

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
