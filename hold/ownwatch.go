package hold

// A hold's watch on its own nodes: an outside deletion (an operator, another
// principal) or an operator's revocation reaches the holder within one
// notification, held or paused.
//
// It costs no goroutine while the hold lasts: each node is registered with
// the session's event path (session.Session.WatchNode), which calls the
// hold on go-zookeeper's event callback with the node's events, and is read
// with a watch set (GetW) by a goroutine that ends with the read. A change
// of the node's data (an operator's request, the holder's own mark) starts
// one more read; a deletion loses the hold at once, on the event path, as
// the epoch's end does. A deletion while the connection was down is
// reported as soon as the session is back (go-zookeeper sets its watches
// again on reconnect, and fires those whose nodes are gone).

import (
	"errors"
	"fmt"
	"time"

	"github.com/shepherdzk/shepherd/internal/epcall"

	"github.com/go-zookeeper/zk"
)

// ownWatchDelay is how long a hold lives before it watches its own nodes
// (unless Token asks for the first read sooner). A hold released sooner
// never pays for the watch: on a contended lock most holds are that short,
// and the read, and the notification of its own release, cost a lock's
// throughput more than they are worth there. A deletion or a revocation in
// that time is seen when the watch starts (its first read).
const ownWatchDelay = 10 * time.Millisecond

// watchOwnNodes starts the watch of the hold's nodes, once (at
// ownWatchDelay, or when Token asks): unless the hold has ended, each node
// is registered with the session's event path and read.
func (h *Hold) watchOwnNodes() {
	h.watchOnce.Do(func() {
		h.mu.Lock()
		h.watchTimer = nil // fired, or Token asked: it has nothing left to start
		if h.released || h.state == lost {
			h.mu.Unlock()
			h.read1(nil)
			return
		}
		for _, n := range h.nodes {
			h.unwatch = append(h.unwatch, h.sess.WatchNode(n, func(ev zk.Event) { h.ownEvent(n, ev) }))
		}
		h.mu.Unlock()
		for i, n := range h.nodes {
			go h.readOwn(n, i == 0)
		}
	})
}

// ownEvent acts on an event of the hold's node, on go-zookeeper's event
// path: it must not block nor call the connection.
func (h *Hold) ownEvent(node string, ev zk.Event) {
	switch ev.Type {
	case zk.EventNodeDeleted:
		h.lose(fmt.Errorf("%w: hold on %s: its node was deleted", ErrLost, node))
	case zk.EventNodeDataChanged:
		// An operator's request, or the holder's own mark: read it, and
		// watch again.
		if h.ctx.Err() == nil {
			go h.readOwn(node, false)
		}
	}
}

// readOwn reads node with a watch set, in the hold's session, and acts on
// what it finds: gone, or another grant's (a deletion), loses the hold;
// its data may carry an operator's request (sawData). A connection problem
// makes it read again once the session is back. first: the hold's first
// read of its first node, which sets the token and closes firstRead.
func (h *Hold) readOwn(node string, first bool) {
	if first {
		defer h.read1(nil) // however it ends
	}
	// The reads are bounded by the session's context, not the hold's:
	// asking a context for its Done channel makes one, and a hold's is
	// made only if its holder asks. A read that outlives the hold is
	// ignored.
	h.mu.Lock() // h.ep moves at a resume
	sctx := h.ep.SessionContext()
	h.mu.Unlock()
	for h.ctx.Err() == nil {
		ep, err := h.sess.Wait(sctx)
		if err != nil || ep.SessionID() != h.sid {
			return // the hold's end, or its session's (which loses it)
		}
		type read struct {
			data []byte
			st   *zk.Stat
		}
		r, err := epcall.Call(sctx, ep, func(c *zk.Conn) (read, error) {
			data, st, _, err := c.GetW(node) // its event comes through ownEvent
			return read{data, st}, err
		}, nil)
		switch {
		case h.ctx.Err() != nil:
			return
		case errors.Is(err, zk.ErrNoNode) || (err == nil && !h.ours(node, r.st)):
			h.lose(fmt.Errorf("%w: hold on %s: its node was deleted", ErrLost, node))
			return
		case err != nil:
			// A connection problem (or the session's end, which loses the
			// hold): read again once the session is usable.
			<-ep.Done()
			continue
		}
		if first {
			h.read1(r.st)
		}
		if h.sawData(node, r.data) || node != h.nodes[0] {
			return
		}
		h.mu.Lock()
		fn := h.onRead
		h.mu.Unlock()
		if fn != nil && h.ctx.Err() == nil {
			fn()
		}
		return
	}
}

// OnNodeRead makes fn the function the hold's own-node watch calls after
// each read of Node(): its first read (once the hold has lasted 10 ms, or
// when Token asks), and the read after each change of the node's data. It
// is for a recipe whose holder takes requests that an operator announces
// by writing the holder's node (shepherd's election: an operator's
// handover request, written beside the node, with the node's data written
// again in the same multi-op): the recipe looks for them in fn, with no
// watch of its own. fn runs on a goroutine of the watch's: it must not
// wait long (start one of its own to). If that first read is done already,
// fn is called once, at once. It is not called once the hold has ended; a
// later call replaces fn.
func (h *Hold) OnNodeRead(fn func()) {
	h.mu.Lock()
	h.onRead = fn
	done := h.read
	h.mu.Unlock()
	if done && fn != nil && h.ctx.Err() == nil {
		fn()
	}
}

// read1 reports the hold's first read, once: the hold's token (from st, if
// the hold has none yet and st is its session's node), and h.firstRead
// closed.
func (h *Hold) read1(st *zk.Stat) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.read {
		return
	}
	h.read = true
	if h.token == 0 && st != nil && st.EphemeralOwner == h.sid {
		h.token = Token(st.Czxid)
	}
	signalLocked(&h.firstRead)
}

// stopWatching ends the hold's registrations with the session's event path.
func stopWatching(unwatch []func()) {
	for _, stop := range unwatch {
		stop()
	}
}
