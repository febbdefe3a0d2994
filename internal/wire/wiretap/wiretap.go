// Package wiretap pipelines requests on one ZooKeeper connection: it tells a
// caller when a request has been written to the connection (go-zookeeper
// writes one frame per request, in the order they were queued), so that a
// request that must follow it can be sent without waiting for its answer.
// The session's connection feeds the tap every frame it writes (Saw); the
// recipes use CreateThenChildren, SetWritten and MultiWritten with the tap
// of their epoch (session.Epoch.WireTap).
package wiretap

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/wire/zkwire"
)

// Tap tells waiters when a create (or a setData) of a given path has been written to
// the connection. go-zookeeper has one writer goroutine per connection and
// writes one request frame per Write, in the order requests were queued, so
// a request queued after the tap fired goes out after that create.
type Tap struct {
	waiting atomic.Int32 // len(paths), read without the lock on every Write
	mu      sync.Mutex
	paths   map[string]*tapEntry
}

// tapEntry is one expected write: seen runs once it is written.
type tapEntry struct{ seen func() }

// expect registers path; the returned channel is closed once a create of
// path has been written. done unregisters it.
func (t *Tap) expect(path string) (written <-chan struct{}, done func()) {
	ch := make(chan struct{})
	return ch, t.expectFunc(path, func() { close(ch) })
}

// expectFunc registers path; seen is called once a create (or a set) of
// path has been written, on the connection's writing goroutine, under the
// tap's lock: it must only signal. done unregisters it.
func (t *Tap) expectFunc(path string, seen func()) (done func()) {
	en := &tapEntry{seen: seen}
	t.mu.Lock()
	if t.paths == nil {
		t.paths = make(map[string]*tapEntry)
	}
	t.paths[path] = en
	t.waiting.Store(int32(len(t.paths)))
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		if t.paths[path] == en {
			delete(t.paths, path)
			t.waiting.Store(int32(len(t.paths)))
		}
		t.mu.Unlock()
	}
}

// saw looks at one written frame (see zkwire.RequestPath for what it
// recognises): an expected create, setData or multi of a path, or an expected
// getData of it, fires that path's entry.
func (t *Tap) saw(frame []byte) {
	op, p, ok := zkwire.RequestPath(frame)
	if !ok {
		return
	}
	t.mu.Lock()
	if en, ok := t.paths[string(p)]; ok && op != zkwire.OpGetData {
		delete(t.paths, string(p))
		t.waiting.Store(int32(len(t.paths)))
		en.seen()
	}
	t.mu.Unlock()
}

// CreateListResult is what CreateThenChildren returns.
type CreateListResult struct {
	Path string // the created node
	Err  error  // the create's error; nothing else is meaningful when set

	// Children is the parent's listing, or nil when it was not sent (the
	// create failed before it was written) or failed (ChildrenErr).
	Children    []string
	ChildrenErr error
}

// CreateThenChildren creates path (as zk.Conn.Create does) and lists the
// children of parent in one round trip: the listing is sent as soon as the
// create has been written to the connection, without waiting for the
// create's answer. The server applies one session's requests in the order
// they arrive on a connection, so when both went out on the same connection
// the listing includes the created node. If the connection changed between
// the two it may not, and a listing that was not sent is nil: a caller
// trusts Children only if it shows the node it created.
//
// path must not be used by another create of this session at the same time
// (a protected create's guid makes it unique). Like the Conn's own calls, it
// blocks until both answers arrive or the connection fails them.
func CreateThenChildren(conn *zk.Conn, t *Tap, path string, data []byte, flags int32, acl []zk.ACL, parent string) CreateListResult {
	if t == nil {
		return createThenChildrenSerial(conn, path, data, flags, acl, parent)
	}
	written, done := t.expect(path)
	type created struct {
		path string
		err  error
	}
	cres := make(chan created, 1)
	go func() {
		p, err := conn.Create(path, data, flags, acl)
		cres <- created{p, err}
	}()
	var r CreateListResult
	select {
	case <-written:
		r.Children, _, r.ChildrenErr = conn.Children(parent)
		c := <-cres
		r.Path, r.Err = c.path, c.err
	case c := <-cres:
		// Answered (or failed) before the tap saw it written: a connection
		// that failed the write, or a frame the tap could not see. List now
		// if the create succeeded.
		done()
		r.Path, r.Err = c.path, c.err
		if r.Err == nil {
			r.Children, _, r.ChildrenErr = conn.Children(parent)
		}
	}
	done()
	if r.Err != nil {
		r.Children, r.ChildrenErr = nil, r.Err
	} else if r.ChildrenErr != nil {
		r.Children = nil
	}
	return r
}

func createThenChildrenSerial(conn *zk.Conn, path string, data []byte, flags int32, acl []zk.ACL, parent string) CreateListResult {
	var r CreateListResult
	if r.Path, r.Err = conn.Create(path, data, flags, acl); r.Err != nil {
		r.ChildrenErr = r.Err
		return r
	}
	r.Children, _, r.ChildrenErr = conn.Children(parent)
	return r
}

// MultiWritten sends ops as zk.Conn.Multi does (answering its first error),
// without waiting for the answer: written is closed once the request has
// been written to the connection (so a request of this session queued
// afterwards reaches the server after it), or once it has been answered or
// failed, whichever comes first; answer then receives the outcome. A caller
// that sends a request that must follow (a delete of the node) waits for
// written only: no round trip. ops[0] must be a *zk.SetDataRequest or a
// *zk.CreateRequest, by whose path the request is recognised on the wire:
// that path must not be the target of another MultiWritten or create of
// this session at the same time.
func MultiWritten(conn *zk.Conn, t *Tap, ops ...any) (written <-chan struct{}, answer <-chan error) {
	var path string
	switch op := firstOp(ops).(type) {
	case *zk.SetDataRequest:
		path = op.Path
	case *zk.CreateRequest:
		path = op.Path
	default:
		ans := make(chan error, 1)
		ans <- errMultiWrittenOp
		c := make(chan struct{})
		close(c)
		return c, ans
	}
	return sendWritten(t, path, func() error {
		res, err := conn.Multi(ops...)
		if err == nil {
			for _, r := range res {
				if r.Error != nil {
					return r.Error
				}
			}
		}
		return err
	})
}

var errMultiWrittenOp = errors.New("wiretap: MultiWritten: the first op must be a create or a set")

func firstOp(ops []any) any {
	if len(ops) == 0 {
		return nil
	}
	return ops[0]
}

// sendWritten sends a request through send (a blocking call of the Conn
// writing path first) and reports when it is on the wire, then its answer.
func sendWritten(t *Tap, path string, send func() error) (written <-chan struct{}, answer <-chan error) {
	ans := make(chan error, 1)
	if t == nil {
		ans <- send()
		c := make(chan struct{})
		close(c)
		return c, ans
	}
	// w is closed by the tap itself, on the connection's writing
	// goroutine (one wake-up less for the caller), or once the request is
	// answered or failed, whichever comes first.
	w := make(chan struct{})
	var once sync.Once
	closeW := func() { once.Do(func() { close(w) }) }
	done := t.expectFunc(path, closeW)
	go func() {
		err := send()
		done()
		closeW()
		ans <- err
	}()
	return w, ans
}

// Waiting reports whether a caller waits for a write on t (nil: none): the
// connection looks at the frames it writes only then.
func Waiting(t *Tap) bool { return t != nil && t.waiting.Load() > 0 }

// Saw tells t of a frame written to its connection.
func Saw(t *Tap, frame []byte) { t.saw(frame) }
