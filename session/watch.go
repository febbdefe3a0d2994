package session

import (
	"sync"

	"github.com/go-zookeeper/zk"
)

// Node events, dispatched from the session's one event path.
//
// go-zookeeper delivers every watch event to the connection's event
// callback as well as to the watch's channel. A caller that sets a watch
// (GetW, ExistsW, ChildrenW on the session's connection) and registers the
// node here is called with the node's events without a goroutine of its own
// waiting on the channel (which it may drop: go-zookeeper buffers one event
// in it and forgets it once fired). So a hold that watches its own node
// costs nothing while it is held.

// nodeWatches are the registrations of WatchNode, by full path: each
// path's, a list in the order they were made (a list, not a slice: every
// held hold has one, and a slice's array would cost each another
// allocation).
type nodeWatches struct {
	mu    sync.Mutex
	byKey map[string]*nodeWatch
}

type nodeWatch struct {
	fn      func(zk.Event)
	next    *nodeWatch // the path's next registration
	s       *Session
	path    string
	stopped bool // under s.nodes.mu
}

// WatchNode calls fn with every watch event of the node at path (full,
// namespace included) that the session's connection receives: the events of
// the watches the caller (or anyone on this session) sets on it, data
// changes and deletion, and those a reconnection of the same session
// delivers for changes made while it was away (go-zookeeper sets its
// watches again). fn runs on go-zookeeper's event path, like the session's
// own state changes: it must not block nor call the connection (hand such
// work to a goroutine). stop ends the registration; it may be called from
// fn.
func (s *Session) WatchNode(path string, fn func(zk.Event)) (stop func()) {
	w := &nodeWatch{fn: fn, s: s, path: path}
	s.nodes.mu.Lock()
	if s.nodes.byKey == nil {
		s.nodes.byKey = map[string]*nodeWatch{}
	}
	if last := s.nodes.byKey[path]; last == nil {
		s.nodes.byKey[path] = w
	} else {
		for last.next != nil {
			last = last.next
		}
		last.next = w
	}
	s.nodes.mu.Unlock()
	return w.stop
}

// stop ends w's registration, once.
func (w *nodeWatch) stop() {
	ns := &w.s.nodes
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if w.stopped {
		return
	}
	w.stopped = true
	head := ns.byKey[w.path]
	if head == w {
		if w.next == nil {
			delete(ns.byKey, w.path)
		} else {
			ns.byKey[w.path] = w.next
		}
		return
	}
	for p := head; p != nil; p = p.next {
		if p.next == w {
			p.next = w.next
			return
		}
	}
}

// dispatch calls the registrations of ev's node (see WatchNode).
func (s *Session) dispatch(ev zk.Event) {
	if ev.Path == "" {
		return
	}
	s.nodes.mu.Lock()
	var fns []func(zk.Event)
	for w := s.nodes.byKey[ev.Path]; w != nil; w = w.next {
		fns = append(fns, w.fn)
	}
	s.nodes.mu.Unlock()
	for _, fn := range fns {
		fn(ev)
	}
}
