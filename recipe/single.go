package recipe

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/session"
)

// Single is the single-node race, the non-fair recipes' mechanism beside the
// line (the non-fair mutex and the non-fair election both use it): contenders
// race to create one ephemeral node with a fixed name under Path; whoever
// creates it holds until it is deleted; the others watch it, every one of them
// (a herd on each release, by design: few contenders, lowest latency).
//
// A fixed name is reused by every grant, so the node alone cannot tell one
// grant from the next, nor one contender of a session from another of the
// same session. Each grant therefore creates the node and writes Mark and the
// attempt's guid to Path's data in one multi-op. Path's data version (the
// fence) grows with every grant, its data names the attempt granted last, and
// its last change is the node's creation. Hence:
//
//   - Adoption only on a guid match: a create whose answer was lost is
//     recognised as this attempt's (Path names its guid, Path was last changed
//     by the node's creation, the node belongs to this session), never as
//     another contender's of the same session.
//   - A guarded delete: a release deletes the node only while Path's version
//     is its grant's, so a delete retried after a lost answer can never remove
//     a later holder's node.
//   - Fenced writes check Path's version and the node's existence.
//
// Every contender on one path must race through Single: a plain create of
// the node would not move the fence. The fields are set once, before use.
type Single struct {
	Sess *session.Session
	// Recipe names the recipe ("mutex", "election") in the events the race
	// and its holds report to the session's observer.
	Recipe string
	Path   string // the parent's full path (namespace included)
	Name   string // the node's name under Path
	Mark   string // written to Path's data with each grant, before the attempt's guid
	// Refuse names children whose presence means Path belongs to another
	// kind of recipe (name → what it is). A waiting line's node (a name
	// ParseName reads) refuses Path too: a race and a line on one path
	// would each grant a holder. Acquire then fails with ErrWrongKind.
	Refuse map[string]string
	// OnDisconnect is what a lost connection does to the race's holds (0:
	// the session's DisconnectPolicy).
	OnDisconnect session.DisconnectPolicy

	// checked: Path was found to be this race's (see refuseForeign) and a
	// grant's write landed there since.
	checked atomic.Bool
}

// Attempt is one contender's claim in a Single race.
type Attempt struct {
	// GUID identifies the attempt (NewGUID). Presenting again the guid of a
	// grant held before, in the same session, grants that node again (same
	// token) if it is still there and still that grant's: a contender keeps
	// its place through a disconnect its session survives.
	GUID string
	// Data is the node's data.
	Data []byte
	// Wait: wait until the node is free and race again (else try once).
	Wait bool
	// Seen, if not nil, is told each time the node is found held by another
	// contender (its data and Stat). It runs on Acquire's goroutine and must
	// not block.
	Seen func(data []byte, st *zk.Stat)
}

// node is the race's node.
func (s *Single) node() string { return s.Path + "/" + s.Name }

// Acquire races for the node until attempt a holds it, and returns the hold;
// (nil, nil) when a.Wait is false and another contender holds it; or ctx's
// error when ctx ends. It waits for the session to be usable, and creates
// Path on demand. When it returns without a hold, a node this attempt may
// have created unseen (its answer lost) is deleted, guarded.
func (s *Single) Acquire(ctx context.Context, a Attempt) (*Hold, error) {
	r := &race{s: s, a: a}
	defer r.undo()
	for {
		ep, err := s.Sess.Wait(ctx)
		if err != nil {
			return nil, err
		}
		if h, err := r.round(ctx, ep); !errors.Is(err, errAgain) {
			return h, err
		}
	}
}

// errAgain is what a step of a race returns to have Acquire race again (a
// new round, once the session is usable). It never leaves Acquire.
var errAgain = errors.New("recipe: race again")

// race is one Acquire's state across its rounds.
type race struct {
	s       *Single
	a       Attempt
	delay   time.Duration  // the jittered wait's (see wait)
	pace    Pacer          // retries after a lost connection (see Pacer)
	unknown *session.Epoch // an epoch in which this attempt may hold the node unseen
	granted bool
	noNode  int // creates in a row that found no Path
}

// undo, when Acquire returns without a hold, deletes (guarded) a node this
// attempt may hold unseen.
func (r *race) undo() {
	if !r.granted && r.unknown != nil {
		go r.s.removeIfOurs(r.unknown, r.a.GUID)
	}
}

// round is one round of the race in ep: create the node, or read and watch
// it held and wait for it to change. It returns the hold; errAgain to race
// again; or what Acquire returns.
func (r *race) round(ctx context.Context, ep *session.Epoch) (*Hold, error) {
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
// once Path is known to be this race's (Single.checked), else what
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
	if errors.Is(err, ErrWrongKind) || ctx.Err() != nil || !session.OutcomeUnknown(err) {
		return 0, err
	}
	return 0, r.paced(ctx, ep)
}

