// Package zkdelete is shepherd's guaranteed delete: nodes of one session,
// deleted at once when it can, else in the background with a context of its
// own, until they are gone or their session is (lost, or the session
// manager closed: the server then removes them). It follows the session,
// not a clock. A node with a fixed name is deleted under a guard (a version
// check), so that a retried delete never removes a later grant's node; a
// node a hold attached is deleted only while it is still the hold's (its
// owner and data). Holds, waiting lines and the single-node race all delete
// through it.
package zkdelete

import (
	"bytes"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/session"
)

// Deletion is one guaranteed delete.
type Deletion struct {
	sess   *session.Session
	recipe string         // for the observer
	ep     *session.Epoch // an epoch of the nodes' session
	guard  *zk.CheckVersionRequest
	paths  []string
	// attached are nodes with fixed names that go with paths (see
	// Attach): deleted in the same multi-op, or, if some node is gone
	// already, each while it is still the hold's (deleteAttached).
	attached []Node
	// mark, when not nil, is written to paths[0] in the multi that
	// deletes it (see AwaitOptions.MarkOnRelease), when paths[0] is the
	// only node; a refusal of the write drops it, never the delete.
	mark []byte
	done chan struct{}
	err  error // an answer that ended it other than success (read after done)
}

// Node is a node attached to a hold (see hold.Hold.Attach): its path, and
// the data it was created with, which with its owner (the deletion's
// session) is its identity.
type Node struct {
	Path string
	Data []byte
}

// Done is closed when the delete is over: done, or the session gone.
func (d *Deletion) Done() <-chan struct{} { return d.done }

// Err is an answer that ended the delete other than success (no
// permission, ...), read once Done is closed.
func (d *Deletion) Err() error { return d.err }

// Start starts deleting paths, nodes of ep's session (any epoch of that
// session will do). With inline, the first try runs on the caller's
// goroutine (when connected); the rest, or everything without inline, runs
// in the background until the nodes are gone or their session is. guard,
// if not nil, is a check the delete is made under (a failed guard ends
// it: the nodes are someone else's business now). attached go with paths
// (in the same multi-op, or each while it is still the hold's); mark, if
// not nil, is written to paths[0] as it goes (see Marked). A delete that has
// to be retried is reported to the session's observer (observe.DeleteRetry,
// with recipe).
func Start(inline bool, sess *session.Session, recipe string, ep *session.Epoch, guard *zk.CheckVersionRequest,
	paths []string, attached []Node, mark []byte) *Deletion {
	d := &Deletion{sess: sess, recipe: recipe, ep: ep, guard: guard, paths: paths, attached: attached, mark: mark, done: make(chan struct{})}
	if len(paths) == 0 && len(attached) == 0 {
		close(d.done)
		return d
	}
	tried := false
	if inline {
		cur := ep
		if c, ok := sess.Current(); ok && c.SessionID() == ep.SessionID() {
			cur = c // ep may have ended, and its session be back
		}
		if cur.Context().Err() == nil {
			over, err := d.try(cur)
			if over {
				d.err = err
				close(d.done)
				return d
			}
			tried = true
		}
	}
	if inline {
		d.retrying()
	}
	go d.run(tried)
	return d
}

func (d *Deletion) retrying() {
	p := ""
	if len(d.paths) > 0 {
		p = d.paths[0]
	} else if len(d.attached) > 0 {
		p = d.attached[0].Path
	}
	d.sess.Report(observe.RecipeEvent{Kind: observe.DeleteRetry, Recipe: d.recipe, Path: p, SessionID: d.ep.SessionID()})
}

// run tries until the delete is over: it waits for the session to be usable
// (as long as it lives), tries, and backs off between failed tries.
func (d *Deletion) run(tried bool) {
	defer close(d.done)
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 50 * time.Millisecond
	b.MaxInterval = 2 * time.Second
	b.MaxElapsedTime = 0 // never stop: the session's end is what ends it
	b.Reset()
	sctx := d.ep.SessionContext()
	reported := tried
	for {
		if tried {
			t := time.NewTimer(b.NextBackOff())
			select {
			case <-t.C:
			case <-sctx.Done():
				t.Stop()
				return
			}
		}
		// Until the session is usable again: ErrClosed once the manager is
		// closed, sctx's end once the session is lost. Either way the
		// server removes (or has removed) the session's nodes.
		cur, err := d.sess.Wait(sctx)
		if err != nil || cur.SessionID() != d.ep.SessionID() {
			return
		}
		over, err := d.try(cur)
		if over {
			d.err = err
			return
		}
		if !reported {
			d.retrying()
			reported = true
		}
		tried = true
	}
}

