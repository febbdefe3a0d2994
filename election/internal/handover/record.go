package handover

// The handover record (issue 38): the ephemeral node "handover" under an
// election's path that announces a handover, and each candidate's watch
// of it (see docs/handover.md).

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/session"
)

// The reasons of a handover, as records and events say them.
const (
	reasonDirected = "directed"
	reasonYield    = "yield"
	reasonStop     = "stop"
	reasonOperator = "operator"
)

// ByOperator is the "by" of a record an operator made.
const ByOperator = "operator"

// recordJSON is the record's data.
type recordJSON struct {
	// To is the successor's node, relative to the election's path: a line
	// node's name, or "candidates/c-<guid>" (non-fair).
	To     string `json:"to"`
	ID     string `json:"id"`     // the successor's id
	By     string `json:"by"`     // the leader's id, or "operator"
	Reason string `json:"reason"` // directed, yield, stop, operator
	// Ready: the successor watches the leader's node, right behind it (see
	// Handovers.OnWatch).
	Ready bool `json:"ready,omitempty"`
}

// record is a record as read: its data, and its node's version, owner and
// creation.
type record struct {
	recordJSON
	version int32
	owner   int64
	ctime   int64 // ms, ZooKeeper's clock
	czxid   int64
}

// Request is a pending handover as election.PendingHandOver reports it
// (its HandOverRequest, field for field).
type Request struct {
	To        string    // the successor's node (full path)
	ID        string    // the successor's id
	By        string    // who asked: the leader's id, or "operator"
	Reason    string    // directed, yield, stop or operator
	SessionID int64     // the session that made it: it goes with it
	Created   time.Time // ZooKeeper's clock
}

// recordPath is the record's path under the election at path.
func recordPath(path string) string { return path + "/" + layout.ElectionHandOver }

// parseRecord reads a record's data (nil when it is not one).
func parseRecord(data []byte, st *zk.Stat) *record {
	var j recordJSON
	if json.Unmarshal(data, &j) != nil || j.To == "" {
		return nil
	}
	return &record{recordJSON: j, version: st.Version, owner: st.EphemeralOwner, ctime: st.Ctime, czxid: st.Czxid}
}

// encodeRecord is a record's data.
func encodeRecord(j recordJSON) []byte {
	b, _ := json.Marshal(j) // strings only: it cannot fail
	return b
}

// toSeq is the sequence number of the line node the record names (fair
// layout), or -1.
func (r *record) toSeq() int64 {
	n, ok := line.ParseName(r.To)
	if !ok {
		return -1
	}
	return n.Seq
}

// request is r as a Request of the election at path.
func (r *record) request(path string) *Request {
	return &Request{To: path + "/" + r.To, ID: r.ID, By: r.By, Reason: r.Reason, SessionID: r.owner,
		Created: time.UnixMilli(r.ctime)}
}

// getRecord reads the record at p on c, without a watch: nil when there is
// none (or it is not one).
func getRecord(c *zk.Conn, p string) (*record, error) {
	data, st, err := c.Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseRecord(data, st), nil
}

// readRecord reads the record at p in ep, watching it (an exists watch:
// it fires when a record is created, changed or deleted): nil when there
// is none (or it is not one).
func readRecord(ctx context.Context, ep *session.Epoch, p string) (*record, <-chan zk.Event, error) {
	type read struct {
		rec *record
		ch  <-chan zk.Event
	}
	r, err := epcall.Call(ctx, ep, func(c *zk.Conn) (read, error) {
		ok, _, ch, err := c.ExistsW(p)
		if err != nil || !ok {
			return read{nil, ch}, err
		}
		rec, err := getRecord(c, p) // gone meanwhile: nil, and the watch fires
		if err != nil {
			return read{}, err
		}
		return read{rec, ch}, nil
	}, nil)
	return r.rec, r.ch, err
}

// Pending returns the handover pending at the election at full path (nil
// when none): a leader handing over, or an operator's request, not yet
// taken (see election.PendingHandOver).
func Pending(ctx context.Context, sess *session.Session, full string) (*Request, error) {
	var req *Request
	err := sess.Do(ctx, func(ep *session.Epoch) error {
		r, err := getRecord(ep.Conn(), recordPath(full))
		req = nil
		if r != nil {
			req = r.request(strings.TrimPrefix(full, sess.Namespace()))
		}
		return err
	})
	if err != nil {
		return nil, err // op may still run: do not read req
	}
	return req, nil
}

