package session

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/wire/wiretap"
	"github.com/shepherdzk/shepherd/internal/wire/zkwire"
)

// handle is one *zk.Conn and what the manager knows of it. go-zookeeper may
// call the event callback before zk.Connect has returned, so the callback is
// bound to the handle, not to the conn.
type handle struct {
	s      *Session
	conn   *zk.Conn        // set once Connect returns (under s.mu)
	events <-chan zk.Event // closed when go-zookeeper's loop has ended

	// Guarded by s.mu.
	sid int64 // the session this handle was opened for (first HasSession)
	up  bool  // HasSession and not Disconnected since
	// syncGen counts the reconnections of the session (see resync).
	syncGen uint64
	ready   chan struct{} // closed at the first HasSession
	failed  chan struct{} // closed when the handle can no longer become ready

	// heard is s.mono() when the latest request the server has answered
	// was sent: the server heard from the session then or later (see
	// trackedConn.answered).
	heard atomic.Int64
	nc    atomic.Pointer[trackedConn] // the connection go-zookeeper uses now
	// expired is set when a server has said the handle's session expired:
	// from then on the handle never dials again. go-zookeeper would redial
	// with session ID 0 and be given a new session the manager does not want
	// (it opens its own, on a new handle): one throwaway session created and
	// closed through the quorum per client per expiry.
	expired   atomic.Bool
	timeoutNs atomic.Int64 // the negotiated session timeout
	helloSID  atomic.Int64 // session id of the last ConnectResponse
	errMu     sync.Mutex
	errs      map[string]serverErrs // why each server's attempts failed (see noteErr)
	closeOnce sync.Once
	written   wiretap.Tap // requests written to the connection (see package wiretap)
}

// close closes the conn and waits until go-zookeeper's goroutines have ended,
// for at most loopEndBound: a request written at the moment of the close can
// leave go-zookeeper's connection loop blocked for ever (see loopEndBound);
// the close then logs so and returns, leaving that one goroutine behind
// rather than hanging Session.Close.
func (h *handle) close() {
	h.closeOnce.Do(func() {
		if h.conn == nil {
			return
		}
		h.conn.Close()
		bound := time.NewTimer(h.loopEndBound())
		defer bound.Stop()
		for {
			select {
			case _, ok := <-h.events:
				if !ok {
					return
				}
			case <-bound.C:
				h.s.logq.add(slog.LevelWarn, "session: go-zookeeper's connection loop did not end after its close; left behind",
					"session", fmt.Sprintf("0x%x", h.conn.SessionID()), "waited", h.loopEndBound())
				return
			}
		}
	})
}

// loopEndBound is how long a closed conn's loop may take to end. Its
// receiver waits for a read at most 2/3 of the session timeout, its close
// request is queued for at most twice the connect timeout; go-zookeeper then
// fails its pending requests and ends. But when Close races a request (the
// request is queued after the close began, then its write fails, and its
// caller has returned on the close without reading its answer), go-zookeeper
// (v1.0.4) answers that request three times into a channel of two, and its
// loop blocks there for ever, holding its requests lock
// (Conn.flushRequests).
func (h *handle) loopEndBound() time.Duration {
	return h.timeout() + 2*h.s.cfg.connectTimeout
}

func (h *handle) timeout() time.Duration { return time.Duration(h.timeoutNs.Load()) }

// dial makes a connection through the configured dialer and wraps it so that
// the connect handshake is bounded by the connect timeout (go-zookeeper allows
// a server that accepts TCP but never answers 10 × 2/3 of the session timeout)
// and so that the manager learns the negotiated timeout and when it last heard
// from a server. With TLS, the TLS handshake happens here, on top of whatever
// the dialer returned, within the same connect timeout as the TCP connect:
// go-zookeeper, the trackedConn and the write tap see plaintext frames.
func (h *handle) dial(network, address string, _ time.Duration) (net.Conn, error) {
	if h.expired.Load() {
		return nil, errExpiredHandle
	}
	cfg := &h.s.cfg
	deadline := time.Now().Add(cfg.connectTimeout)
	var raw net.Conn
	var err error
	if cfg.dialer != nil {
		raw, err = cfg.dialer(network, address, cfg.connectTimeout)
	} else {
		raw, err = net.DialTimeout(network, address, cfg.connectTimeout)
	}
	if err != nil {
		h.noteErr(address, err)
		return nil, err
	}
	c := raw
	if cfg.tls != nil {
		if c, err = tlsHandshake(raw, address, cfg.tls, deadline); err != nil {
			raw.Close()
			h.noteErr(address, err)
			return nil, err
		}
	}
	tc := &trackedConn{Conn: c, raw: raw, isTLS: cfg.tls != nil, h: h, addr: address, limit: cfg.connectTimeout}
	h.nc.Store(tc)
	return tc, nil
}

