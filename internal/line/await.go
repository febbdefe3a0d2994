package line

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/session"
)

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
	// A mark says "every node before this one is gone", for good
	// (sequence numbers only grow): a holder that waited writes its node's
	// own data again, so its version moves from 0, and the waiter watching
	// the node learns it from the data-change notification (or from the
	// version its watch reads). When the node is then deleted, that waiter
	// is granted without listing the line, so a handoff costs the same few
	// bytes however long the line. Nothing else writes a line node's data
	// (whoever could forge a mark could as well delete the node). A node
	// without a mark (a foreign contender's, a holder that died first)
	// costs a listing. Never for a shared hold (a reader: a reader before it
	// may still hold). A mark costs its watcher one more notification: none
	// between the mark and the grant (see Line.watch).
	//
	// MarkFor, for a leader (a line whose turn grants only its head, held
	// long), makes a waiter granted after having waited (not at the head
	// when it first looked) mark its node at its grant, when the node after
	// it, as the line was last listed, is one MarkFor accepts (a contender
	// that handles a data change of the node it waits behind, see
	// Name.Shepherd: Curator's LeaderLatch acts only on NodeDeleted, and a
	// data change would spend its one-shot watch), and only while that node
	// is still there: the mark is a multi with a check of it. Nobody can
	// join the line between the two (sequence numbers only grow), so while
	// it is there it is the one contender watching the holder's node for its
	// turn; a contender that left has only a stale watch. A mark at the
	// grant is heard while the holder holds: a holder that then dies has
	// still marked, and the waiter behind is granted by the server's
	// deletion without listing. A waiter told that the node before it is
	// marked then lists the line once more, while it waits, to learn its
	// own successor (one more request, off the handoff's path).
	MarkFor func(next Name) bool
	// MarkOnRelease marks for a lock, whose holder deletes its node when
	// it releases: the mark is written then, in the multi that deletes the
	// node (set, then delete: one write, where a mark at the grant is a
	// write of its own). The waiter behind it hears the data change just
	// before the deletion and is granted by the deletion alone, with no
	// request in between. A holder that ends otherwise (its session lost,
	// the node revoked) leaves no mark, and the waiter lists the line. The
	// grant makes its hold with Line.HoldOf. A recipe whose grant consumes
	// the node in a write of its own (the semaphore's head takes its leases
	// in the multi-op that deletes it) sends that write with Node.Consume,
	// which adds the mark.
	MarkOnRelease bool
	// OnWatch, when set, is told each time the waiter has set its watches
	// at its place in line (line as it looked, i its index, w the index
	// of the node it watches), before it sleeps, on the caller's
	// goroutine: it must not block. The election's handover successor
	// says it is ready then (it watches the leader). Not told again when
	// the waiter sleeps on after a lost connection (see Node.park): its
	// watches are the ones it had.
	OnWatch func(line []Name, i, w int)
}

// Await waits in line until turn grants own, within epoch ep. The first
// look uses the line listed with own's create (see Node.TakeSeen) unless it
// was taken: a recipe that waits on something else first takes it, as it is
// stale by then. It returns nil
// when granted while ep is still live; ErrNodeGone when own has left the line;
// an error matching Retryable when ep ended (wait for the session and call
// again: a waiter whose session lives on goes back to sleep on the watches
// it had, without looking at the line again, see Node.park); or
// ctx.Err(). Each wait watches exactly one node (with GetW, and
// ChildrenW when a mark of it would grant: see Line.watch): one
// notification per change that matters. Every call it makes honours ctx (see
// Call).
func (l *Line) Await(ctx context.Context, ep *session.Epoch, own *Node, turn Turn) error {
	return l.AwaitWith(ctx, ep, own, turn, AwaitOptions{})
}

