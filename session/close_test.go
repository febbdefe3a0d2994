package session_test

import (
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/internal/wire/zkwire"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// closeRacer is a dialer whose connections, once armed, swallow the close
// request (the server never answers it, so go-zookeeper's Close waits its
// second for the answer) and fail the write of the first exists request
// after it: a request queued while the close is under way whose write fails.
type closeRacer struct {
	armed       atomic.Bool
	closeOnce   sync.Once
	closeSeen   chan struct{}
	refusedOnce sync.Once
	refused     chan struct{}
}

func newCloseRacer() *closeRacer {
	return &closeRacer{closeSeen: make(chan struct{}), refused: make(chan struct{})}
}

func (r *closeRacer) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &racedConn{Conn: c, r: r}, nil
}

type racedConn struct {
	net.Conn
	r *closeRacer
}

func (c *racedConn) Write(p []byte) (int, error) {
	if op, ok := zkwire.RequestOp(p); ok && c.r.armed.Load() { // go-zookeeper writes a frame a Write
		switch op {
		case zkwire.OpCloseSession:
			c.r.closeOnce.Do(func() { close(c.r.closeSeen) })
			return len(p), nil
		case zkwire.OpExists:
			select {
			case <-c.r.closeSeen:
				c.r.refusedOnce.Do(func() { close(c.r.refused) })
				return 0, errors.New("closeRacer: the write is refused")
			default:
			}
		}
	}
	return c.Conn.Write(p)
}

// TestCloseRacingARequest: Session.Close returns within its bound when an
// application's request races it. go-zookeeper (v1.0.4) answers a request
// queued after its close began whose write then fails three times into a
// channel of two; when the request's caller has returned on the close
// without reading (its own select, an even chance), go-zookeeper's
// connection loop blocks for ever in Conn.flushRequests and never closes its
// event channel, which the manager's close waited for without a bound. Each
// round races one request; over six rounds the stuck loop comes (an even
// chance each), and every Close must return in time regardless.
func TestCloseRacingARequest(t *testing.T) {
	// The stuck loop is go-zookeeper's goroutine, left behind on purpose,
	// and so is a request's caller stuck in go-zookeeper's queueRequest.
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		goleak.VerifyNone(t, opt, testutil.IgnoreCloseRace(),
			goleak.IgnoreTopFunction("github.com/go-zookeeper/zk.(*Conn).queueRequest"))
	})
	c := zktest.Start(t, 1)
	const timeout = 2 * time.Second
	const connectTimeout = 500 * time.Millisecond
	stuck := 0
	for round := range 6 {
		r := newCloseRacer()
		logs := &testutil.SyncBuffer{}
		s := open(t, c.Servers(), session.WithSessionTimeout(timeout), session.WithConnectTimeout(connectTimeout),
			session.WithDialer(r.dial), session.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
		ep, ok := s.Current()
		require.True(t, ok)
		conn := ep.Conn()
		r.armed.Store(true)
		began := time.Now()
		closed := make(chan struct{})
		go func() { defer close(closed); _ = s.Close() }()
		select {
		case <-r.closeSeen:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: go-zookeeper never wrote its close request", round)
		}
		// A request of the application's, after the close began: one is
		// queued and written (and refused) at the latest by the tenth try.
		// On a goroutine of its own: go-zookeeper may block the caller
		// too, for ever (its "tie" check in queueRequest is the third
		// answer when the write's failure and flushRequests came first).
		go func() {
			for range 1000 {
				_, _, _ = conn.Exists("/")
				select {
				case <-r.refused:
					return
				default:
				}
			}
		}()
		select {
		case <-r.refused:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: no request was written after the close began", round)
		}
		// The bound: the conn's close (its one second for the answer) and
		// the manager's wait for the loop (timeout + 2 × connect timeout),
		// with room for a loaded machine.
		select {
		case <-closed:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: Session.Close did not return", round)
		}
		<-s.Done()
		left := strings.Contains(logs.String(), "connection loop did not end")
		if left {
			stuck++
		}
		t.Logf("round %d: closed in %v; go-zookeeper's loop left stuck: %v", round, time.Since(began).Round(time.Millisecond), left)
	}
	t.Logf("%d of 6 rounds left go-zookeeper's loop stuck", stuck)
}
