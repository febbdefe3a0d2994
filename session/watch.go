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

// nodeWatches are the registrations of WatchNode, by full path.
type nodeWatches struct {
	mu    sync.Mutex
	byKey map[string][]*nodeWatch
}

type nodeWatch struct{ fn func(zk.Event) }

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
	w := &nodeWatch{fn: fn}
	s.nodes.mu.Lock()
	if s.nodes.byKey == nil {
		s.nodes.byKey = map[string][]*nodeWatch{}
	}
	s.nodes.byKey[path] = append(s.nodes.byKey[path], w)
	s.nodes.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.nodes.mu.Lock()
			defer s.nodes.mu.Unlock()
			ws := s.nodes.byKey[path]
			for i, x := range ws {
				if x == w {
					ws = append(ws[:i:i], ws[i+1:]...)
					break
				}
			}
			if len(ws) == 0 {
				delete(s.nodes.byKey, path)
			} else {
				s.nodes.byKey[path] = ws
			}
		})
	}
}

// dispatch calls the registrations of ev's node (see WatchNode).
func (s *Session) dispatch(ev zk.Event) {
	if ev.Path == "" {
		return
	}
	s.nodes.mu.Lock()
	ws := s.nodes.byKey[ev.Path]
	fns := make([]func(zk.Event), len(ws))
	for i, w := range ws {
		fns[i] = w.fn
	}
	s.nodes.mu.Unlock()
	for _, fn := range fns {
		fn(ev)
	}
}
