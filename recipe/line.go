package recipe

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/zkpath"
	"github.com/shepherdzk/shepherd/session"
)

// Line is the waiting line of contenders under one path.
type Line struct {
	Sess *session.Session
	// Recipe names the recipe ("mutex", "semaphore", ...) in the events the
	// line and its holds report to the session's observer.
	Recipe string
	Path   string // full path (namespace included)
	// Kinds are the kinds that take part in this line (all when empty), as
	// the line's naming gives them (Names.Kind). When set, a contender of
	// another kind makes the path foreign (ErrForeignRecipe).
	Kinds []string
	// Names is how the line names its nodes (CuratorNames, the zero value,
	// or KazooNames): a contender named the other way makes the path
	// foreign (ErrForeignRecipe).
	Names Names
	// Refuse names children whose presence means the path belongs to another
	// kind of recipe (name → what it is): List then fails with ErrWrongKind.
	Refuse map[string]string
	// Ensure, if set, creates Path when Enter finds it missing (the
	// default, EnsurePath, creates it and its parents as empty containers):
	// for a recipe whose path carries a record of its own.
	Ensure func(ep *session.Epoch) error
	// OnDisconnect is what a lost connection does to the line's holds (0:
	// the session's DisconnectPolicy).
	OnDisconnect session.DisconnectPolicy
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

	seen   []Name // the line as listed together with the create (nil: not seen)
	data   []byte // the data it was created with (a mark writes it again)
	marked bool   // its holder has marked it (see AwaitOptions.Mark)
	next   Name   // the node after it when the line was last listed ("": none)
}

// TakeSeen returns, once, the line as it was listed in the same round trip
// as the node's create (it includes the node), and whether there is one.
func (n *Node) TakeSeen() ([]Name, bool) {
	s := n.seen
	n.seen = nil
	return s, s != nil
}

// NewGUID returns a fresh random guid for a protected create: 32 lowercase
// hex digits laid out as an RFC 9562 UUIDv8 (version nibble 8, variant 10),
// which is how a shepherd contender's node is told from another library's
// (see Name.Shepherd). Curator's guids are dashed UUIDs and Kazoo's are
// UUIDv4 hex: neither ever matches.
func NewGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b[:])
}