// AwaitWith is Await with options: the one waiting loop of every recipe.
// Each pass looks at the line (look), grants or picks the node to watch
// (turn), watches it (settle), and sleeps until a change that matters
// (sleep); a pass after a lost connection of the same session sleeps on
// at once (unpark).
func (l *Line) AwaitWith(ctx context.Context, ep *session.Epoch, own *Node, turn Turn, opt AwaitOptions) error {
	for {
		s := own.unpark(ep)
		if s == nil {
			line, i, err := l.look(ctx, ep, own, opt.MarkFor != nil)
			if err != nil {
				return err
			}
			granted, w, delGrants := turn(line, i)
			if granted {
				return l.granted(ctx, ep, own, opt)
			}
			if opt.NoWait {
				return ErrWouldWait
			}
			s, err = l.settle(ctx, ep, line, i, w, delGrants, turn, opt)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			} else if err != nil {
				return err
			}
		}
		grant, err := l.sleep(ctx, ep, own, opt, s)
		if err != nil {
			return err
		}
		if grant {
			return l.granted(ctx, ep, own, opt)
		}
	}
}

// settle sets the watches of a waiter at index i of line whose turn names
// line[w] (see Turn), and returns it ready to sleep.
func (l *Line) settle(ctx context.Context, ep *session.Epoch, line []Name, i, w int, delGrants bool, turn Turn, opt AwaitOptions) (*sleeper, error) {
	// If line[w] is (or becomes) marked, every node before it is gone
	// for good: its deletion grants us when the nodes between it and
	// us (still there or not) would let us be granted.
	afterMark := delGrants
	if !delGrants {
		afterMark, _, _ = turn(line[w+1:], i-w-1)
	}
	ws, err := l.watch(ctx, ep, line, w, opt.OnHead != nil, afterMark)
	if ws.st != nil {
		opt.OnHead(line[0], ws.data, ws.st)
	}
	if err != nil {
		return nil, err
	}
	if ws.nodeVersion > 0 && afterMark {
		delGrants = true
	}
	if opt.OnWatch != nil {
		opt.OnWatch(line, i, w)
	}
	// The sleeper keeps the two names it may need, not the line: a
	// waiter costs the same however long the line it waits in.
	return &sleeper{head: line[0], node: line[w], w: w, ws: ws, delGrants: delGrants, afterMark: afterMark}, nil
}

// look returns the line (the one listed with own's create, the first time)
// and own's index in it, recording own's first position and, for a line
// whose holders mark at their grant (markFor), its successor.
func (l *Line) look(ctx context.Context, ep *session.Epoch, own *Node, markFor bool) ([]Name, int, error) {
	line, ok := own.TakeSeen()
	if !ok {
		var err error
		line, err = l.listCtx(ctx, ep)
		if err != nil {
			return nil, 0, err
		}
	}
	i := Index(line, own.Name.Name)
	if i < 0 {
		return nil, 0, ErrNodeGone
	}
	if own.Position < 0 {
		own.Position = i
	}
	if markFor {
		own.setNext(line, i) // only a mark at the grant reads it
	}
	return line, i, nil
}

// granted is what a waiter whose turn has come does: mark its node (see
// AwaitOptions.MarkFor). It is granted only while ep is live.
func (l *Line) granted(ctx context.Context, ep *session.Epoch, own *Node, opt AwaitOptions) error {
	if opt.MarkFor != nil && own.Position > 0 && !own.marked {
		l.mark(ctx, ep, own, opt.MarkFor)
	}
	own.markDue = opt.MarkOnRelease && own.Position > 0 && !own.markRefused
	if ep.Context().Err() != nil {
		return ErrEpochEnded
	}
	return nil
}

// sleeper is a waiter between two looks at the line: the head of the line
// as looked at, the node it watches and its index, its watches, and what
// the watched node's deletion means.
type sleeper struct {
	head, node Name // the line's head and the node watched, line[w]
	w          int
	ws         watches
	delGrants  bool // the watched node's deletion grants us
	afterMark  bool // it does once the watched node is marked
	// due: that deletion came as the epoch ended; the next epoch of the
	// same session grants us (see Node.park).
	due bool
}

