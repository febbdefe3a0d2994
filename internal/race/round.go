package race

// One Race.Run, step by step: the state of a race across its rounds
// (see Race).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/wire/ctxcall"
	"github.com/shepherdzk/shepherd/internal/wire/zkpath"
	"github.com/shepherdzk/shepherd/session"
)

// errAgain is what a step of a race returns to have Run race again (a
// new round, once the session is usable). It never leaves Run.
var errAgain = errors.New("recipe: race again")

// race is one Run's state across its rounds.
type race struct {
	s       *Race
	a       Attempt
	delay   time.Duration  // the jittered wait's (see wait)
	pace    line.Pacer     // retries after a lost connection (see line.Pacer)
	unknown *session.Epoch // an epoch in which this attempt may hold the node unseen
	granted bool
	noNode  int // creates in a row that found no Path
}

// undo, when Run returns without a hold, deletes (guarded) a node this
// attempt may hold unseen.
func (r *race) undo() {
	if !r.granted && r.unknown != nil {
		go r.s.removeIfOurs(r.unknown, r.a.GUID)
	}
}

// round is one round of the race in ep: create the node, or read and watch
// it held and wait for it to change. It returns the hold; errAgain to race
// again; or what Run returns.
func (r *race) round(ctx context.Context, ep *session.Epoch) (*hold.Hold, error) {
	version, err := r.fence(ctx, ep)
	if err != nil {
		return nil, err
	}
	if h, err := r.try(ctx, ep, version); h != nil || err != nil {
		return h, err
	}
	// Held, perhaps by this attempt (an answer lost, or a grant kept
	// through a reconnect): read the node and watch it.
	w, err := r.watch(ctx, ep)
	if err != nil {
		return nil, err
	}
	if h, err := r.adopt(ctx, ep, w.st); h != nil || err != nil {
		return h, err
	}
	if r.a.Seen != nil {
		r.a.Seen(w.data, w.st)
	}
	if !r.a.Wait {
		return nil, nil
	}
	return nil, r.wait(ctx, ep, w.ch)
}

// paced waits for the next try after a lost connection (r.pace), and
// returns errAgain, or ctx's error.
func (r *race) paced(ctx context.Context, ep *session.Epoch) error {
	if err := r.pace.Wait(ctx, ep); err != nil {
		return err
	}
	return errAgain
}

// fence is Path's version for the grant's write to be made at: -1 (any)
// once Path is known to be this race's (Race.checked), else what
// refuseForeign reads.
func (r *race) fence(ctx context.Context, ep *session.Epoch) (int32, error) {
	if r.s.checked.Load() {
		return -1, nil
	}
	// Before the first write to Path: refuse another recipe's.
	version, err := r.s.refuseForeign(ctx, ep)
	if err == nil {
		return version, nil
	}
	if errors.Is(err, line.ErrWrongKind) || ctx.Err() != nil || !session.OutcomeUnknown(err) {
		return 0, err
	}
	return 0, r.paced(ctx, ep)
}

// try is one attempt's create (at Path's version), and the classification
// of its outcome: the hold; (nil, nil) when the node is held (perhaps by
// this attempt: read it and watch it); errAgain; or a final error.
func (r *race) try(ctx context.Context, ep *session.Epoch, version int32) (*hold.Hold, error) {
	res, err := r.s.create(ctx, ep, r.a, version)
	if err == nil {
		r.s.checked.Store(true)
		st := res[1].Stat // Path's, set in the same transaction: Mzxid is the node's Czxid
		return r.grant(ctx, ep, st.Mzxid, st.Version)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if cerr := checkFailed(res); cerr != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCheckFailed, r.s.node(), cerr)
	}
	if !errors.Is(err, zk.ErrNoNode) {
		r.noNode = 0
	}
	switch {
	case errors.Is(err, zk.ErrNoNode) && r.noNode < 3: // no Path (yet, or again)
		// Only failures in a row count against the bound: Path's
		// parents are containers, which the server may remove when
		// empty. Path itself stays persistent (EnsureVersionedPath):
		// its data version is the fence, and a container created
		// again would count versions from 0 again, letting a retried
		// release remove the next holder's node.
		r.noNode++
		if err := EnsureVersionedPath(r.s.Sess, ep, r.s.Path); err != nil && !session.OutcomeUnknown(err) {
			return nil, err
		}
		return nil, errAgain
	case errors.Is(err, zk.ErrNodeExists):
	case errors.Is(err, zk.ErrBadVersion): // Path changed since refuseForeign read it
		return nil, errAgain
	case session.OutcomeUnknown(err):
		r.unknown = ep
	case errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, line.ErrLost):
		return nil, r.paced(ctx, ep) // a new session: race again in it
	default:
		return nil, err
	}
	return nil, nil
}