// serverErrs is why a server's attempts failed: the last attempt's error,
// and the last answer the server gave (an error that is not a timeout: a
// TLS alert, a refused connection, a closed one).
type serverErrs struct {
	last, answer error
}

// noteErr records why the last attempt with server addr failed, for Open's
// error when it gives up.
func (h *handle) noteErr(addr string, err error) {
	h.errMu.Lock()
	defer h.errMu.Unlock()
	if h.errs == nil {
		h.errs = make(map[string]serverErrs)
	}
	e := h.errs[addr]
	e.last = err
	if !isTimeout(err) {
		e.answer = err
	}
	h.errs[addr] = e
}

// lastErrs returns, for each server that has one, in the order of servers,
// the last attempt's error; when that attempt only timed out (on a loaded
// machine, or cut short as Open's ctx ended) and an earlier one had the
// server's answer, the answer follows it: "certificate expired" says more
// than the timeout of the attempt after it.
func (h *handle) lastErrs(servers []string) []error {
	h.errMu.Lock()
	defer h.errMu.Unlock()
	var errs []error
	for _, s := range servers {
		e := h.errs[s]
		switch {
		case e.last == nil:
		case e.answer != nil && isTimeout(e.last):
			errs = append(errs, fmt.Errorf("%w (the attempt before: %w)", e.last, e.answer))
		default:
			errs = append(errs, e.last)
		}
	}
	return errs
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// drop closes the handle's current network connection (not the *zk.Conn):
// go-zookeeper sees it fail at once, in its reads and its writes, and
// reconnects. It never blocks.
func (h *handle) drop() {
	if c := h.nc.Load(); c != nil {
		c.raw.Close()
	}
}

// errExpiredHandle is what the dialer of a handle whose session expired
// answers go-zookeeper.
var errExpiredHandle = errors.New("session: the session expired; this connection is not redialled")

// trackedConn caps deadlines until the first reply and reads the negotiated
// timeout and the session ID from the ConnectResponse's fixed fields
// (zkwire.ParseConnectHead).
type trackedConn struct {
	net.Conn          // what go-zookeeper reads and writes: raw, or TLS over raw
	raw      net.Conn // the dialer's connection
	isTLS    bool     // Conn is TLS over raw
	addr     string
	h        *handle
	limit    time.Duration
	replied  atomic.Bool
	hello    [zkwire.ConnectHeadLen]byte
	helloN   int // bytes of hello collected; only the reading goroutine touches it

	// sent[next:] holds when each request written and not yet answered
	// was sent (s.mono()), oldest first; answers finds the answers among
	// what is read (only the reading goroutine touches it).
	sentMu  sync.Mutex
	sent    []int64
	next    int
	answers zkwire.Answers
}

func (c *trackedConn) capped(t time.Time) time.Time {
	if c.replied.Load() {
		return t
	}
	limit := time.Now().Add(c.limit)
	if t.IsZero() || t.After(limit) {
		return limit
	}
	return t
}

func (c *trackedConn) SetDeadline(t time.Time) error     { return c.Conn.SetDeadline(c.capped(t)) }
func (c *trackedConn) SetReadDeadline(t time.Time) error { return c.Conn.SetReadDeadline(c.capped(t)) }
func (c *trackedConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(c.capped(t))
}

// Write passes p on. go-zookeeper writes one whole request frame per Write;
// a create some caller waits for is reported once written (see package
// wiretap).
func (c *trackedConn) Write(p []byte) (int, error) {
	// Taken before the write: the server hears the request no earlier.
	c.sentMu.Lock()
	c.sent = append(c.sent, c.h.s.mono())
	c.sentMu.Unlock()
	n, err := c.Conn.Write(p)
	if err == nil && wiretap.Waiting(&c.h.written) {
		wiretap.Saw(&c.h.written, p)
	}
	return n, err
}

// Close closes the dialer's connection without a TLS close_notify: that
// alert is a write, which could block on a stalled connection for seconds,
// and go-zookeeper has said goodbye (closeSession) already when it matters.
func (c *trackedConn) Close() error { return c.raw.Close() }

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.helloN == 0 && p[0] != 0 {
		// A ConnectResponse starts with its length, a small int32: this
		// is not ZooKeeper speaking (go-zookeeper would take the bytes for
		// a length of many megabytes and allocate that much).
		err = c.notZooKeeper(p[0])
		c.h.noteErr(c.addr, err)
		return 0, err
	}
	if err != nil && n == 0 && !c.replied.Load() {
		c.h.noteErr(c.addr, c.noAnswer(err))
	}
	if n > 0 {
		if k := c.answers.Feed(p[:n]); k > 0 {
			c.answered(k)
		}
		if c.helloN < len(c.hello) {
			k := copy(c.hello[c.helloN:], p[:n])
			c.helloN += k
			if c.helloN == len(c.hello) {
				timeout, sid := zkwire.ParseConnectHead(&c.hello)
				c.h.timeoutNs.Store(int64(timeout))
				c.h.helloSID.Store(sid)
				c.replied.Store(true)
			}
		}
	}
	return n, err
}