// recordWatch is a candidate's watch of its election's record: one exists
// watch per connection (epoch), shared by whatever of the candidate looks
// while it waits in line or hands over (a leader does not watch it: see
// CheckRecord), and set again only once it has fired (go-zookeeper
// keeps every watch channel until its event, so a watch set anew at each
// look would pile up). It is made when first needed (Handovers.recs): a
// candidate that never waits keeps none.
//
// It costs no goroutine: the watch's event reaches it on the session's
// event path (session.Session.WatchNode), and its epoch's end through the
// epoch's hook. The registration lasts as long as the watch is used; it
// holds the watch weakly and ends when the candidate is collected.
type recordWatch struct {
	sess *session.Session
	path string // the record's full path

	mu      sync.Mutex
	ep      *session.Epoch  // the epoch the watch was set in
	zch     <-chan zk.Event // the exists watch (nil: none set, or fired)
	rec     *record         // the record as read when zch was set
	gen     uint64          // counts the watch's events and epoch ends
	changed chan struct{}   // closed at the next event or epoch end (nil: none asked)
	waiters int             // the looks changed was given to, less unwait's (see unwait)
	watched bool            // registered with the session's event path
}

// newRecordWatch is the record watch of the election at full path p.
func newRecordWatch(sess *session.Session, p string) *recordWatch {
	return &recordWatch{sess: sess, path: recordPath(p)}
}

// look returns the record (nil: none) as read in the session's current
// epoch, and a channel closed when it may have changed. It reads it, with a
// watch, when it is not known in that epoch or has changed since.
func (w *recordWatch) look(ctx context.Context) (*record, <-chan struct{}, error) {
	ep, err := w.sess.Wait(ctx)
	if err != nil {
		return nil, nil, err
	}
	w.mu.Lock()
	w.registerLocked()
	if w.ep == ep && w.zch != nil {
		rec, ch := w.rec, w.changedLocked()
		w.mu.Unlock()
		return rec, ch, nil
	}
	gen := w.gen
	w.mu.Unlock()
	rec, zch, err := readRecord(ctx, ep, w.path)
	if err != nil {
		return nil, nil, err
	}
	w.mu.Lock()
	if w.gen != gen {
		// An event (or the epoch's end) came while the watch was set: the
		// record read may be stale: look again.
		w.mu.Unlock()
		closed := make(chan struct{})
		close(closed)
		return rec, closed, nil
	}
	ch := w.changedLocked()
	newEpoch := w.ep != ep
	w.ep, w.zch, w.rec = ep, zch, rec
	w.mu.Unlock()
	if newEpoch {
		// Outside w.mu: the hook runs at once if ep has ended.
		ep.OnEnd(func() { w.fire(ep) })
	}
	return rec, ch, nil
}

// unwait tells the watch that a look given ch no longer waits on it: once
// none does, the channel is dropped (a candidate that waited in line keeps
// none while it leads). A look that never calls it keeps the channel until
// the watch's next event, as before.
func (w *recordWatch) unwait(ch <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch == nil || w.changed == nil || ch != (<-chan struct{})(w.changed) {
		return // fired since (or another's)
	}
	if w.waiters--; w.waiters == 0 {
		w.changed = nil
	}
}

// registerLocked registers the watch with the session's event path, once.
// The registration holds w weakly, and ends when w is collected.
func (w *recordWatch) registerLocked() {
	if w.watched {
		return
	}
	w.watched = true
	wp := weak.Make(w)
	stop := w.sess.WatchNode(w.path, func(ev zk.Event) {
		if x := wp.Value(); x != nil {
			x.fire(nil)
		}
	})
	runtime.AddCleanup(w, func(stop func()) { stop() }, stop)
}

// fire marks the watch as fired (an event of the record's node) or ended
// (the end of epoch ep: only if the watch was set in it), and tells those
// waiting. It runs on the session's event path or the epoch's hook.
func (w *recordWatch) fire(ep *session.Epoch) {
	w.mu.Lock()
	if ep != nil && ep != w.ep {
		w.mu.Unlock()
		return // an epoch the watch is no longer in
	}
	w.gen++
	w.zch = nil // read again
	if w.changed != nil {
		close(w.changed)
		w.changed, w.waiters = nil, 0
	}
	w.mu.Unlock()
}

// changedLocked is the channel closed at the watch's next event or epoch
// end (made when asked for), counted as one more waiter's.
func (w *recordWatch) changedLocked() chan struct{} {
	if w.changed == nil {
		w.changed = make(chan struct{})
	}
	w.waiters++
	return w.changed
}

// knownIn is the record as read in ep, with the watch set then still
// armed (ok): nothing changed it since. A candidate that waited in line
// and now leads reads it so, with no request.
func (w *recordWatch) knownIn(ep *session.Epoch) (rec *record, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ep != ep || w.zch == nil {
		return nil, false
	}
	return w.rec, true
}

// cached is the record as last read (nil: none, or not read).
func (w *recordWatch) cached() *record {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rec
}
