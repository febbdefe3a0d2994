package election

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

const leaderChild = layout.NonFairLeaderNode // the node of the non-fair mode

// nonFairStamp is the data the non-fair mode writes to the election's path
// with each grant, followed by the attempt's guid (see race.Race).
const nonFairStamp = layout.NonFairLeaderStamp

type member struct {
	name string
	seq  int64
	guid string
}

// parseLatch parses a candidate's node name ("_c_<guid>-latch-<seq>", as
// Curator's LeaderLatch names them).
func parseLatch(name string) (member, bool) {
	n, ok := line.ParseName(name)
	if !ok || (n.Kind != recipe.KindLatch && n.Kind != recipe.KindKazooLock) {
		return member{}, false
	}
	return member{name: n.Name, seq: n.Seq, guid: n.GUID}, true
}

func (e *Election) line() *line.Line {
	check := e.layout
	if check == nil {
		// The non-fair mode (and an operator's Election) only lists the
		// line, which reads the check's kind: it never enters.
		check = line.NewPathCheck(layout.FairElection)
	}
	return &line.Line{Sess: e.sess, Recipe: "election", Path: e.path, Naming: e.names,
		Kinds: []string{e.names.Kind(recipe.KindLatch)}, Layout: check, OnDisconnect: e.policy}
}

// list returns the candidates in line order.
func (e *Election) list(ep *session.Epoch) ([]member, error) {
	names, err := e.line().List(ep)
	if err != nil {
		return nil, err
	}
	return members(names), nil
}

func members(names []line.Name) []member {
	ms := make([]member, len(names))
	for i, n := range names {
		ms[i] = member{name: n.Name, seq: n.Seq, guid: n.GUID}
	}
	return ms
}

// entered makes the candidate of n, a node just entered in ep's session,
// and records it as the candidate's node: its creation zxid is the term it
// will lead with. The first time, it warns of other candidates using our id.
func (e *Election) entered(ctx context.Context, ep *session.Epoch, n *line.Node) (*candidate, error) {
	c := &candidate{ep: ep, path: n.Path, name: n.Name.Name, seq: n.Seq, sid: ep.SessionID(), czxid: n.Czxid, node: n}
	if c.czxid == 0 {
		// The term is the node's creation zxid, which a create's answer
		// does not carry. Read it now, before waiting, so that a handoff
		// costs no extra round trip.
		if err := c.readTerm(ctx, ep); err != nil {
			return nil, err // the contender loop removes the node, or keeps it for its next round (a lost connection)
		}
	}
	e.mu.Lock()
	e.node = c
	if h := e.ho.Load(); h != nil {
		h.Poked() // a step-aside watch runs only with them made
	}
	first := !e.checkedIDs
	e.checkedIDs = true
	e.mu.Unlock()
	if first {
		// Once per Election: it costs a read per candidate.
		_ = epcall.Exec(ctx, ep, func(*zk.Conn) error { e.warnDuplicates(ep, c); return nil })
	}
	return c, nil
}

// readTerm reads c's term, its node's creation zxid, within ep.
func (c *candidate) readTerm(ctx context.Context, ep *session.Epoch) error {
	st, err := epcall.Call(ctx, ep, func(conn *zk.Conn) (*zk.Stat, error) {
		ok, st, err := conn.Exists(c.path)
		if err == nil && !ok {
			err = recipe.ErrNodeGone
		}
		return st, err
	}, nil)
	if err != nil {
		return err
	}
	c.czxid = st.Czxid
	return nil
}

// warnDuplicates logs other candidates using our id (a second process
// configured with the same id, or the node of our own previous session that
// the server has not removed yet).
func (e *Election) warnDuplicates(ep *session.Epoch, n *candidate) {
	ms, err := e.list(ep)
	if err != nil {
		return
	}
	for _, m := range ms {
		if m.name == n.name {
			continue
		}
		data, st, err := ep.Conn().Get(e.path + "/" + m.name)
		if id, _ := parseCandidate(data); err == nil && id == e.id {
			e.logger().Warn("election: another candidate uses this id", "node", m.name,
				"session", fmt.Sprintf("0x%x", st.EphemeralOwner))
		}
	}
}

// leave removes our node (the next candidate is notified at once), whatever
// ctx: the delete goes on in the background until the node is gone or its
// session is. ctx only bounds the wait for the server's confirmation (ctx's
// error when it did not come in time).
func (e *Election) leave(ctx context.Context) error {
	e.mu.Lock()
	n := e.node
	e.node = nil
	e.mu.Unlock()
	if n == nil {
		return nil
	}
	if n.hold != nil {
		// It led: releasing its last grant deletes it (guarded in the
		// non-fair race, whose node's name the next leader reuses).
		err := n.hold.Release(ctx)
		if errors.Is(err, recipe.ErrLost) || errors.Is(err, recipe.ErrNotHeld) {
			return nil // lost before: deleted once its session is back (or with it)
		}
		return err
	}
	// A place in line, never granted.
	select {
	case <-e.line().Leave(n.ep, n.path):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leaveBounded is leave, waiting for the server's confirmation at most one
// session timeout (and not past ctx): by then the connection is back and the
// delete made, or the session is lost and the node gone with it.
func (e *Election) leaveBounded(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, e.sess.Timeout())
	defer cancel()
	_ = e.leave(ctx)
}

// quit leaves the election: the line (see leave), and, in the non-fair
// layout, the registry.
func (e *Election) quit(ctx context.Context) error {
	err := e.leave(ctx)
	e.handovers().Unregister(ctx)
	return err
}

// quitBounded is quit, waiting at most one session timeout (and not past
// ctx: see leaveBounded).
func (e *Election) quitBounded(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, e.sess.Timeout())
	defer cancel()
	_ = e.quit(ctx)
}