// answered records that the k oldest requests written are answered: the
// server heard the last of them, so it heard from the session no earlier
// than when that one was sent (a server answers a connection's requests in
// order). What is received says nothing of what the server heard: a reply
// may come long after its request (a server's pause, a slow network), and
// a watch notification answers nothing (it flows while the other way is
// cut), so the session's silence is measured from here (see
// Session.clockLocked), not from the last byte received.
func (c *trackedConn) answered(k int) {
	c.sentMu.Lock()
	k = min(k, len(c.sent)-c.next)
	if k == 0 {
		c.sentMu.Unlock()
		return
	}
	c.next += k
	at := c.sent[c.next-1]
	// Popped by moving next, not by copying the rest on each answer: the
	// queue restarts whenever every request is answered (each idle moment),
	// and is compacted if it never drains.
	switch {
	case c.next == len(c.sent):
		c.sent, c.next = c.sent[:0], 0
	case c.next >= 1024 && 2*c.next >= len(c.sent):
		c.sent, c.next = append(c.sent[:0], c.sent[c.next:]...), 0
	}
	c.sentMu.Unlock()
	for {
		old := c.h.heard.Load()
		if at <= old || c.h.heard.CompareAndSwap(old, at) {
			return
		}
	}
}

// hostProvider tries the servers in turn and reports a "retry start" (after
// which go-zookeeper sleeps one second) only after a full pass in which no
// server could be connected: go-zookeeper's own provider sleeps before the first
// reconnect attempt when there is a single server. For a handle whose session
// expired it reports a retry start every time: go-zookeeper then fails the
// requests still queued on the dead session (ErrNoServer) and waits for Close
// instead of cycling through dials the handle refuses.
type hostProvider struct {
	h       *handle
	mu      sync.Mutex
	servers []string
	next    int
	tries   int
}

func (p *hostProvider) Init(servers []string) error {
	p.servers = append([]string(nil), servers...)
	return nil
}

func (p *hostProvider) Len() int { return len(p.servers) }

func (p *hostProvider) Next() (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.servers[p.next]
	p.next = (p.next + 1) % len(p.servers)
	p.tries++
	retry := p.tries > len(p.servers) || p.h.expired.Load()
	if retry {
		p.tries = 1
	}
	return s, retry
}

func (p *hostProvider) Connected() {
	p.mu.Lock()
	p.tries = 0
	p.mu.Unlock()
}
