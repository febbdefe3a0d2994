package admin

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/shepherdzk/shepherd/hold"
	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/construct"
	"github.com/shepherdzk/shepherd/session"
)

// An operator's revocation of a hold (shepherd revoke), in one place.
//
// The request travels in the hold's own node: its data, with a suffix the
// holder recognises (layout.RevokeSuffix and the mode). Every hold watches its own
// node (ownwatch.go), so the holder hears it with the notification of
// that write, and no other request or watch is needed on either side:
//
//   - Ask (AskRevoke): the holder's RevokeRequested is closed; it releases
//     when its work allows. The operator waits for the node's deletion.
//   - Force (Revoke): the holder loses the hold at once (ErrRevoked: Lost
//     closes, Context ends), and only then deletes its own nodes. A waiter,
//     granted at that deletion, is so granted after the holder was told.
//     A holder that does not delete its node within the grace (its process
//     stuck, its connection down) has it deleted by the operator: it learns
//     of it when its watch fires, or, disconnected, when it reaches a
//     server again (a paused hold's resume reads its node first).
//
// The suffix keeps the holder's data readable (status shows it, stripped).
// A request is written only to a node that heads its line (a lock's or a
// writer's holder, a leader, the first reader) or is in none (a semaphore's
// lease, a non-fair recipe's node): a waiter takes a data change of the
// node it watches as its holder's mark, "every node before it is gone"
// (AwaitOptions.MarkFor), which is true of such a node and of no other. A
// holder that does not head its line (a reader behind another) cannot be
// asked, and a forced revocation deletes its node without telling it first
// (its own watch tells it; no one is granted before the readers ahead of
// it are gone).

// ErrNotHead: a revocation request (AskRevoke) was made to a node that does
// not head its line (a waiter, or a reader behind others), where it would
// read as its holder's mark.
var ErrNotHead = line.NewError("the node does not head its line: only a holder at the head can be asked")

// Grant is one grant of a hold: its node, the creation zxid of that node
// (the hold's token) and the session that owns it. A node with a fixed name
// (a non-fair lock's or election's) is made again by the next grant; a
// Grant tells them apart, and an operator's action on it never touches a
// later grant of the same name. Token and SessionID 0 stand for the grant
// found at the node when the action first reads it (then pinned).
// Entry.Grant is the grant Inspect saw.
type Grant struct {
	Node      string
	Token     hold.Token
	SessionID int64
}

// Grant is the grant the entry shows (see Grant).
func (e Entry) Grant() Grant { return Grant{Node: e.Node, Token: e.Token, SessionID: e.SessionID} }

// errAgain: a versioned write found the node or its parent changed since
// read: read again.
var errAgain = errors.New("admin: read again")

// errGrantGone: the grant's node is gone, or is a later grant's.
var errGrantGone = line.NewError("the grant has ended")

// matches reports whether st is the Stat of g's node (once pinned).
func (g *Grant) matches(st *zk.Stat) bool {
	return (g.Token == 0 || st.Czxid == int64(g.Token)) && (g.SessionID == 0 || st.EphemeralOwner == g.SessionID)
}

// read reads g's node, and before it its parent, and pins g to the node:
// errGrantGone when the node is gone or is another grant's. guard checks
// the parent's version as read: a write made under it lands only if no
// later grant of the node's name was made since the node was read (each
// grant of a non-fair recipe writes its parent; a line's node names are
// never reused). The parent is read first: read after the node, it could
// already be a later grant's, and pass the check.
func (g *Grant) read(c *zk.Conn) (data []byte, st *zk.Stat, guard *zk.CheckVersionRequest, err error) {
	parent := path.Dir(g.Node)
	ok, pst, err := c.Exists(parent)
	switch {
	case err != nil:
		return nil, nil, nil, aclerr.Map("exists", parent, err)
	case !ok:
		return nil, nil, nil, errGrantGone // the node went with it
	}
	data, st, err = c.Get(g.Node)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, nil, nil, errGrantGone
	case err != nil:
		return nil, nil, nil, aclerr.Map("getData", g.Node, err)
	case !g.matches(st):
		return nil, nil, nil, errGrantGone
	}
	g.Token, g.SessionID = hold.Token(st.Czxid), st.EphemeralOwner
	return data, st, &zk.CheckVersionRequest{Path: parent, Version: pst.Version}, nil
}

