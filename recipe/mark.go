package recipe

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/wiretap"
	"github.com/shepherdzk/shepherd/session"
)

// Marks (see AwaitOptions.Mark and MarkOnRelease): a holder that waited
// writes its node's data again, which tells the one waiter watching it that
// every node before it is gone, so that the node's deletion alone grants
// that waiter. The writing side is here (at the grant) and in the release
// (Line.HoldOf, deletion.tryMarked); the waiting side in Line.watch and
// Line.sleep.

// watchMarked watches the marked node s waits behind again, for its
// deletion, which now grants the waiter: it reports true when the node is
// gone already (marked, then deleted).
func (l *Line) watchMarked(ctx context.Context, ep *session.Epoch, own *Node, opt AwaitOptions, s *sleeper) (bool, error) {
	ch, err := l.rewatch(ctx, ep, s.line[s.w])
	if errors.Is(err, zk.ErrNoNode) {
		if ep.Context().Err() != nil {
			return false, errEpochEnded
		}
		return true, nil // marked, then deleted
	} else if err != nil {
		return false, err
	}
	s.ws.node, s.delGrants = ch, true
	if opt.Mark && opt.MarkFor != nil {
		l.learnNext(ctx, ep, own)
	}
	return false, nil
}

// mark marks own's node (see AwaitOptions.Mark): a write of its own data at
// version 0, so at most once. It returns once the write is on the wire
// (wiretap.SetWritten), without waiting for the answer: the holder's
// next request (its release) goes out after it, and the grant costs no round
// trip. The mark is a hint: it fails harmlessly (the node gone, ctx ended)
// and the hold does not depend on it.
func (l *Line) mark(ctx context.Context, ep *session.Epoch, own *Node, markFor func(Name) bool) {
	var written <-chan struct{}
	if markFor == nil {
		own.marked = true
		written, _ = wiretap.SetWritten(ep.Conn(), ep.WireTap(), own.Path, own.data, 0)
	} else {
		if own.next.Name == "" || !markFor(own.next) {
			return
		}
		own.marked = true
		written, _ = wiretap.MultiWritten(ep.Conn(), ep.WireTap(), &zk.SetDataRequest{Path: own.Path, Data: own.data, Version: 0},
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
