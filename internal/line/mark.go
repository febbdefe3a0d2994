package line

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/wire/wiretap"
	"github.com/shepherdzk/shepherd/internal/zkdelete"
	"github.com/shepherdzk/shepherd/session"
)

// Marks (see AwaitOptions.MarkFor and MarkOnRelease): a holder that waited
// writes its node's data again, which tells the one waiter watching it that
// every node before it is gone, so that the node's deletion alone grants
// that waiter. The writing side is here (at the grant, and Node.Consume)
// and in the release (Line.HoldOf, deletion.tryMarked); the waiting side in
// Line.watch and Line.sleep.

// watchMarked watches the marked node s waits behind again, for its
// deletion, which now grants the waiter: it reports true when the node is
// gone already (marked, then deleted).
func (l *Line) watchMarked(ctx context.Context, ep *session.Epoch, own *Node, opt AwaitOptions, s *sleeper) (bool, error) {
	ch, data, st, err := l.rewatchData(ctx, ep, s.node)
	if errors.Is(err, zk.ErrNoNode) {
		if ep.Context().Err() != nil {
			return false, ErrEpochEnded
		}
		return true, nil // marked, then deleted
	} else if err != nil {
		return false, err
	}
	s.ws.node, s.delGrants = ch, true
	if s.w == 0 && opt.OnHead != nil {
		// The node watched is the head: what changed may be what it says
		// of itself (the election's Proclaim).
		opt.OnHead(s.head, StripRevoke(data), st)
	}
	if opt.MarkFor != nil {
		l.learnNext(ctx, ep, own)
	}
	return false, nil
}

// mark marks own's node (see AwaitOptions.MarkFor) when the node after it
// is one markFor accepts: a write of its own data at version 0 (so at most
// once), in a multi with a check that that node is still there. It returns
// once the write is on the wire (wiretap.MultiWritten), without waiting
// for the answer: the holder's next request goes out after it, and the
// grant costs no round trip. The mark is a hint: it fails harmlessly (the
// node gone, the next one gone, ctx ended) and the hold does not depend on
// it.
func (l *Line) mark(ctx context.Context, ep *session.Epoch, own *Node, markFor func(Name) bool) {
	if own.next == nil || !markFor(*own.next) {
		return
	}
	own.marked = true
	written, _ := wiretap.MultiWritten(ep.Conn(), ep.WireTap(), &zk.SetDataRequest{Path: own.Path, Data: own.data, Version: 0},
		&zk.CheckVersionRequest{Path: l.Path + "/" + own.next.Name, Version: -1})
	select {
	case <-written:
	case <-ep.Done():
	case <-ctx.Done():
	}
}

// learnNext lists the line to learn the node after own, for a line whose
// holders mark at their grant (AwaitOptions.MarkFor; others call it not).
// It is a hint: on any error own.next stays as it was, and a mark checks
// that the node is still there.
func (l *Line) learnNext(ctx context.Context, ep *session.Epoch, own *Node) {
	line, err := l.listCtx(ctx, ep)
	if err != nil {
		return
	}
	if i := Index(line, own.Name.Name); i >= 0 {
		own.setNext(line, i)
	}
}

// Consume sends ops and then own's removal from the line as one multi-op on
// c, for a recipe whose grant consumes its node in a write of its own (the
// semaphore's head takes its leases in the multi-op that deletes its node).
// The removal is own's mark when one is due (see
// AwaitOptions.MarkOnRelease), then its delete: the waiter behind it is
// granted by the deletion without listing the line. It returns the ops sent
// and the answers; the removal's ops are the last, the first of them on
// own's path whether it marks or not (an ErrNoNode there: own is gone). A
// mark the server refuses is dropped (see zkdelete.Marked), for good.
func (own *Node) Consume(c *zk.Conn, ops ...any) ([]any, []zk.MultiResponse, error) {
	var mark []byte
	if own.markDue {
		mark = own.markData()
	}
	sent, res, refused, err := zkdelete.Marked(c, ops, own.Path, mark)
	if refused {
		own.markDue, own.markRefused = false, true
	}
	return sent, res, err
}