// AskRevoke asks the holder of grant g (a lock's or a writer's holder, a
// leader, a lease's node, the first reader) to let go, and waits until the
// grant has ended or ctx ends (then it returns ctx's error; the request
// stays). A grant already ended is no error; a node that does not head its
// line is ErrNotHead. A holder that does not use shepherd (Curator, Kazoo)
// ignores the request.
func AskRevoke(ctx context.Context, sess *session.Session, g Grant) error {
	if err := construct.Check("revoke", sess, g.Node); err != nil {
		return err
	}
	if _, err := requestRevoke(ctx, sess, &g, layout.RevokeAsk); err != nil {
		if errors.Is(err, errGrantGone) {
			return nil
		}
		return err
	}
	_, err := waitGone(ctx, sess, &g, nil)
	return err
}

// Revoke forces grant g to end: the holder (if it is shepherd's and can
// hear) loses the hold at once and deletes its node itself; if the grant is
// still there after grace, Revoke deletes its node. It acts on that one
// grant only: a later grant of the same name (a non-fair recipe's next
// holder) is never asked nor deleted. It reports whether the grant ended
// without Revoke's delete (the holder let go). A grant already ended is no
// error. Revoke needs DELETE permission on the node's parent, and WRITE on
// the node to tell the holder first (without it, or on a node that does not
// head its line, it deletes at once: the holder learns of it from its own
// watch).
func Revoke(ctx context.Context, sess *session.Session, g Grant, grace time.Duration) (byHolder bool, err error) {
	if err := construct.Check("revoke", sess, g.Node); err != nil {
		return false, err
	}
	if asked, err := requestRevoke(ctx, sess, &g, layout.RevokeForce); err != nil {
		switch {
		case errors.Is(err, errGrantGone):
			return asked, nil // gone: after the request (its holder let go), or before
		case !errors.Is(err, zk.ErrNoAuth) && !errors.Is(err, ErrNotHead):
			return false, err
		}
		grace = 0 // not allowed to tell: only the delete is left
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	gone, err := waitGone(ctx, sess, &g, t.C)
	if err != nil || gone {
		return gone, err
	}
	return deleteGrant(ctx, sess, &g)
}

// deleteGrant deletes g's node, unless the grant has ended (then it
// reports true): in one multi-op, at the version of the node read after its
// creation zxid was checked, and at the version of its parent read before
// it (see Grant.read: a later grant of the same name fails the check).
func deleteGrant(ctx context.Context, sess *session.Session, g *Grant) (bool, error) {
	sent := false // a delete whose answer was lost: its success reads as "gone"
	for range 8 {
		gone := false
		err := sess.Do(ctx, func(ep *session.Epoch) error {
			return epcall.Exec(ctx, ep, func(c *zk.Conn) error {
				_, st, guard, err := g.read(c)
				if errors.Is(err, errGrantGone) {
					gone = true
					return nil
				} else if err != nil {
					return err
				}
				sent = true
				_, err = c.Multi(guard, &zk.DeleteRequest{Path: g.Node, Version: st.Version})
				if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
					return errAgain // changed since read: read again
				}
				return aclerr.Map("delete", g.Node, err)
			})
		})
		switch {
		case errors.Is(err, errAgain):
			continue
		case err != nil:
			return false, fmt.Errorf("revoke %s: delete: %w", g.Node, err)
		case gone:
			return !sent, nil
		}
		return false, nil
	}
	return false, fmt.Errorf("revoke %s: delete: the node or its parent kept changing (8 tries)", g.Node)
}

