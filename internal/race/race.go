// Package race is the single-node race, the non-fair recipes' mechanism
// beside the waiting line (the non-fair mutex and the non-fair election
// race through it): one ephemeral node with a fixed name, each grant also
// writing the attempt's guid to the parent (whose version is the fence),
// adoption only on a guid match, and a guarded delete. See Race.
package race

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/shepherdzk/shepherd/hold"
	"github.com/shepherdzk/shepherd/internal/errs"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/zkdelete"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/wire/ctxcall"
	"github.com/shepherdzk/shepherd/session"
)

// Race is the single-node race, the non-fair recipes' mechanism beside the
// line (the non-fair mutex and the non-fair election both use it): contenders
// race to create one ephemeral node with a fixed name under Path; whoever
// creates it holds until it is deleted; the others watch it, every one of them
// (a herd on each release, by design: few contenders, lowest latency).
//
// A fixed name is reused by every grant, so the node alone cannot tell one
// grant from the next, nor one contender of a session from another of the
// same session. Each grant therefore creates the node and writes Stamp and the
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
// Every contender on one path must race through Race: a plain create of
// the node would not move the fence. The fields are set once, before use.
type Race struct {
	Sess *session.Session
	// Recipe names the recipe ("mutex", "election") in the events the race
	// and its holds report to the session's observer.
	Recipe string
	Path   string // the parent's full path (namespace included)
	Name   string // the node's name under Path
	Stamp  string // written to Path's data with each grant, before the attempt's guid
	// Layout is the kind of recipe racing here (layout.NonFairMutex,
	// layout.NonFairElection): a path that holds another kind's nodes or
	// stamp (a waiting line's node too: a race and a line on one path would
	// each grant a holder) is refused before the race's first write there
	// and after each grant. Run then fails with line.ErrWrongKind.
	Layout *layout.Recipe
	// OnDisconnect is what a lost connection does to the race's holds (0:
	// the session's DisconnectPolicy).
	OnDisconnect session.DisconnectPolicy

	// checked: Path was found to be this race's (see refuseForeign) and a
	// grant's write landed there since.
	checked atomic.Bool
}

// Attempt is one contender's claim in a Race race.
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
	// contender (its data and Stat). It runs on Run's goroutine and must
	// not block.
	Seen func(data []byte, st *zk.Stat)
	// Check, if not nil, is called before each create: the ops it returns
	// are added to the grant's multi-op, after the node's create and the
	// fence's write, so that the server grants only while they hold (the
	// election's handover reservation). When the multi-op fails at one of
	// them, Run returns an error matching ErrCheckFailed (and the op's
	// own error) instead of racing on.
	Check func() []any
	// Eager, if not nil, is asked when the node changes while the attempt
	// waits: true makes it race at once, without the jittered wait that
	// spreads a crowd of waiters (the election's handover successor, for
	// which the server holds every other racer back).
	Eager func() bool
}

// ErrCheckFailed: a race's grant was refused by one of its Attempt's Check
// ops.
var ErrCheckFailed = errs.New("recipe: the grant's check failed")

// node is the race's node.
func (s *Race) node() string { return s.Path + "/" + s.Name }

// Run races for the node until attempt a holds it, and returns the hold;
// (nil, nil) when a.Wait is false and another contender holds it; or ctx's
// error when ctx ends. It waits for the session to be usable, and creates
// Path on demand. When it returns without a hold, a node this attempt may
// have created unseen (its answer lost) is deleted, guarded.
func (s *Race) Run(ctx context.Context, a Attempt) (*hold.Hold, error) {
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

// create makes attempt a's grant: the node and Path's stamp, in one multi-op.
// If ctx ends with it in flight, a node it made is deleted once its answer
// (or the connection) is back.
func (s *Race) create(ctx context.Context, ep *session.Epoch, a Attempt, version int32) ([]zk.MultiResponse, error) {
	type multi struct {
		res []zk.MultiResponse
		err error
	}
	ops := []any{
		&zk.CreateRequest{Path: s.node(), Data: a.Data, Acl: s.Sess.ACL(), Flags: zk.FlagEphemeral},
		&zk.SetDataRequest{Path: s.Path, Data: []byte(s.Stamp + a.GUID), Version: version},
	}
	if a.Check != nil {
		ops = append(ops, a.Check()...)
	}
	r, err := ctxcall.Value(ctx, func() (multi, error) {
		res, err := ep.Conn().Multi(ops...)
		return multi{res, aclerr.MapMulti(ops, res, err)}, nil
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
func (s *Race) grantedTo(ctx context.Context, ep *session.Epoch, guid string, st *zk.Stat) (bool, int32, error) {
	g, pst, err := s.lastGrant(ctx, ep)
	if err != nil {
		return false, 0, err
	}
	// Path's last change created the node: no grant since.
	return g == guid && pst.Mzxid == st.Czxid, pst.Version, nil
}

// lastGrant reads Path: the guid of the attempt granted last, and its Stat.
func (s *Race) lastGrant(ctx context.Context, ep *session.Epoch) (string, *zk.Stat, error) {
	type res struct {
		guid string
		st   *zk.Stat
	}
	r, err := ctxcall.Value(ctx, func() (res, error) {
		data, st, err := ep.Conn().Get(s.Path)
		if err != nil {
			return res{}, aclerr.Map("getData", s.Path, err)
		}
		g, ok := strings.CutPrefix(string(data), s.Stamp)
		if !ok {
			g = ""
		}
		return res{g, st}, nil
	}, nil)
	return r.guid, r.st, err
}

// hold is the grant of the node in ep at Path's version: its token is the
// node's creation zxid; its fence checks Path's version and the node; its
// release deletes the node only while Path's version is unchanged.
func (s *Race) hold(ep *session.Epoch, czxid int64, version int32) *hold.Hold {
	h, _ := hold.New(hold.Config{Sess: s.Sess, Recipe: s.Recipe, Policy: s.OnDisconnect, Epoch: ep, Token: hold.Token(czxid),
		Guard: &zk.CheckVersionRequest{Path: s.Path, Version: version}, Nodes: []string{s.node()}}) // never invalid here
	return h
}

// removeIfOurs deletes the node if the attempt with guid holds it (a grant
// nobody learnt of), once ep's session is usable again; guarded by Path's
// version, so a later grant is never touched. It ends with the session.
func (s *Race) removeIfOurs(ep *session.Epoch, guid string) {
	var ours bool
	var version int32
	var cur *session.Epoch
	err := s.Sess.Do(ep.SessionContext(), func(e *session.Epoch) error {
		if e.SessionID() != ep.SessionID() {
			return line.ErrLost
		}
		g, pst, err := s.lastGrant(context.Background(), e)
		if err != nil {
			return err
		}
		ours, version, cur = g == guid, pst.Version, e
		return nil
	})
	if err == nil && ours {
		zkdelete.Start(true, s.Sess, s.Recipe, cur, &zk.CheckVersionRequest{Path: s.Path, Version: version}, []string{s.node()}, nil, nil)
	}
}
