package recipe

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/zkpath"
	"github.com/shepherdzk/shepherd/session"
)

// Line is the waiting line of contenders under one path.
type Line struct {
	Sess  *session.Session
	Path  string   // full path (namespace included)
	Kinds []string // the kinds that take part in this line (all when empty)
	// Refuse names children whose presence means the path belongs to another
	// kind of recipe (name → what it is): List then fails with ErrWrongKind.
	Refuse map[string]string
}

// Node is a contender's own node, bound to the session that created it.
type Node struct {
	Path string // full path
	Name
	SessionID int64
	// Czxid is the zxid that created the node (a hold's fencing token), or
	// 0 when Enter did not learn it (a create's answer carries no Stat).
	Czxid int64
	// Position is the node's place in line when first seen by Await (0: the
	// head), -1 before.
	Position int

	seen []Name // the line as listed together with the create (nil: not seen)
}

// TakeSeen returns, once, the line as it was listed in the same round trip
// as the node's create (it includes the node), and whether there is one.
func (n *Node) TakeSeen() ([]Name, bool) {
	s := n.seen
	n.seen = nil
	return s, s != nil
}

// NewGUID returns a fresh random guid for a protected create.
func NewGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// EnsurePath creates the line's path and its parents (persistent, empty).
func (l *Line) EnsurePath(ep *session.Epoch) error {
	return EnsurePath(l.Sess, ep, l.Path)
}