// requestRevoke appends the request to the data of g's node, once the node
// is known to head its line (or be in none), at the version read so that a
// concurrent write (its holder's mark) is not overwritten. It pins g at its
// first read, and returns errGrantGone once the grant has ended. It reports
// whether the request may have reached the holder (a write was sent, or the
// node carries the request).
func requestRevoke(ctx context.Context, sess *session.Session, g *Grant, mode string) (bool, error) {
	const tries = 8
	asked := false // written by op: read only once op has returned
	for i := 0; ; i++ {
		err := sess.Do(ctx, func(ep *session.Epoch) error {
			return epcall.Exec(ctx, ep, func(c *zk.Conn) error {
				data, st, guard, err := g.read(c)
				if err != nil {
					return err
				}
				if err := headsLine(c, g.Node); err != nil {
					return err
				}
				holder, had := layout.RevokeRequest(data)
				if had == mode || had == layout.RevokeForce {
					asked = true
					return nil
				}
				req := append(append(append([]byte(nil), holder...), layout.RevokeSuffix...), mode...)
				asked = true // from here on the holder may hear it
				_, err = c.Multi(guard, &zk.SetDataRequest{Path: g.Node, Data: req, Version: st.Version})
				if errors.Is(err, zk.ErrNoNode) {
					return errGrantGone
				}
				return aclerr.Map("setData", g.Node, err)
			})
		})
		if epcall.Abandoned(err) {
			return false, fmt.Errorf("revoke %s: %w", g.Node, err) // op may still run: asked is not read
		}
		if !errors.Is(err, zk.ErrBadVersion) || i == tries {
			if err != nil && !errors.Is(err, errGrantGone) {
				return asked, fmt.Errorf("revoke %s: %w", g.Node, err)
			}
			return asked, err
		}
	}
}

// headsLine returns nil if node heads its line or is in none (see above):
// no contender node of its parent (of any kind but a lease's) comes before
// it. Nothing joins a line before a node already in it (sequence numbers
// only grow), so once true it stays true while the node lasts.
func headsLine(c *zk.Conn, node string) error {
	i := strings.LastIndex(node, "/")
	own, ok := line.ParseName(node[i+1:])
	if !ok || own.Kind == line.KindLease {
		return nil
	}
	parent := node[:i]
	if parent == "" {
		parent = "/"
	}
	names, _, err := c.Children(parent)
	if err != nil {
		return aclerr.Map("getChildren", parent, err)
	}
	for _, n := range line.Sort(names) {
		switch {
		case n.Name == own.Name:
			return nil
		case n.Seq > own.Seq:
			return errGrantGone // past its place: it has left the line
		case n.Kind != line.KindLease:
			return fmt.Errorf("%w: %s waits behind %s", ErrNotHead, node, n.Name)
		}
	}
	return errGrantGone
}

// waitGone waits until grant g has ended (true): its node deleted, or made
// again by a later grant; stop fires (false) or ctx ends (its error).
func waitGone(ctx context.Context, sess *session.Session, g *Grant, stop <-chan time.Time) (bool, error) {
	for {
		ep, err := sess.Wait(ctx)
		if err != nil {
			return false, err
		}
		w, err := epcall.Call(ctx, ep, func(c *zk.Conn) (<-chan zk.Event, error) {
			ok, st, w, err := c.ExistsW(g.Node)
			if err == nil && (!ok || !g.matches(st)) {
				// Gone, or a later grant's node (whose watch stays
				// until it changes: one notification).
				return nil, nil
			}
			return w, err
		}, nil)
		switch {
		case err == nil && w == nil:
			return true, nil
		case err != nil && !session.OutcomeUnknown(err):
			return false, fmt.Errorf("revoke %s: %w", g.Node, err)
		}
		select {
		case <-w: // any event: look again
		case <-ep.Done():
		case <-stop:
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}