// Shepherd reports whether the node was created by shepherd (its guid is
// NewGUID's): a contender that handles every kind of watch event on the node
// it waits behind, a data change included. A foreign node may not (Curator's
// LeaderLatch acts only on its predecessor's deletion, and a data change
// spends its one-shot watch). A guid of shepherd's first release (plain
// random hex) matches 1 time in 64, which is harmless: those waiters too
// handle every event.
func (n Name) Shepherd() bool {
	g := n.GUID
	if len(g) != 32 || g[12] != '8' || (g[16] != '8' && g[16] != '9' && g[16] != 'a' && g[16] != 'b') {
		return false
	}
	for i := 0; i < len(g); i++ {
		if c := g[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// EnsurePath creates the line's path and its parents (container nodes, see
// EnsurePath), or, when the line has an Ensure function, calls it.
func (l *Line) EnsurePath(ep *session.Epoch) error {
	if l.Ensure != nil {
		return l.Ensure(ep)
	}
	return EnsurePath(l.Sess, ep, l.Path)
}

// EnsurePath creates p and its parents that are missing, as container nodes
// (empty, the session's ACL): ZooKeeper (3.5+) removes a container that has
// had children and has none left, so a path nobody uses any more does not
// stay behind for ever (Curator creates its recipes' parents the same way).
// A container can so disappear at any moment it is empty, between this call
// and the create meant for it too: a caller whose create then fails with
// zk.ErrNoNode calls EnsurePath again (a container just created has had no
// child, and is not removed). A parent that vanishes while EnsurePath walks
// down is created again, a bounded number of times. For p "/" (the parent of
// a path directly under the root) there is nothing to create.
func EnsurePath(sess *session.Session, ep *session.Epoch, p string) error {
	if p == "/" {
		return nil // the root always exists (and cannot be created)
	}
	path := append(zkpath.Parents(p), p)
	var err error
	for round := 0; round < ensureRounds; round++ {
		if err = ensureOnce(sess, ep, path); !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return err
}

// ensureVersionedPath creates p as a persistent node, and its missing parents
// as containers (see EnsurePath): for a path whose data version fences holds
// (the non-fair race's guarded delete checks it). A container removed and
// created again starts at version 0 again, so a delete retried across its
// two lives could pass the check and remove the next holder's node; a
// persistent path keeps counting.
func ensureVersionedPath(sess *session.Session, ep *session.Epoch, p string) error {
	var err error
	for round := 0; round < ensureRounds; round++ {
		if err = ensureOnce(sess, ep, zkpath.Parents(p)); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		if err == nil {
			_, err = ep.Conn().Create(p, nil, 0, sess.ACL())
			if err == nil || errors.Is(err, zk.ErrNodeExists) {
				return nil
			}
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return session.ACLError("create", p, err)
		}
	}
	return err
}

// ensureRounds bounds EnsurePath's walks down the path (each one is undone
// only by a container removed between two of its creates) and the creates a
// caller retries after zk.ErrNoNode.
const ensureRounds = 10

func ensureOnce(sess *session.Session, ep *session.Epoch, path []string) error {
	for _, q := range path {
		_, err := ep.Conn().CreateContainer(q, nil, zk.FlagContainer, sess.ACL())
		if errors.Is(err, zk.ErrNoAuth) {
			// The server checks the parent's ACL before it looks for the
			// node: a node that exists under a parent we may not create
			// in (a tree an operator made) is there all the same.
			if ok, _, xerr := ep.Conn().Exists(q); xerr == nil && ok {
				continue
			}
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return session.ACLError("create", q, err)
		}
	}
	return nil
}

// List returns the line's contenders in order.
func (l *Line) List(ep *session.Epoch) ([]Name, error) {
	names, _, err := ep.Conn().Children(l.Path)
	if err != nil {
		return nil, session.ACLError("getChildren", l.Path, err)
	}
	return l.sorted(names)
}

// sorted checks children for refused names and returns the line in order. A
// line that has no reliable order (see Unordered) is an error that wraps
// ErrSequenceExhausted: no one is ever granted on it.
func (l *Line) sorted(names []string) ([]Name, error) {
	for _, n := range names {
		if what, ok := l.Refuse[n]; ok {
			return nil, fmt.Errorf("%w: %s is %s", ErrWrongKind, l.Path, what)
		}
	}
	if err := l.foreign(names); err != nil {
		return nil, err
	}
	line := Sort(names, l.Kinds...)
	if seq, bad := Unordered(line); bad {
		return nil, fmt.Errorf("recipe: %s: %w (a child has sequence number %d, duplicate, maximal or wrapped: "+
			"the line has no order; remove the path once no one holds or waits on it)", l.Path, ErrSequenceExhausted, seq)
	}
	return line, nil
}

// foreign refuses a line holding a contender named the other way (the other
// library never sees our nodes, so no grant here is safe on either side), or,
// when the line has Kinds, a contender of another kind (another recipe whose
// holder this one cannot tell: a LeaderSelector's lock- nodes on an election
// path).
func (l *Line) foreign(names []string) error {
	for _, s := range names {
		n, ok := ParseName(s)
		if !ok {
			continue
		}
		if NamesOf(n.Kind) != l.Names {
			return fmt.Errorf("recipe: %s: %w: %s is named %s (Kazoo and Curator name nodes differently and "+
				"neither sees the other's; this recipe uses %s names)", l.Path, ErrForeignRecipe, s, Library(n.Kind), l.Names)
		}
		if len(l.Kinds) > 0 && !hasKind(l.Kinds, n.Kind) {
			return fmt.Errorf("recipe: %s: %w: %s is named %s, not as this recipe's nodes (%v)", l.Path, ErrForeignRecipe,
				s, Library(n.Kind), l.Kinds)
		}
	}
	return nil
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
	kind = l.Names.Kind(kind)
	prefix := l.Path + "/" + l.Names.Prefix(guid, kind)
	res, err := session.CallValue(ctx, func() (entered, error) {
		unknown := false // a create's outcome was unknown
		for attempt := 0; ; attempt++ {
			if ep.Context().Err() != nil {
				// Not connected: a create now would wait in go-zookeeper's
				// queue. Recover a node we may have made, then give up.
				if attempt > 0 {
					if e, dups, ok, ferr := l.findOwnWhenBack(ep, guid); ferr == nil && ok {
						return l.adopt(ep, e, dups), nil
					}
				}
				return entered{}, fmt.Errorf("%w: connection lost while entering the line", errEpochEnded)
			}
			r := ep.CreateThenChildren(prefix, data, zk.FlagEphemeral|zk.FlagSequence, l.Sess.ACL(), l.Path)
			switch err := r.Err; {
			case err == nil:
				e := entered{path: r.Path, seen: r.Children}
				if attempt > 0 {
					// An earlier create's answer was lost and the lookup
					// did not find it: if it has landed since, it is in
					// the listing, and it goes.
					e.seen = l.dropLate(ep, guid, r.Path, r.Children)
				}
				if unknown {
					// It may land later still (see sweepLate).
					go l.sweepLate(ep, guid, r.Path)
				}
				return e, nil
			case errors.Is(err, zk.ErrNoNode) && attempt < ensureRounds:
				// The path is missing (or was an empty container the
				// server has just removed): create it and go again.
				if err := l.EnsurePath(ep); err != nil {
					return entered{}, err
				}
			case session.OutcomeUnknown(err) && attempt < 20:
				unknown = true
				e, dups, found, ferr := l.findOwnWhenBack(ep, guid)
				if ferr == nil && found {
					if attempt > 0 {
						// Another of our creates may land later still.
						go l.sweepLate(ep, guid, e.path)
					}
					return l.adopt(ep, e, dups), nil
				}
				if ep.SessionContext().Err() != nil {
					return entered{}, ErrLost
				}
			default:
				return entered{}, session.ACLError("create", prefix, err)
			}
		}
	}, func(made entered, err error) {
		// The caller gave up (ctx ended) with the create in flight: remove
		// what it made, or look for it by guid if its answer was lost.
		if err == nil {
			l.Delete(ep, made.path)
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
	own := &Node{Path: res.path, Name: n, SessionID: ep.SessionID(), Czxid: res.czxid, Position: -1, data: data}
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
// looks for the node with guid owned by ep's session (see findOwn).
func (l *Line) findOwnWhenBack(ep *session.Epoch, guid string) (entered, []string, bool, error) {
	ctx, cancel := context.WithTimeout(ep.SessionContext(), l.Sess.Timeout()+time.Second)
	defer cancel()
	cur, err := l.Sess.Wait(ctx)
	if err != nil {
		return entered{}, nil, false, err
	}
	if cur.SessionID() != ep.SessionID() {
		return entered{}, nil, false, ErrLost
	}
	return l.findOwn(cur, guid)
}

// adopt takes e, found by guid after a lost answer, as our node, and removes
// the other nodes of our session that carry the same guid (a create that
// landed after an earlier lookup had missed it): one node per contender.
func (l *Line) adopt(ep *session.Epoch, e entered, dups []string) entered {
	if len(dups) > 0 {
		l.Sess.Report(session.RecipeEvent{Kind: session.OrphanCleanup, Recipe: l.Recipe, Path: dups[0], SessionID: ep.SessionID()})
		l.Delete(ep, dups...)
	}
	return e
}

// dropLate removes the nodes with guid in children, other than made, that
// ep's session owns (a create of ours whose answer was lost and that a lookup
// missed), and returns children without them.
func (l *Line) dropLate(ep *session.Epoch, guid, made string, children []string) []string {
	var late []string
	kept := children[:0:0]
	for _, c := range children {
		n, ok := ParseName(c)
		if !ok || n.GUID != guid || l.Path+"/"+c == made {
			kept = append(kept, c)
			continue
		}
		ok, st, err := ep.Conn().Exists(l.Path + "/" + c)
		if err == nil && ok && st.EphemeralOwner == ep.SessionID() {
			late = append(late, l.Path+"/"+c)
			continue
		}
		kept = append(kept, c)
	}
	if len(late) > 0 {
		l.Sess.Report(session.RecipeEvent{Kind: session.OrphanCleanup, Recipe: l.Recipe, Path: late[0], SessionID: ep.SessionID()})
		l.Delete(ep, late...)
	}
	if children == nil {
		return nil
	}
	return kept
}

// sweepLate looks again for nodes with guid other than made, a few times
// over a session timeout, and removes those of ep's session: a create of ours
// whose answer was lost can reach the leader after our lookup (the server we
// lost may forward it late), and, left there, it would head the line once we
// are gone, held by no one, until our session ends.
func (l *Line) sweepLate(ep *session.Epoch, guid, made string) {
	AfterDelays(l.Sess, ep, []time.Duration{100 * time.Millisecond, time.Second, l.Sess.Timeout()}, func(cur *session.Epoch) {
		first, dups, found, err := l.findOwn(cur, guid)
		if err != nil || !found {
			return
		}
		var late []string
		for _, p := range append([]string{first.path}, dups...) {
			if p != made {
				late = append(late, p)
			}
		}
		if len(late) > 0 {
			l.Sess.Report(session.RecipeEvent{Kind: session.OrphanCleanup, Recipe: l.Recipe, Path: late[0], SessionID: ep.SessionID()})
			l.Delete(cur, late...)
		}
	})
}

// AfterDelays calls look after each of delays in turn, with the current
// epoch of ep's session when the session is usable then (a turn it is not
// is skipped), and stops once ep's session has ended: for sweeps that look
// again, a few times, for nodes of their own session that a create whose
// answer was lost may still make (the server it was lost with can forward
// it late). It returns when done; run it on a goroutine of its own.
func AfterDelays(sess *session.Session, ep *session.Epoch, delays []time.Duration, look func(cur *session.Epoch)) {
	for _, d := range delays {
		t := time.NewTimer(d)
		select {
		case <-ep.SessionDone():
			t.Stop()
			return
		case <-t.C:
		}
		cur, ok := sess.Current()
		if !ok {
			continue // not connected now: look at the next turn
		}
		if cur.SessionID() != ep.SessionID() {
			return // the session is gone: so are its nodes
		}
		look(cur)
	}
}

// cleanupGUID removes the nodes with guid that a create abandoned by its
// caller may have made.
func (l *Line) cleanupGUID(ep *session.Epoch, guid string) {
	for i := 0; i < 100 && ep.SessionContext().Err() == nil; i++ {
		e, dups, ok, err := l.findOwnWhenBack(ep, guid)
		switch {
		case err == nil && ok:
			l.Sess.Report(session.RecipeEvent{Kind: session.OrphanCleanup, Recipe: l.Recipe, Path: e.path, SessionID: ep.SessionID()})
			l.Delete(ep, append([]string{e.path}, dups...)...)
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

// FindOwn looks for a node with guid owned by ep's session (the first in
// line, if there are several, as a multi-op creating several leases with one
// guid makes), after a sync (see findOwn).
func (l *Line) FindOwn(ep *session.Epoch, guid string) (string, bool, error) {
	e, _, ok, err := l.findOwn(ep, guid)
	return e.path, ok, err
}

// findOwn looks for the nodes with guid owned by ep's session: the first in
// line (the one to adopt, with its creation zxid), and the others. It syncs
// the path first: the server the session is connected to now may lag the
// leader, and a create sent before the connection was lost (forwarded to the
// leader by the old server) may be applied there before the lookup but not
// yet here; without the sync the lookup could miss it, the caller would
// create again, and the late node would block the line as an orphan of a
// live session.
func (l *Line) findOwn(ep *session.Epoch, guid string) (entered, []string, bool, error) {
	if _, err := ep.Conn().Sync(l.Path); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return entered{}, nil, false, err
	}
	names, _, err := ep.Conn().Children(l.Path)
	if errors.Is(err, zk.ErrNoNode) {
		return entered{}, nil, false, nil
	} else if err != nil {
		return entered{}, nil, false, err
	}
	var mine []Name
	for _, s := range names {
		if n, ok := ParseName(s); ok && n.GUID == guid {
			mine = append(mine, n)
		}
	}
	slices.SortFunc(mine, func(a, b Name) int { return cmp.Compare(a.Seq, b.Seq) })
	var own entered
	var dups []string
	found := false
	for _, n := range mine {
		p := l.Path + "/" + n.Name
		ok, st, err := ep.Conn().Exists(p)
		if err != nil {
			return entered{}, nil, false, err
		}
		if !ok || st.EphemeralOwner != ep.SessionID() {
			continue
		}
		if !found {
			own, found = entered{path: p, czxid: st.Czxid}, true
		} else {
			dups = append(dups, p)
		}
	}
	return own, dups, found, nil
}

// errEpochEnded: the connection was lost while waiting; wait for the session
// to be usable again and go on (same session) or re-enter (new session).
var errEpochEnded = errors.New("connection lost")

// ErrNodeGone reports that a contender's node disappeared from the line: its
// session must have ended. The contender re-enters the line.
var ErrNodeGone = errors.New("our node is gone from the line")

// Turn decides, from the line and our index i in it, whether we are granted;
// if not, which node to watch (its index: usually one ahead of i, the node
// whose deletion can change the answer; any node of the line may be
// watched), and whether that node's deletion alone grants us (no need to
// list the line again).
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
	// Mark, for a line whose turn grants only its head (a lock, a writer,
	// the semaphore's head), makes a waiter that is granted after having
	// waited (not at the head when it first looked) mark its node: it writes
	// the node's own data again, so its version moves from 0. A mark says
	// "every node before this one is gone", for good (sequence numbers only
	// grow), and the waiter watching the node learns it from the data-change
	// notification (or from the version its watch reads): when the node is
	// then deleted, that waiter is granted without listing the line, so a
	// handoff costs the same few bytes however long the line. Nothing else
	// writes a line node's data (whoever could forge a mark could as well
	// delete the node). A node without a mark (a foreign contender's, a
	// holder that died first) costs a listing, as before. Never for a
	// shared hold (a reader: a reader before it may still hold), nor for an
	// election unless MarkFor is set: Curator's LeaderLatch acts only on
	// NodeDeleted, and a data change spends its one-shot watch. The mark
	// costs the holder one write and its watcher one more notification and
	// one GetW.
	Mark bool
	// MarkFor, with Mark, marks only when the node after the holder's, as
	// the line was last listed, is one MarkFor accepts (a contender that
	// handles a data change of the node it waits behind, see Name.Shepherd),
	// and only while that node is still there: the mark is a multi with a
	// check of it. Nobody can join the line between the two (sequence
	// numbers only grow), so while it is there it is the one contender
	// watching the holder's node for its turn; a contender that left has
	// only a stale watch, and a foreign one never sees a data change it
	// could mistake. A waiter told that the node before it is marked then
	// lists the line once more, while it waits, to learn its own successor
	// (one more request, off the handoff's path). The election marks so.
	MarkFor func(next Name) bool
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

// Await waits in line until turn grants own, within epoch ep. The first
// look uses the line listed with own's create (see Node.TakeSeen) unless it
// was taken: a recipe that waits on something else first takes it, as it is
// stale by then. It returns nil
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
	grant := func() error {
		if opt.Mark && own.Position > 0 && !own.marked {
			l.mark(ctx, ep, own, opt.MarkFor)
		}
		return l.room(ctx, ep, opt)
	}
	for {
		line, ok := own.TakeSeen()
		if !ok {
			var err error
			line, err = l.listCtx(ctx, ep)
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
		own.setNext(line, i)
		granted, w, delGrants := turn(line, i)
		if granted {
			return grant()
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
		// If line[w] is (or becomes) marked, every node before it is gone
		// for good: its deletion grants us when the nodes between it and
		// us (still there or not) would let us be granted.
		afterMark := delGrants
		if !delGrants {
			afterMark, _, _ = turn(line[w+1:], i-w-1)
		}
		if ws.nodeVersion > 0 && afterMark {
			delGrants = true
		}
	wait:
		for {
			select {
			case ev := <-ws.node:
				switch {
				case ev.Type == zk.EventNodeDeleted && delGrants && ep.Context().Err() == nil:
					return grant()
				case ev.Type == zk.EventNodeDataChanged && afterMark && ws.head == nil:
					// line[w] is marked: watch it again for its deletion.
					ch, err := l.rewatch(ctx, ep, line[w])
					if errors.Is(err, zk.ErrNoNode) {
						if ep.Context().Err() != nil {
							return errEpochEnded
						}
						return grant() // marked, then deleted
					} else if err != nil {
						return err
					}
					ws.node, delGrants = ch, true
					if opt.Mark && opt.MarkFor != nil {
						l.learnNext(ctx, ep, own)
					}
					continue wait
				}
			case ev := <-ws.head:
				if ev.Type == zk.EventNodeDataChanged {
					// The head marked its node: it is still the head.
					// Watch it again rather than list the line.
					ch, err := l.rewatch(ctx, ep, line[0])
					if err == nil {
						ws.head = ch
						continue wait
					} else if !errors.Is(err, zk.ErrNoNode) {
						return err
					}
				}
			case <-ep.Done():
				return errEpochEnded
			case <-ctx.Done():
				return ctx.Err()
			}
			break
		}
	}
}

// mark marks own's node (see AwaitOptions.Mark): a write of its own data at
// version 0, so at most once. It returns once the write is on the wire
// (session.Epoch.SetWritten), without waiting for the answer: the holder's
// next request (its release) goes out after it, and the grant costs no round
// trip. The mark is a hint: it fails harmlessly (the node gone, ctx ended)
// and the hold does not depend on it.
func (l *Line) mark(ctx context.Context, ep *session.Epoch, own *Node, markFor func(Name) bool) {
	var written <-chan struct{}
	if markFor == nil {
		own.marked = true
		written, _ = ep.SetWritten(own.Path, own.data, 0)
	} else {
		if own.next.Name == "" || !markFor(own.next) {
			return
		}
		own.marked = true
		written, _ = ep.MultiWritten(&zk.SetDataRequest{Path: own.Path, Data: own.data, Version: 0},
			&zk.CheckVersionRequest{Path: l.Path + "/" + own.next.Name, Version: -1})
	}
	select {
	case <-written:
	case <-ep.Done():
	case <-ctx.Done():
	}
}

// learnNext lists the line to learn the node after own (see
// AwaitOptions.MarkFor). It is a hint: on any error own.next stays as it
// was, and a mark checks that the node is still there.
func (l *Line) learnNext(ctx context.Context, ep *session.Epoch, own *Node) {
	line, err := l.listCtx(ctx, ep)
	if err != nil {
		return
	}
	if i := Index(line, own.Name.Name); i >= 0 {
		own.setNext(line, i)
	}
}

// setNext records the node after own, line[i].
func (own *Node) setNext(line []Name, i int) {
	own.next = Name{}
	if i+1 < len(line) {
		own.next = line[i+1]
	}
}

// listCtx is List, honouring ctx (see Call).
func (l *Line) listCtx(ctx context.Context, ep *session.Epoch) ([]Name, error) {
	return Call(ctx, ep, func(*zk.Conn) ([]Name, error) { return l.List(ep) }, nil)
}

// rewatch watches n again (GetW), once its data has changed.
func (l *Line) rewatch(ctx context.Context, ep *session.Epoch, n Name) (<-chan zk.Event, error) {
	return Call(ctx, ep, func(c *zk.Conn) (<-chan zk.Event, error) {
		_, _, ch, err := c.GetW(l.Path + "/" + n.Name)
		return ch, err
	}, nil)
}

// watches is what a waiter waits on: the node its turn names, and the head
// of the line when it is told about it (nil when that is the same node).
type watches struct {
	node, head  <-chan zk.Event
	data        []byte   // the head's data
	st          *zk.Stat // the head's Stat, when read
	nodeVersion int32    // the watched node's data version (see AwaitOptions.Mark)
}

// watch sets the watches of a waiter at its place in line: on line[w] and,
// when head is set, on line[0] too, each with GetW.
func (l *Line) watch(ctx context.Context, ep *session.Epoch, line []Name, w int, head bool) (watches, error) {
	return Call(ctx, ep, func(c *zk.Conn) (watches, error) {
		var ws watches
		if head {
			data, st, ch, err := c.GetW(l.Path + "/" + line[0].Name)
			if err != nil {
				return ws, session.ACLError("getData", l.Path+"/"+line[0].Name, err)
			}
			ws.data, ws.st, ws.head = StripRevoke(data), st, ch
			if w == 0 {
				ws.node, ws.head, ws.nodeVersion = ch, nil, st.Version
				return ws, nil
			}
		}
		_, st, ch, err := c.GetW(l.Path + "/" + line[w].Name)
		ws.node = ch
		if st != nil {
			ws.nodeVersion = st.Version
		}
		return ws, session.ACLError("getData", l.Path+"/"+line[w].Name, err)
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
				return counted{len(Sort(names, r.Kinds...)), ch}, session.ACLError("getChildren", r.Path, err)
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
// the old one is lost, means entering the line again). A request answered
// zk.ErrSessionExpired (in flight when the server ended the session, its
// answer read before the manager declared the session Lost) is one: the
// next try finds the new session.
func Retryable(err error) bool {
	if errors.Is(err, ErrWrongKind) || errors.Is(err, ErrForeignRecipe) || errors.Is(err, ErrMaxLeasesMismatch) || errors.Is(err, ErrSequenceExhausted) ||
		errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrClosed) {
		return false
	}
	return errors.Is(err, errEpochEnded) || errors.Is(err, ErrNodeGone) ||
		errors.Is(err, ErrLost) || errors.Is(err, zk.ErrSessionExpired) || session.OutcomeUnknown(err)
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