// EnsurePath creates p and its parents (persistent, empty, the session's ACL).
func EnsurePath(sess *session.Session, ep *session.Epoch, p string) error {
	for _, q := range append(zkpath.Parents(p), p) {
		_, err := ep.Conn().Create(q, nil, 0, sess.ACL())
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// List returns the line's contenders in order.
func (l *Line) List(ep *session.Epoch) ([]Name, error) {
	names, _, err := ep.Conn().Children(l.Path)
	if err != nil {
		return nil, err
	}
	return l.sorted(names)
}

// sorted checks children for refused names and returns the line in order.
func (l *Line) sorted(names []string) ([]Name, error) {
	for _, n := range names {
		if what, ok := l.Refuse[n]; ok {
			return nil, fmt.Errorf("%w: %s is %s", ErrWrongKind, l.Path, what)
		}
	}
	return Sort(names, l.Kinds...), nil
}

// Enter joins the line in ep's session with a protected EPHEMERAL_SEQUENTIAL
// create of the given kind: if the create's answer is lost, the node is looked
// for by its guid (and adopted only if ep's session owns it) before another
// create is tried, so a lost answer leaves neither an orphan nor a duplicate.
// It creates the path on demand. The line is listed in the same round trip
// (the listing is sent as soon as the create is on the wire: see
// session.Epoch.CreateThenChildren): Node.TakeSeen gives it. One round trip
// when the path exists.
func (l *Line) Enter(ctx context.Context, ep *session.Epoch, kind string, data []byte) (*Node, error) {
	guid := NewGUID()
	prefix := l.Path + "/" + ProtectedPrefix(guid, kind)
	res, err := session.CallValue(ctx, func() (entered, error) {
		for attempt := 0; ; attempt++ {
			if ep.Context().Err() != nil {
				// Not connected: a create now would wait in go-zookeeper's
				// queue. Recover a node we may have made, then give up.
				if attempt > 0 {
					if e, ok, ferr := l.findOwnWhenBack(ep, guid); ferr == nil && ok {
						return e, nil
					}
				}
				return entered{}, fmt.Errorf("%w: connection lost while entering the line", errEpochEnded)
			}
			r := ep.CreateThenChildren(prefix, data, zk.FlagEphemeral|zk.FlagSequence, l.Sess.ACL(), l.Path)
			switch err := r.Err; {
			case err == nil:
				return entered{path: r.Path, seen: r.Children}, nil
			case errors.Is(err, zk.ErrNoNode) && attempt < 3:
				if err := l.EnsurePath(ep); err != nil {
					return entered{}, err
				}
			case session.OutcomeUnknown(err) && attempt < 20:
				e, found, ferr := l.findOwnWhenBack(ep, guid)
				if ferr == nil && found {
					return e, nil
				}
				if ep.SessionContext().Err() != nil {
					return entered{}, ErrLost
				}
			default:
				return entered{}, err
			}
		}
	}, func(made entered, err error) {
		// The caller gave up (ctx ended) with the create in flight: remove
		// what it made, or look for it by guid if its answer was lost.
		if err == nil {
			Delete(l.Sess, ep, made.path)
		} else if session.OutcomeUnknown(err) || errors.Is(err, errEpochEnded) {
			l.cleanupGUID(ep, guid)
		}
	})
	if err != nil {
		if ctx.Err() == nil && (session.OutcomeUnknown(err) || errors.Is(err, errEpochEnded)) {
			// A create may have landed unseen: find it by guid once the
			// connection is back and remove it (the caller enters again with
			// a new node).
			go l.cleanupGUID(ep, guid)
		}
		return nil, err
	}
	n, _ := ParseName(res.path[len(l.Path)+1:])
	own := &Node{Path: res.path, Name: n, SessionID: ep.SessionID(), Czxid: res.czxid, Position: -1}
	if res.seen != nil {
		// Trusted only if it shows our node (the two requests may have gone
		// out on different connections) and no refused name.
		if line, err := l.sorted(res.seen); err == nil && Index(line, n.Name) >= 0 {
			own.seen = line
		}
	}
	return own, nil
}

// entered is a node Enter made: its path and creation zxid, and the line as
// listed with the create (nil if not).
type entered struct {
	path  string
	czxid int64
	seen  []string
}

// findOwnWhenBack waits (bounded) for the session to be connected again and
// looks for the node with guid owned by ep's session.
func (l *Line) findOwnWhenBack(ep *session.Epoch, guid string) (entered, bool, error) {
	ctx, cancel := context.WithTimeout(ep.SessionContext(), l.Sess.Timeout()+time.Second)
	defer cancel()
	cur, err := l.Sess.Wait(ctx)
	if err != nil {
		return entered{}, false, err
	}
	if cur.SessionID() != ep.SessionID() {
		return entered{}, false, ErrLost
	}
	return l.findOwn(cur, guid)
}

// cleanupGUID removes a node with guid that a create abandoned by its caller
// may have made.
func (l *Line) cleanupGUID(ep *session.Epoch, guid string) {
	for i := 0; i < 100 && ep.SessionContext().Err() == nil; i++ {
		e, ok, err := l.findOwnWhenBack(ep, guid)
		switch {
		case err == nil && ok:
			l.Sess.Report(session.RecipeEvent{Kind: session.OrphanCleanup, Path: e.path, SessionID: ep.SessionID()})
			Delete(l.Sess, ep, e.path)
			return
		case err == nil:
			// Not there (yet): a create still queued may land later. Look
			// again after the connection has settled, a few times.
			if i >= 3 {
				return
			}
		case !session.OutcomeUnknown(err):
			return
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ep.SessionDone():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// FindOwn looks for a node with guid owned by ep's session.
func (l *Line) FindOwn(ep *session.Epoch, guid string) (string, bool, error) {
	e, ok, err := l.findOwn(ep, guid)
	return e.path, ok, err
}

// findOwn is FindOwn, with the node's creation zxid.
func (l *Line) findOwn(ep *session.Epoch, guid string) (entered, bool, error) {
	names, _, err := ep.Conn().Children(l.Path)
	if errors.Is(err, zk.ErrNoNode) {
		return entered{}, false, nil
	} else if err != nil {
		return entered{}, false, err
	}
	for _, s := range names {
		n, ok := ParseName(s)
		if !ok || n.GUID != guid {
			continue
		}
		p := l.Path + "/" + s
		ok, st, err := ep.Conn().Exists(p)
		if err != nil {
			return entered{}, false, err
		}
		if ok && st.EphemeralOwner == ep.SessionID() {
			return entered{path: p, czxid: st.Czxid}, true, nil
		}
	}
	return entered{}, false, nil
}

// errEpochEnded: the connection was lost while waiting; wait for the session
// to be usable again and go on (same session) or re-enter (new session).
var errEpochEnded = errors.New("connection lost")

// ErrNodeGone reports that a contender's node disappeared from the line: its
// session must have ended. The contender re-enters the line.
var ErrNodeGone = errors.New("our node is gone from the line")

// Turn decides, from the line and our index i in it, whether we are granted;
// if not, which node to watch (an index below i), and whether that node's
// deletion alone grants us (no need to list the line again).
type Turn func(line []Name, i int) (granted bool, watch int, deletionGrants bool)

// ErrWouldWait: with AwaitOptions.NoWait, the waiter is not granted now.
var ErrWouldWait = NewError("not granted without waiting")

// AwaitOptions adds to what Await does. The zero value is Await's.
type AwaitOptions struct {
	// NoWait makes AwaitWith look once and return ErrWouldWait instead of
	// waiting (TryLock, TryAcquire).
	NoWait bool
	// OnHead, when set, is told the head of the line (its name, data and
	// Stat, read with a watch) each time a waiter that is not the head looks
	// at the line, on the caller's goroutine. The head is then watched too
	// (with the same GetW when it is the node turn names), and a change of
	// it wakes the waiter, which looks again. The election reports its
	// leaders with it.
	OnHead func(head Name, data []byte, st *zk.Stat)
	// Room, when set, is a second condition once turn grants (see Room).
	Room *Room
}

// Room is a gate past a waiter's turn, for the head of a semaphore's line:
// the waiter is granted only once the children of Path (of Kinds) leave room
// for Need more under Max(). Only the head of the line adds such children,
// so while it waits a change of them is a release: it watches Path's
// children (one notification per release, to one client) and, woken, counts
// the release without listing again when that leaves room.
type Room struct {
	Path  string
	Kinds []string
	Need  int
	Max   func() int
	// Held is, once AwaitWith has returned nil, the number of children of
	// Path it counted.
	Held int
}

// Await waits in line until turn grants own, within epoch ep. It returns nil
// when granted while ep is still live; ErrNodeGone when own has left the line;
// an error matching Retryable when ep ended (wait for the session and call
// again); or ctx.Err(). Each wait watches exactly one node, with GetW: one
// notification per change that matters. Every call it makes honours ctx (see
// Call).
func (l *Line) Await(ctx context.Context, ep *session.Epoch, own *Node, turn Turn) error {
	return l.AwaitWith(ctx, ep, own, turn, AwaitOptions{})
}

// AwaitWith is Await with options: the one waiting loop of every recipe.
func (l *Line) AwaitWith(ctx context.Context, ep *session.Epoch, own *Node, turn Turn, opt AwaitOptions) error {
	for {
		line, ok := own.TakeSeen()
		if !ok {
			var err error
			line, err = Call(ctx, ep, func(*zk.Conn) ([]Name, error) { return l.List(ep) }, nil)
			if err != nil {
				return err
			}
		}
		i := Index(line, own.Name.Name)
		if i < 0 {
			return ErrNodeGone
		}
		if own.Position < 0 {
			own.Position = i
		}
		granted, w, delGrants := turn(line, i)
		if granted {
			return l.room(ctx, ep, opt)
		}
		if opt.NoWait {
			return ErrWouldWait
		}
		ws, err := l.watch(ctx, ep, line, w, opt.OnHead != nil)
		if ws.st != nil {
			opt.OnHead(line[0], ws.data, ws.st)
		}
		if errors.Is(err, zk.ErrNoNode) {
			continue
		} else if err != nil {
			return err
		}
		select {
		case ev := <-ws.node:
			if ev.Type == zk.EventNodeDeleted && delGrants && ep.Context().Err() == nil {
				return l.room(ctx, ep, opt)
			}
		case <-ws.head:
		case <-ep.Done():
			return errEpochEnded
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// watches is what a waiter waits on: the node its turn names, and the head
// of the line when it is told about it (nil when that is the same node).
type watches struct {
	node, head <-chan zk.Event
	data       []byte   // the head's data
	st         *zk.Stat // the head's Stat, when read
}

// watch sets the watches of a waiter at its place in line: on line[w] and,
// when head is set, on line[0] too, each with GetW.
func (l *Line) watch(ctx context.Context, ep *session.Epoch, line []Name, w int, head bool) (watches, error) {
	return Call(ctx, ep, func(c *zk.Conn) (watches, error) {
		var ws watches
		if head {
			data, st, ch, err := c.GetW(l.Path + "/" + line[0].Name)
			if err != nil {
				return ws, err
			}
			ws.data, ws.st, ws.head = data, st, ch
			if w == 0 {
				ws.node, ws.head = ch, nil
				return ws, nil
			}
		}
		_, _, ch, err := c.GetW(l.Path + "/" + line[w].Name)
		ws.node = ch
		return ws, err
	}, nil)
}

// room waits, for a waiter whose turn has come, until opt.Room (if any)
// leaves room. A waiter (not NoWait) sets a watch with its first look: it
// expects no room (the head before it most likely took the last), and a
// second look to set the watch would cost a round trip.
func (l *Line) room(ctx context.Context, ep *session.Epoch, opt AwaitOptions) error {
	r := opt.Room
	if r == nil {
		if ep.Context().Err() != nil {
			return errEpochEnded
		}
		return nil
	}
	type counted struct {
		n  int
		ch <-chan zk.Event
	}
	watch := !opt.NoWait
	held := -1 // children of r.Path, when known without listing
	for {
		var ch <-chan zk.Event
		if held < 0 {
			res, err := Call(ctx, ep, func(c *zk.Conn) (counted, error) {
				var names []string
				var ch <-chan zk.Event
				var err error
				if watch {
					names, _, ch, err = c.ChildrenW(r.Path)
				} else {
					names, _, err = c.Children(r.Path)
				}
				return counted{len(Sort(names, r.Kinds...)), ch}, err
			}, nil)
			if err != nil {
				return err
			}
			held, ch = res.n, res.ch
		}
		if held+r.Need <= r.Max() {
			if ep.Context().Err() != nil {
				return errEpochEnded
			}
			r.Held = held
			return nil
		}
		if opt.NoWait {
			return ErrWouldWait
		}
		if ch == nil {
			watch, held = true, -1
			continue
		}
		select {
		case ev := <-ch:
			watch = false
			// A change of the children while we head the line is a release
			// (or an expiry): at most held-1 are left. If that leaves room,
			// go without listing again; else look.
			if ev.Type == zk.EventNodeChildrenChanged && held-1+r.Need <= r.Max() {
				held--
			} else {
				held = -1
			}
		case <-ep.Done():
			return errEpochEnded
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Retryable reports whether err from Enter or Await means "the connection was
// lost: wait for the session to be usable and try again" (a new session, if
// the old one is lost, means entering the line again).
func Retryable(err error) bool {
	if errors.Is(err, ErrWrongKind) || errors.Is(err, ErrMaxLeasesMismatch) ||
		errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrClosed) {
		return false
	}
	return errors.Is(err, errEpochEnded) || errors.Is(err, ErrNodeGone) ||
		errors.Is(err, ErrLost) || session.OutcomeUnknown(err)
}

// Delete removes one of our nodes: at once if it can, else in the background
// with a context of its own, until it is gone or its session is (the server
// then removes it). It never touches another session's node: path is one ep's
// session created.
// The returned channel is closed when the delete is over (done, or the
// session is gone).
func Delete(sess *session.Session, ep *session.Epoch, path string) <-chan struct{} {
	return DeleteMany(sess, ep, path)
}

// DeleteMany is Delete for several nodes, in one multi-op.
func DeleteMany(sess *session.Session, ep *session.Epoch, paths ...string) <-chan struct{} {
	return DeleteGuarded(sess, ep, nil, paths...)
}

// DeleteGuarded is DeleteMany, but only while guard (a version check) holds:
// for nodes with a fixed name, which a later hold of the same session may
// have re-created, a retried delete must not remove the new one. A failed
// guard ends the delete (the nodes are someone else's business now).
func DeleteGuarded(sess *session.Session, ep *session.Epoch, guard *zk.CheckVersionRequest, paths ...string) <-chan struct{} {
	done := make(chan struct{})
	if len(paths) == 0 {
		close(done)
		return done
	}
	try := func(ep *session.Epoch) bool {
		var err error
		if guard != nil {
			ops := []any{guard}
			for _, p := range paths {
				ops = append(ops, &zk.DeleteRequest{Path: p, Version: -1})
			}
			_, err = ep.Conn().Multi(ops...)
		} else if len(paths) == 1 {
			err = ep.Conn().Delete(paths[0], -1)
		} else {
			ops := make([]any, len(paths))
			for i, p := range paths {
				ops[i] = &zk.DeleteRequest{Path: p, Version: -1}
			}
			_, err = ep.Conn().Multi(ops...)
			if errors.Is(err, zk.ErrNoNode) {
				// Some are gone already: delete one by one.
				for _, p := range paths {
					if e := ep.Conn().Delete(p, -1); e != nil && !errors.Is(e, zk.ErrNoNode) {
						err = e
						break
					}
					err = nil
				}
			}
		}
		return err == nil || errors.Is(err, zk.ErrNoNode) || ep.SessionContext().Err() != nil ||
			!session.OutcomeUnknown(err)
	}
	if ep.Context().Err() == nil && try(ep) {
		close(done)
		return done
	}
	sess.Report(session.RecipeEvent{Kind: session.DeleteRetry, Path: paths[0], SessionID: ep.SessionID()})
	go func() {
		defer close(done)
		for i := 0; i < 600; i++ {
			ctx, cancel := context.WithTimeout(ep.SessionContext(), time.Minute)
			cur, err := sess.Wait(ctx)
			cancel()
			if err != nil || cur.SessionID() != ep.SessionID() {
				return // the session is gone: so are its nodes
			}
			if try(cur) {
				return
			}
			t := time.NewTimer(100 * time.Millisecond)
			select {
			case <-cur.SessionDone():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
	return done
}

// WaitLive waits until the session is usable again after ep ended (or ctx
// ends), pacing retries so a flapping connection does not spin.
func WaitLive(ctx context.Context, ep *session.Epoch) error {
	t := time.NewTimer(20 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ep.Done():
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	return nil
}