// try makes one attempt in ep. It reports whether the delete is over, and an
// answer other than success that ended it.
func (d *Deletion) try(ep *session.Epoch) (bool, error) {
	if ep.Context().Err() != nil {
		return false, nil // not connected: a request would only queue
	}
	switch err := d.send(ep.Conn()); {
	case err == nil || errors.Is(err, zk.ErrNoNode):
		return true, nil
	case errors.Is(err, zk.ErrSessionExpired) || ep.SessionContext().Err() != nil:
		return true, nil // the session is gone, and its nodes with it
	case session.OutcomeUnknown(err):
		return false, err
	default:
		return true, err // an answer (no permission, ...): retrying cannot help
	}
}

// send sends the delete in the shape it has: guarded, with attached nodes,
// marked, one node, or several. NoNode means the nodes are gone.
func (d *Deletion) send(conn *zk.Conn) error {
	switch {
	case d.guard != nil:
		ops := []any{d.guard}
		for _, p := range d.paths {
			ops = append(ops, &zk.DeleteRequest{Path: p, Version: -1})
		}
		for _, a := range d.attached {
			ops = append(ops, &zk.DeleteRequest{Path: a.Path, Version: -1})
		}
		_, err := conn.Multi(ops...)
		if errors.Is(err, zk.ErrBadVersion) {
			return nil // the guard failed: a later grant owns the name now
		}
		return err
	case len(d.attached) > 0 || len(d.paths) == 0:
		return d.tryAttached(conn)
	case len(d.paths) == 1 && d.mark != nil:
		return d.tryMarked(conn)
	case len(d.paths) == 1:
		return conn.Delete(d.paths[0], -1)
	}
	ops := make([]any, len(d.paths))
	for i, p := range d.paths {
		ops[i] = &zk.DeleteRequest{Path: p, Version: -1}
	}
	_, err := conn.Multi(ops...)
	if !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	// Some are gone already: delete one by one.
	for _, p := range d.paths {
		if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return nil
}

// tryMarked marks paths[0] and deletes it in one multi-op (see
// line.AwaitOptions.MarkOnRelease and Marked): a mark the server refuses
// is dropped, never the delete.
func (d *Deletion) tryMarked(conn *zk.Conn) error {
	_, _, refused, err := Marked(conn, nil, d.paths[0], d.mark)
	if refused {
		d.mark = nil
	}
	return err
}

// tryAttached deletes paths and the attached nodes in one multi-op. If
// something is gone already (an operator's delete of the hold's node, an
// earlier try whose answer was lost, a loss that deleted the attached
// nodes), each attached node is deleted while it is still the hold's
// (deleteAttached), then paths one by one.
func (d *Deletion) tryAttached(conn *zk.Conn) error {
	if len(d.paths) > 0 {
		ops := make([]any, 0, len(d.paths)+len(d.attached))
		for _, p := range d.paths {
			ops = append(ops, &zk.DeleteRequest{Path: p, Version: -1})
		}
		for _, a := range d.attached {
			ops = append(ops, &zk.DeleteRequest{Path: a.Path, Version: -1})
		}
		if _, err := conn.Multi(ops...); !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	for _, a := range d.attached {
		if err := deleteAttached(conn, d.ep.SessionID(), a); err != nil {
			return err
		}
	}
	for _, p := range d.paths {
		if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return nil
}

// deleteAttached deletes a if it is still the attached node (see Node):
// owned by session sid, with a's data. Its delete is made at the
// version read with that check: a node made again meanwhile under the same
// name (another holder's, after someone deleted ours) is read again and
// left alone. A node whose name was reused and whose new data and owner
// match ours is ours by definition: the same session attached it.
func deleteAttached(conn *zk.Conn, sid int64, a Node) error {
	for range 8 {
		data, st, err := conn.Get(a.Path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil
		case err != nil:
			return err
		case st.EphemeralOwner != sid || !bytes.Equal(data, a.Data):
			return nil // someone else's now
		}
		err = conn.Delete(a.Path, st.Version)
		if !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return nil
}

// Marked sends ops, then a mark of path (a write of mark, when not nil) and
// its delete, as one multi-op on c: the one way a node is marked as it goes
// (a release's, a line's Consume). A mark the server refuses (ErrNoAuth on
// it: an ACL without WRITE for us, which the delete does not need) is
// dropped, refused is set, and the multi-op is sent again without it: the
// waiter behind lists the line. Any other answer is returned as it is.
func Marked(c *zk.Conn, ops []any, path string, mark []byte) (sent []any, res []zk.MultiResponse, refused bool, err error) {
	del := &zk.DeleteRequest{Path: path, Version: -1}
	if mark != nil {
		sent = append(ops[:len(ops):len(ops)], &zk.SetDataRequest{Path: path, Data: mark, Version: -1}, del)
		res, err = c.Multi(sent...)
		if err == nil || len(res) <= len(ops) || !errors.Is(res[len(ops)].Error, zk.ErrNoAuth) {
			return sent, res, false, err
		}
		refused = true
	}
	sent = append(ops[:len(ops):len(ops)], del)
	res, err = c.Multi(sent...)
	return sent, res, refused, err
}