// watched is the held node, read with a watch set.
type watched struct {
	data []byte
	st   *zk.Stat
	ch   <-chan zk.Event
}

// watch reads the held node and watches it: errAgain if it is gone or the
// read failed (after pacing), a final error if it cannot be read.
func (r *race) watch(ctx context.Context, ep *session.Epoch) (watched, error) {
	node := r.s.node()
	w, err := ctxcall.Value(ctx, func() (watched, error) {
		data, st, ch, err := ep.Conn().GetW(node)
		return watched{data, st, ch}, err
	}, nil)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return w, errAgain // released meanwhile: race again
	case err != nil:
		if ctx.Err() != nil {
			return w, ctx.Err()
		}
		if errors.Is(err, zk.ErrNoAuth) {
			return w, aclerr.Map("getData", node, err) // no READ: waiting cannot help
		}
		return w, r.paced(ctx, ep)
	}
	return w, nil
}

// adopt grants the held node (its Stat st) to this attempt if it is this
// attempt's grant: the hold; (nil, nil) when it is not ours; errAgain; or a
// final error.
func (r *race) adopt(ctx context.Context, ep *session.Epoch, st *zk.Stat) (*hold.Hold, error) {
	if st.EphemeralOwner != ep.SessionID() {
		return nil, nil
	}
	ours, version, err := r.s.grantedTo(ctx, ep, r.a.GUID, st)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !session.OutcomeUnknown(err) {
			return nil, err
		}
		return nil, r.paced(ctx, ep)
	}
	if !ours {
		// Another contender of this session holds it (another value
		// sharing the session, or an earlier hold whose release is under
		// way): it is not ours to take.
		return nil, nil
	}
	return r.grant(ctx, ep, st.Czxid, version)
}

// grant makes the hold of a node this attempt holds (token, and Path's
// version as the fence): the hold, or errAgain to race again (the
// connection dropped as it was granted: adopted on the next round if the
// session is back, deleted if the call ends first; or a fair line
// appeared beside it and took its place), or a final error.
func (r *race) grant(ctx context.Context, ep *session.Epoch, token int64, version int32) (*hold.Hold, error) {
	h := r.s.hold(ep, token, version)
	if h.Context().Err() != nil {
		r.unknown = ep
		return nil, errAgain
	}
	if err := r.s.alone(ctx, ep, h); err != nil {
		if errors.Is(err, line.ErrWrongKind) || ctx.Err() != nil {
			return nil, err
		}
		return nil, errAgain
	}
	r.granted = true
	return h, nil
}

// wait waits for the held node to change (its watch fires, or the
// connection drops), then a jittered while: errAgain, or ctx's error.
func (r *race) wait(ctx context.Context, ep *session.Epoch, ch <-chan zk.Event) error {
	select {
	case <-ch:
	case <-ep.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if r.a.Eager != nil && r.a.Eager() {
		return errAgain
	}
	// Jittered backoff, so a crowd of waiters does not hit the server
	// in one burst on every release.
	if r.delay == 0 {
		r.delay = time.Millisecond
	} else if r.delay < 50*time.Millisecond {
		r.delay *= 2
	}
	t := time.NewTimer(time.Duration(rand.Int64N(int64(r.delay) + 1)))
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
	return errAgain
}

// checkFailed returns the error of the op of an Attempt's Check that made
// a grant's multi-op fail (res: its answers; the node's create and the
// fence's write come first), or nil when the multi-op failed elsewhere or
// not at all. The ops before the one that failed answer without an error.
func checkFailed(res []zk.MultiResponse) error {
	for i, r := range res {
		if r.Error != nil {
			if i < 2 {
				return nil
			}
			return r.Error
		}
	}
	return nil
}

// EnsureVersionedPath creates p as a persistent node, and its missing parents
// as containers (see line.EnsurePath): for a path whose data version fences
// holds (the non-fair race's fence and guarded delete check it). A container
// removed and created again starts at version 0 again, so a fenced write or
// a delete retried across its two lives could pass the check and land on
// the next holder's grant; a persistent path keeps counting. Whatever
// creates a non-fair recipe's path, or a child of it, first (the race, an
// election's registration), creates it with this.
func EnsureVersionedPath(sess *session.Session, ep *session.Epoch, p string) error {
	var err error
	for round := 0; round < 10; round++ {
		if err = line.EnsurePath(sess, ep, zkpath.Parent(p)); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		if err == nil {
			_, err = ep.Conn().Create(p, nil, 0, sess.ACL())
			if err == nil || errors.Is(err, zk.ErrNodeExists) {
				return nil
			}
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return aclerr.Map("create", p, err)
		}
	}
	return err
}