// try is one attempt's create (at Path's version), and the classification
// of its outcome: the hold; (nil, nil) when the node is held (perhaps by
// this attempt: read it and watch it); errAgain; or a final error.
func (r *race) try(ctx context.Context, ep *session.Epoch, version int32) (*Hold, error) {
	res, err := r.s.create(ctx, ep, r.a, version)
	if err == nil {
		r.s.checked.Store(true)
		st := res[1].Stat // Path's, set in the same transaction: Mzxid is the node's Czxid
		return r.grant(ctx, ep, st.Mzxid, st.Version)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if !errors.Is(err, zk.ErrNoNode) {
		r.noNode = 0
	}
	switch {
	case errors.Is(err, zk.ErrNoNode) && r.noNode < 3: // no Path (yet, or again)
		// Only failures in a row count against the bound: Path's
		// parents are containers, which the server may remove when
		// empty. Path itself stays persistent (ensureVersionedPath):
		// its data version is the fence, and a container created
		// again would count versions from 0 again, letting a retried
		// release remove the next holder's node.
		r.noNode++
		if err := ensureVersionedPath(r.s.Sess, ep, r.s.Path); err != nil && !session.OutcomeUnknown(err) {
			return nil, err
		}
		return nil, errAgain
	case errors.Is(err, zk.ErrNodeExists):
	case errors.Is(err, zk.ErrBadVersion): // Path changed since refuseForeign read it
		return nil, errAgain
	case session.OutcomeUnknown(err):
		r.unknown = ep
	case errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, ErrLost):
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
	w, err := session.CallValue(ctx, func() (watched, error) {
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
			return w, session.ACLError("getData", node, err) // no READ: waiting cannot help
		}
		return w, r.paced(ctx, ep)
	}
	return w, nil
}

// adopt grants the held node (its Stat st) to this attempt if it is this
// attempt's grant: the hold; (nil, nil) when it is not ours; errAgain; or a
// final error.
func (r *race) adopt(ctx context.Context, ep *session.Epoch, st *zk.Stat) (*Hold, error) {
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
func (r *race) grant(ctx context.Context, ep *session.Epoch, token int64, version int32) (*Hold, error) {
	h := r.s.hold(ep, token, version)
	if h.Context().Err() != nil {
		r.unknown = ep
		return nil, errAgain
	}
	if err := r.s.alone(ctx, ep, h); err != nil {
		if errors.Is(err, ErrWrongKind) || ctx.Err() != nil {
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

// create makes attempt a's grant: the node and Path's mark, in one multi-op.
// If ctx ends with it in flight, a node it made is deleted once its answer
// (or the connection) is back.
func (s *Single) create(ctx context.Context, ep *session.Epoch, a Attempt, version int32) ([]zk.MultiResponse, error) {
	type multi struct {
		res []zk.MultiResponse
		err error
	}
	ops := []any{
		&zk.CreateRequest{Path: s.node(), Data: a.Data, Acl: s.Sess.ACL(), Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: s.Path, Data: []byte(s.Mark + a.GUID), Version: version},
	}
	r, err := session.CallValue(ctx, func() (multi, error) {
		res, err := ep.Conn().Multi(ops...)
		return multi{res, session.ACLMultiError(ops, res, err)}, nil
	}, func(r multi, _ error) {
		if r.err == nil || session.OutcomeUnknown(r.err) {
			s.removeIfOurs(ep, a.GUID)
		}
	})
	if err != nil {
		return nil, err
	}
	return r.res, r.err
}

// grantedTo reports whether node (its Stat st, owned by ep's session) is the
// grant of the attempt with guid, and Path's version (the grant's fence).
func (s *Single) grantedTo(ctx context.Context, ep *session.Epoch, guid string, st *zk.Stat) (bool, int32, error) {
	g, pst, err := s.lastGrant(ctx, ep)
	if err != nil {
		return false, 0, err
	}
	// Path's last change created the node: no grant since.
	return g == guid && pst.Mzxid == st.Czxid, pst.Version, nil
}

// lastGrant reads Path: the guid of the attempt granted last, and its Stat.
func (s *Single) lastGrant(ctx context.Context, ep *session.Epoch) (string, *zk.Stat, error) {
	type res struct {
		guid string
		st   *zk.Stat
	}
	r, err := session.CallValue(ctx, func() (res, error) {
		data, st, err := ep.Conn().Get(s.Path)
		if err != nil {
			return res{}, session.ACLError("getData", s.Path, err)
		}
		g, ok := strings.CutPrefix(string(data), s.Mark)
		if !ok {
			g = ""
		}
		return res{g, st}, nil
	}, nil)
	return r.guid, r.st, err
}

// alone checks, after a grant, that Path holds no other kind of recipe's
// nodes: a waiting line's (a fair lock or election on the same path, whose
// holder cannot see this race's node if it listed the line before the
// create) or one Refuse names. Checked after the create, so of two
// contenders of different kinds, the later one always sees the earlier. If
// Path is refused, or the check cannot be made, h is released (its delete
// guarded) and the error returned.
func (s *Single) alone(ctx context.Context, ep *session.Epoch, h *Hold) error {
	names, err := Call(ctx, ep, func(c *zk.Conn) ([]string, error) {
		names, _, err := c.Children(s.Path)
		return names, session.ACLError("getChildren", s.Path, err)
	}, nil)
	if err == nil {
		err = s.foreignChild(names)
	}
	if err != nil {
		s.checked.Store(false)
		_ = h.Release(ctx) // not granted after all (it lets go whatever ctx)
	}
	return err
}

// foreignChild returns ErrWrongKind if names (Path's children) hold another
// kind of recipe's node: one Refuse names, or a waiting line's.
func (s *Single) foreignChild(names []string) error {
	for _, n := range names {
		if n == s.Name {
			continue
		}
		if what, ok := s.Refuse[n]; ok {
			return fmt.Errorf("%w: %s is %s", ErrWrongKind, s.Path, what)
		}
		if _, ok := ParseName(n); ok {
			return fmt.Errorf("%w: %s has %s, a waiting line's node (a fair recipe's path)", ErrWrongKind, s.Path, n)
		}
	}
	return nil
}

// refuseForeign checks, before this race first writes to Path (each grant
// writes its Mark there), that Path is not another recipe's: its data is
// empty or this race's Mark, and no child is another kind's (foreignChild).
// It returns Path's version, for the write to be made at (so that Path did
// not change in between), or -1 when there is no Path yet (the create then
// fails, Path is made, and the check runs again). Once a grant's write has
// landed, later attempts of this value skip it (Single.checked): alone still
// checks the children after each grant.
func (s *Single) refuseForeign(ctx context.Context, ep *session.Epoch) (int32, error) {
	type read struct {
		data  []byte
		st    *zk.Stat
		names []string
	}
	r, err := Call(ctx, ep, func(c *zk.Conn) (read, error) {
		data, st, err := c.Get(s.Path)
		if err != nil {
			return read{}, session.ACLError("getData", s.Path, err)
		}
		names, _, err := c.Children(s.Path)
		return read{data, st, names}, session.ACLError("getChildren", s.Path, err)
	}, nil)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return -1, nil
	case err != nil:
		return 0, err
	case len(r.data) > 0 && !strings.HasPrefix(string(r.data), s.Mark):
		return 0, fmt.Errorf("%w: %s records %q, another recipe's (this one writes %q there)", ErrWrongKind, s.Path,
			truncateData(r.data), strings.TrimSpace(s.Mark))
	}
	return r.st.Version, s.foreignChild(r.names)
}

// truncateData is data for an error message: at most 64 bytes.
func truncateData(d []byte) string {
	if len(d) > 64 {
		return string(d[:64]) + "…"
	}
	return string(d)
}

// hold is the grant of the node in ep at Path's version: its token is the
// node's creation zxid; its fence checks Path's version and the node; its
// release deletes the node only while Path's version is unchanged.
func (s *Single) hold(ep *session.Epoch, czxid int64, version int32) *Hold {
	node := s.node()
	return newHold(s.Sess, s.Recipe, s.OnDisconnect, ep, Token(czxid), &zk.CheckVersionRequest{Path: s.Path, Version: version}, node)
}

// removeIfOurs deletes the node if the attempt with guid holds it (a grant
// nobody learnt of), once ep's session is usable again; guarded by Path's
// version, so a later grant is never touched. It ends with the session.
func (s *Single) removeIfOurs(ep *session.Epoch, guid string) {
	var ours bool
	var version int32
	var cur *session.Epoch
	err := s.Sess.Do(ep.SessionContext(), func(e *session.Epoch) error {
		if e.SessionID() != ep.SessionID() {
			return ErrLost
		}
		g, pst, err := s.lastGrant(context.Background(), e)
		if err != nil {
			return err
		}
		ours, version, cur = g == guid, pst.Version, e
		return nil
	})
	if err == nil && ours {
		deleteGuarded(s.Sess, s.Recipe, cur, &zk.CheckVersionRequest{Path: s.Path, Version: version}, s.node())
	}
}
