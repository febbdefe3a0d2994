package line

import (
	"fmt"
	"time"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/zkdelete"
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
	// the line's naming gives them (Naming.Kind). When set, a contender of
	// another kind makes the path foreign (ErrForeignRecipe).
	Kinds []string
	// Naming is how the line names its nodes (CuratorNaming, the zero value,
	// or KazooNaming): a contender named the other way makes the path
	// foreign (ErrForeignRecipe).
	Naming Naming
	// Layout, if set, is the kind of recipe whose line this is (see package
	// layout): its path is checked once before the first Enter (a path of
	// another kind is refused before anything is written there), and a
	// listing that holds another kind's node fails with ErrWrongKind. Nil
	// for a line that is no recipe's own path (a semaphore's waiters, the
	// toolkit's lines).
	Layout *PathCheck
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
	marked bool   // its holder has marked it (see AwaitOptions.MarkFor)
	// markDue: its hold marks it in its release, or Consume in the
	// multi-op that consumes it (see AwaitOptions.MarkOnRelease).
	markDue bool
	// markRefused: the server refused its mark (see Consume); it is
	// removed without one from then on.
	markRefused bool
	// next is the node after it when the line was last listed (nil:
	// none), recorded only in a line whose holders mark at their grant
	// (AwaitOptions.MarkFor): a pointer, as other nodes keep none.
	next *Name
	// parked is the waiter's sleep its epoch cut short, with its watches
	// (see Node.park): nil when none.
	parked *sleeper
}

// TakeSeen returns, once, the line as it was listed in the same round trip
// as the node's create (it includes the node), and whether there is one.
func (n *Node) TakeSeen() ([]Name, bool) {
	s := n.seen
	n.seen = nil
	return s, s != nil
}

// park keeps s, the sleep of own's waiter that its epoch's end cut short:
// while the session lives, its connection keeps its watches across a
// reconnection (go-zookeeper sets them again on the server, which then
// fires those whose node changed meanwhile), so the waiter's next Await in
// the same session sleeps on them again (see unpark) instead of listing
// the line again. Ten thousand waiters on a server that dropped them would
// otherwise each list the line of ten thousand at once, when it comes
// back.
func (own *Node) park(s *sleeper) { own.parked = s }

// unpark returns, once, the sleep parked (see park) if ep is of own's
// session: a lost session's watches are gone (go-zookeeper ends them), and
// its node is never reused.
func (own *Node) unpark(ep *session.Epoch) *sleeper {
	s := own.parked
	own.parked = nil
	if s == nil || own.SessionID != ep.SessionID() {
		return nil
	}
	return s
}

// List returns the line's contenders in order.
func (l *Line) List(ep *session.Epoch) ([]Name, error) {
	names, _, err := ep.Conn().Children(l.Path)
	if err != nil {
		return nil, aclerr.Map("getChildren", l.Path, err)
	}
	return l.sorted(names)
}

// sorted checks children for refused names and returns the line in order. A
// line that has no reliable order (see unordered) is an error that wraps
// ErrSequenceExhausted: no one is ever granted on it.
func (l *Line) sorted(names []string) ([]Name, error) {
	if err := l.otherKind(names); err != nil {
		return nil, err
	}
	if err := l.foreign(names); err != nil {
		return nil, err
	}
	line := Sort(names, l.Kinds...)
	if seq, bad := unordered(line); bad {
		return nil, fmt.Errorf("recipe: %s: %w (a child has sequence number %d, duplicate, maximal or wrapped: "+
			"the line has no order; remove the path once no one holds or waits on it)", l.Path, ErrSequenceExhausted, seq)
	}
	return line, nil
}

