package line

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/wire/ctxcall"
	"github.com/shepherdzk/shepherd/internal/wire/wiretap"
	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/session"
)

// Enter joins the line in ep's session with a protected EPHEMERAL_SEQUENTIAL
// create of the given kind: if the create's answer is lost, the node is looked
// for by its guid (and adopted only if ep's session owns it) before another
// create is tried, so a lost answer leaves neither an orphan nor a duplicate.
// It creates the path on demand. The line is listed in the same round trip
// (the listing is sent as soon as the create is on the wire: see
// wiretap.CreateThenChildren): Node.TakeSeen gives it. One round trip
// when the path exists.
func (l *Line) Enter(ctx context.Context, ep *session.Epoch, kind string, data []byte) (*Node, error) {
	if l.Sess == nil || ep == nil {
		return nil, fmt.Errorf("line %s: %w: nil session or epoch", l.Path, ErrInvalidArgument)
	}
	// Before the first write to the path: refuse another kind's.
	if err := l.Layout.Check(ctx, ep, l.Path); err != nil {
		return nil, err
	}
	guid := NewGUID()
	prefix := l.Path + "/" + l.Naming.Prefix(guid, l.Naming.Kind(kind))
	res, err := ctxcall.Value(ctx, func() (entered, error) {
		return l.create(ep, guid, prefix, data)
	}, func(made entered, err error) {
		// The caller gave up (ctx ended) with the create in flight: remove
		// what it made, or look for it by guid if its answer was lost.
		if err == nil {
			l.Delete(ep, made.path)
		} else if session.OutcomeUnknown(err) || errors.Is(err, ErrEpochEnded) {
			l.cleanupGUID(ep, guid)
		}
	})
	if err != nil {
		if ctx.Err() == nil && (session.OutcomeUnknown(err) || errors.Is(err, ErrEpochEnded)) {
			// A create may have landed unseen: find it by guid once the
			// connection is back and remove it (the caller enters again with
			// a new node).
			go l.cleanupGUID(ep, guid)
		}
		return nil, err
	}
	return l.newNode(ep, res, data), nil
}

// newNode is the Node for res, made by Enter with data.
func (l *Line) newNode(ep *session.Epoch, res entered, data []byte) *Node {
	n, _ := ParseName(res.path[len(l.Path)+1:])
	own := &Node{Path: res.path, Name: n, SessionID: ep.SessionID(), Czxid: res.czxid, Position: -1, data: data}
	if res.seen != nil {
		// Trusted only if it shows our node (the two requests may have gone
		// out on different connections) and no refused name.
		if line, err := l.sorted(res.seen); err == nil && Index(line, n.Name) >= 0 {
			own.seen = line
		}
	}
	return own
}

// create is Enter's create, tried again (bounded) while the path is missing
// or an answer is lost, each time after looking for a node an earlier try
// may have made (see recoverLost).
func (l *Line) create(ep *session.Epoch, guid, prefix string, data []byte) (entered, error) {
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
			return entered{}, fmt.Errorf("%w: connection lost while entering the line", ErrEpochEnded)
		}
		r := wiretap.CreateThenChildren(ep.Conn(), ep.WireTap(), prefix, data, zk.FlagEphemeral|zk.FlagSequence, l.Sess.ACL(), l.Path)
		switch err := r.Err; {
		case err == nil:
			return l.made(ep, guid, r, attempt, unknown), nil
		case errors.Is(err, zk.ErrNoNode) && attempt < ensureRounds:
			// The path is missing (or was an empty container the
			// server has just removed): create it and go again.
			if err := l.ensurePath(ep); err != nil {
				return entered{}, err
			}
		case session.OutcomeUnknown(err) && attempt < 20:
			unknown = true
			if e, ok, err := l.recoverLost(ep, guid, attempt); ok || err != nil {
				return e, err
			}
		default:
			return entered{}, aclerr.Map("create", prefix, err)
		}
	}
}

// made is the node a create of attempt made (r), after an earlier create's
// answer was lost (unknown) or not.
func (l *Line) made(ep *session.Epoch, guid string, r wiretap.CreateListResult, attempt int, unknown bool) entered {
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
	return e
}

// recoverLost looks, once the connection is back, for the node a create of
// attempt whose answer was lost made: it reports the node adopted (true),
// or false to create again, or ErrLost when the session has ended.
func (l *Line) recoverLost(ep *session.Epoch, guid string, attempt int) (entered, bool, error) {
	e, dups, found, ferr := l.findOwnWhenBack(ep, guid)
	if ferr == nil && found {
		if attempt > 0 {
			// Another of our creates may land later still.
			go l.sweepLate(ep, guid, e.path)
		}
		return l.adopt(ep, e, dups), true, nil
	}
	if ep.SessionContext().Err() != nil {
		return entered{}, false, ErrLost
	}
	return entered{}, false, nil
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
		l.Sess.Report(observe.RecipeEvent{Kind: observe.OrphanCleanup, Recipe: l.Recipe, Path: dups[0], SessionID: ep.SessionID()})
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
		l.Sess.Report(observe.RecipeEvent{Kind: observe.OrphanCleanup, Recipe: l.Recipe, Path: late[0], SessionID: ep.SessionID()})
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
			l.Sess.Report(observe.RecipeEvent{Kind: observe.OrphanCleanup, Recipe: l.Recipe, Path: late[0], SessionID: ep.SessionID()})
			l.Delete(cur, late...)
		}
	})
}

// cleanupGUID removes the nodes with guid that a create abandoned by its
// caller may have made.
func (l *Line) cleanupGUID(ep *session.Epoch, guid string) {
	for i := 0; i < 100 && ep.SessionContext().Err() == nil; i++ {
		e, dups, ok, err := l.findOwnWhenBack(ep, guid)
		switch {
		case err == nil && ok:
			l.Sess.Report(observe.RecipeEvent{Kind: observe.OrphanCleanup, Recipe: l.Recipe, Path: e.path, SessionID: ep.SessionID()})
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
