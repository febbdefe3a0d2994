package election

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

const leaderChild = "leader" // the node of the non-fair mode

type member struct {
	name string
	seq  int64
	guid string
}

// parseLatch parses a candidate's node name ("_c_<guid>-latch-<seq>", as
// Curator's LeaderLatch names them).
func parseLatch(name string) (member, bool) {
	n, ok := recipe.ParseName(name)
	if !ok || n.Kind != recipe.KindLatch {
		return member{}, false
	}
	return member{name: n.Name, seq: n.Seq, guid: n.GUID}, true
}

func (e *Election) line() *recipe.Line {
	return &recipe.Line{Sess: e.sess, Path: e.path, Kinds: []string{recipe.KindLatch}}
}

// list returns the candidates in line order.
func (e *Election) list(ep *session.Epoch) ([]member, error) {
	names, err := e.line().List(ep)
	if err != nil {
		return nil, err
	}
	return members(names), nil
}

func members(names []recipe.Name) []member {
	ms := make([]member, len(names))
	for i, n := range names {
		ms[i] = member{name: n.Name, seq: n.Seq, guid: n.GUID}
	}
	return ms
}

// ensureParents creates the election path and its parents.
func (e *Election) ensureParents(ep *session.Epoch) error {
	return recipe.EnsurePath(e.sess, ep, e.path)
}

// create enters the line in ep's session (a protected create: a lost answer
// leaves neither an orphan nor a duplicate); the node's creation zxid is the
// term it will lead with.
func (e *Election) create(ctx context.Context, ep *session.Epoch) (*candidate, error) {
	n, err := e.line().Enter(ctx, ep, recipe.KindLatch, []byte(e.id))
	if err != nil {
		return nil, err
	}
	c := &candidate{ep: ep, path: n.Path, name: n.Name.Name, seq: n.Seq, sid: ep.SessionID(), czxid: n.Czxid, node: n}
	if c.czxid == 0 {
		// The term is the node's creation zxid, which a create's answer
		// does not carry. Read it now, before waiting, so that a handoff
		// costs no extra round trip.
		st, err := recipe.Call(ctx, ep, func(c *zk.Conn) (*zk.Stat, error) {
			ok, st, err := c.Exists(n.Path)
			if err == nil && !ok {
				err = recipe.ErrNodeGone
			}
			return st, err
		}, nil)
		if err != nil {
			e.deleteNode(n.Path, ep)
			if errors.Is(err, recipe.ErrNodeGone) {
				err = errRetry
			}
			return nil, err
		}
		c.czxid = st.Czxid
	}
	return c, nil
}

// deleteNode removes one of our nodes (guaranteed delete).
// The non-fair mode's node has a fixed name: until its delete is over, the
// candidate must not race for it again (it would adopt the node on its way
// out as a new leadership).
func (e *Election) deleteNode(path string, ep *session.Epoch) {
	done := recipe.Leave(e.sess, ep, path)
	e.mu.Lock()
	e.deleting = done
	e.mu.Unlock()
}

// awaitDelete waits until a delete of our previous node is over.
func (e *Election) awaitDelete(ctx context.Context) error {
	e.mu.Lock()
	done := e.deleting
	e.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