// otherKind refuses a line holding another kind's node (see package
// layout): another recipe kind's fixed-name child, or a contender of a kind
// this line does not take.
func (l *Line) otherKind(names []string) error {
	if l.Layout == nil || l.Layout.Recipe == nil || (l.Layout.Path != "" && l.Layout.Path != l.Path) {
		return nil // no recipe's own path: its nodes are the line's
	}
	for _, n := range names {
		contender := ""
		if p, ok := ParseName(n); ok {
			contender = p.Kind
		}
		if k, ok := layout.RefusesChild(l.Layout.Recipe, n, contender); ok {
			what := fmt.Sprintf("child %q", n)
			if contender != "" {
				what = fmt.Sprintf("child %q (a %s contender's node)", n, contender)
			}
			return WrongKind(l.Path, &layout.Mismatch{There: k, Evidence: what, Contender: contender})
		}
	}
	return nil
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
		if NamingOf(n.Kind) != l.Naming {
			return fmt.Errorf("recipe: %s: %w: %s is named %s (Kazoo and Curator name nodes differently and "+
				"neither sees the other's; this recipe uses %s names)", l.Path, ErrForeignRecipe, s, Library(n.Kind), l.Naming)
		}
		if len(l.Kinds) > 0 && !hasKind(l.Kinds, n.Kind) {
			return fmt.Errorf("recipe: %s: %w: %s is named %s, not as this recipe's nodes (%v)", l.Path, ErrForeignRecipe,
				s, Library(n.Kind), l.Kinds)
		}
	}
	return nil
}

// Delete removes nodes of this line's session, in one multi-op, with a
// guaranteed delete (see package zkdelete): at once if it can, else in the
// background until they are gone or their session is. paths are nodes ep's
// session created (any epoch of that session will do), under the line's
// path or not (the semaphore's leases). The returned channel is closed
// when the delete is over.
func (l *Line) Delete(ep *session.Epoch, paths ...string) <-chan struct{} {
	return zkdelete.Start(true, l.Sess, l.Recipe, ep, nil, paths, nil, nil).Done()
}

// NewHold grants a hold on nodes (created by ep's session, in this line or
// beside it) within ep, under the line's disconnect policy (OnDisconnect, or
// the session's). token is the creation zxid of nodes[0] if known, else 0
// (then read once, when first asked). Its fence is the existence of
// nodes[0]; its release deletes nodes unguarded (their names are never
// reused: sequential nodes). Its events carry the line's Recipe.
func (l *Line) NewHold(ep *session.Epoch, token hold.Token, nodes ...string) *hold.Hold {
	h, _ := hold.New(hold.Config{Sess: l.Sess, Recipe: l.Recipe, Policy: l.OnDisconnect, Epoch: ep, Token: token,
		Nodes: nodes}) // never invalid: callers grant nodes they made
	return h
}

// HoldOf grants a hold on own's node, fenced by its creation's zxid (as
// NewHold with own.Czxid). If own waited with AwaitOptions.MarkOnRelease,
// the hold's release marks the node in the multi that deletes it.
func (l *Line) HoldOf(ep *session.Epoch, own *Node) *hold.Hold {
	var mark []byte
	if own.markDue {
		mark = own.markData()
	}
	h, _ := hold.New(hold.Config{Sess: l.Sess, Recipe: l.Recipe, Policy: l.OnDisconnect, Epoch: ep, Token: hold.Token(own.Czxid),
		Mark: mark, Nodes: []string{own.Path}}) // never invalid: a node of ep's session
	return h
}

// leaveWait bounds how long a waiter that gives up waits for the delete of
// its node: a delete on a healthy connection takes about a millisecond
// (p99 1.5 ms on loopback); most of the slack a caller whose ctx has ended
// is allowed (50 ms) stays for the machine.
const leaveWait = 15 * time.Millisecond

// Leave removes a waiter's node of the line that was not granted, with a
// guaranteed delete (see Line.Delete), and waits for it at most a short
// while: on a healthy connection the node is gone when Leave returns, and on
// a stalled one the caller, whose ctx has ended, still returns at once while
// the delete goes on in the background. The returned channel is closed when
// the delete is over.
func (l *Line) Leave(ep *session.Epoch, path string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		<-l.Delete(ep, path)
		close(done)
	}()
	t := time.NewTimer(leaveWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	return done
}

// setNext records the node after own, line[i].
func (own *Node) setNext(line []Name, i int) {
	own.next = nil
	if i+1 < len(line) && line[i+1].Name != "" {
		n := line[i+1]
		own.next = &n
	}
}

// markData is the data of own's mark: the data own was created with (never
// written to, so shared), and a mark even of no data (nil is none).
func (own *Node) markData() []byte {
	if own.data == nil {
		return []byte{}
	}
	return own.data
}