// sleep waits for a change that matters to a waiter: it reports true when
// the change grants the waiter without looking again, false when it is to
// look again, or an error (ErrEpochEnded, ctx.Err(), a failed watch). A
// grant is only ever reported within a live ep: one that comes as ep ends
// is kept for the next epoch of the same session, with the sleep (see
// Node.park), as is the sleep when ep ends.
func (l *Line) sleep(ctx context.Context, ep *session.Epoch, own *Node, opt AwaitOptions, s *sleeper) (bool, error) {
	if s.due {
		return true, nil
	}
	for {
		var w wake
		var err error
		select {
		case ev := <-s.ws.node:
			w, err = l.onNode(ctx, ep, own, opt, s, ev)
		case ev := <-s.ws.gone:
			w = s.onGone(ev)
		case ev := <-s.ws.head:
			w, err = l.onHead(ctx, ep, opt, s, ev)
		case <-ep.Done():
			own.park(s)
			return false, ErrEpochEnded
		case <-ctx.Done():
			return false, ctx.Err()
		}
		if w == grantNow && err == nil && ep.Context().Err() != nil {
			s.due = true
			own.park(s)
			return false, ErrEpochEnded
		}
		if err != nil || w != sleepOn {
			return w == grantNow, err
		}
	}
}

// wake is what a notification means to a sleeping waiter.
type wake int

const (
	lookAgain wake = iota // look at the line again
	sleepOn               // nothing that grants or moves us: wait on
	grantNow              // granted, without looking again
)

// grantedBy: the watched node's deletion grants s.
func (s *sleeper) grantedBy(ev zk.Event) wake {
	if ev.Type == zk.EventNodeDeleted && s.delGrants {
		return grantNow
	}
	return lookAgain
}

// onNode is a notification of the GetW on the node turn names: its
// deletion, or its mark (a data change).
func (l *Line) onNode(ctx context.Context, ep *session.Epoch, own *Node, opt AwaitOptions, s *sleeper, ev zk.Event) (wake, error) {
	if ev.Type != zk.EventNodeDataChanged || !s.afterMark || s.ws.head != nil {
		return s.grantedBy(ev), nil
	}
	if s.ws.gone == nil {
		// line[w] is marked: watch it again for its deletion.
		grant, err := l.watchMarked(ctx, ep, own, opt, s)
		if grant {
			return grantNow, err
		}
		return sleepOn, err
	}
	// line[w] is marked, and its deletion is still watched (ws.gone): that
	// deletion now grants us.
	s.ws.node, s.delGrants = nil, true
	if opt.MarkFor != nil {
		l.learnNext(ctx, ep, own)
	}
	return sleepOn, nil
}

// onGone is a notification of the child watch on the node turn names: its
// deletion (see Line.watch).
func (s *sleeper) onGone(ev zk.Event) wake {
	if !s.delGrants && s.afterMark && s.ws.head == nil {
		// A mark written in the release (MarkOnRelease) reaches the data
		// watch just before the deletion reaches this one (go-zookeeper
		// delivers a connection's events in order): read it first if it is
		// there.
		select {
		case dv := <-s.ws.node:
			s.delGrants = dv.Type == zk.EventNodeDataChanged
		default:
		}
	}
	return s.grantedBy(ev)
}

// onHead is a notification of the watch on the line's head (OnHead): a
// change of its data (a mark, or what its holder says of itself: the
// election's Proclaim) is no change of the head, which is watched again
// and told to OnHead; anything else is looked at.
func (l *Line) onHead(ctx context.Context, ep *session.Epoch, opt AwaitOptions, s *sleeper, ev zk.Event) (wake, error) {
	if ev.Type != zk.EventNodeDataChanged {
		return lookAgain, nil
	}
	// The head's data changed: it is still the head. Watch it again rather
	// than list the line.
	ch, data, st, err := l.rewatchData(ctx, ep, s.head)
	switch {
	case err == nil:
		s.ws.head = ch
		opt.OnHead(s.head, StripRevoke(data), st)
		return sleepOn, nil
	case errors.Is(err, zk.ErrNoNode):
		return lookAgain, nil
	default:
		return lookAgain, err
	}
}

// listCtx is List, honouring ctx (see epcall.Call).
func (l *Line) listCtx(ctx context.Context, ep *session.Epoch) ([]Name, error) {
	return epcall.Call(ctx, ep, func(*zk.Conn) ([]Name, error) { return l.List(ep) }, nil)
}

// rewatch watches n again (GetW), once its data has changed.
func (l *Line) rewatch(ctx context.Context, ep *session.Epoch, n Name) (<-chan zk.Event, error) {
	ch, _, _, err := l.rewatchData(ctx, ep, n)
	return ch, err
}

// rewatchData is rewatch, also returning the data and Stat read.
func (l *Line) rewatchData(ctx context.Context, ep *session.Epoch, n Name) (<-chan zk.Event, []byte, *zk.Stat, error) {
	type read struct {
		ch   <-chan zk.Event
		data []byte
		st   *zk.Stat
	}
	r, err := epcall.Call(ctx, ep, func(c *zk.Conn) (read, error) {
		data, st, ch, err := c.GetW(l.Path + "/" + n.Name)
		return read{ch, data, st}, err
	}, nil)
	return r.ch, r.data, r.st, err
}

// watches is what a waiter waits on: the node its turn names, and the head
// of the line when it is told about it (nil when that is the same node).
type watches struct {
	node, head <-chan zk.Event
	// gone, when set, is a second watch on the node turn names that only
	// its deletion fires (see Line.watch): it outlives a mark.
	gone        <-chan zk.Event
	data        []byte   // the head's data
	st          *zk.Stat // the head's Stat, when read
	nodeVersion int32    // the watched node's data version (see AwaitOptions.MarkFor)
}

// watch sets the watches of a waiter at its place in line: on line[w] and,
// when head is set, on line[0] too, each with GetW. With gone (a mark of
// line[w] would let its deletion grant us) and line[w] shepherd's (only
// shepherd marks) and not marked yet, it also watches line[w]'s children
// (ChildrenW): a line node has none, so that watch fires only when the node
// is deleted, and outlives the data change of a mark, which spends the
// GetW's. A marked node's deletion then reaches the waiter as a
// notification, with no request between the mark and the grant (a second
// GetW once the mark is seen would cost a round trip on the handoff's path
// when the holder releases at once).
func (l *Line) watch(ctx context.Context, ep *session.Epoch, line []Name, w int, head, gone bool) (watches, error) {
	return epcall.Call(ctx, ep, func(c *zk.Conn) (watches, error) {
		var ws watches
		if head {
			data, st, ch, err := c.GetW(l.Path + "/" + line[0].Name)
			if err != nil {
				return ws, aclerr.Map("getData", l.Path+"/"+line[0].Name, err)
			}
			ws.data, ws.st, ws.head = StripRevoke(data), st, ch
			if w == 0 {
				ws.node, ws.head, ws.nodeVersion = ch, nil, st.Version
				return ws, nil
			}
		}
		p := l.Path + "/" + line[w].Name
		_, st, ch, err := c.GetW(p)
		if err != nil {
			return ws, aclerr.Map("getData", p, err)
		}
		ws.node, ws.nodeVersion = ch, st.Version
		if gone && st.Version == 0 && ws.head == nil && line[w].Shepherd() {
			if _, _, ws.gone, err = c.ChildrenW(p); err != nil {
				return ws, aclerr.Map("getChildren", p, err)
			}
		}
		return ws, nil
	}, nil)
}
