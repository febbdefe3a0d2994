package zktest_test

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/shepherdzk/shepherd/zktest"
)

// recorder collects a client's session events. Its callback never blocks and
// never calls the connection.
type recorder struct {
	mu     sync.Mutex
	t0     time.Time
	events []stamped
	wake   chan struct{} // closed and replaced on every event
}

type stamped struct {
	state zk.State
	at    time.Duration // since t0
}

func newRecorder() *recorder {
	return &recorder{t0: time.Now(), wake: make(chan struct{})}
}

func (r *recorder) add(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, stamped{ev.State, time.Since(r.t0)})
	close(r.wake)
	r.wake = make(chan struct{})
}

// mark returns the index of the next event.
func (r *recorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// states returns the states of the events from index from on.
func (r *recorder) states(from int) []zk.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []zk.State
	for _, e := range r.events[min(from, len(r.events)):] {
		s = append(s, e.state)
	}
	return s
}

// wait waits up to timeout for an event in state s at index from or later
// and returns its index and time. It fails the test on timeout.
func (r *recorder) wait(t *testing.T, from int, s zk.State, timeout time.Duration) (int, time.Time) {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		r.mu.Lock()
		for i := from; i < len(r.events); i++ {
			if r.events[i].state == s {
				at := r.t0.Add(r.events[i].at)
				r.mu.Unlock()
				return i, at
			}
		}
		wake := r.wake
		r.mu.Unlock()
		select {
		case <-wake:
		case <-timer.C:
			t.Fatalf("no %v within %v; states since: %v", s, timeout, r.states(from))
		}
	}
}

// client connects to servers with dialer (nil for the default) and waits for
// a session. The caller closes the connection.
func client(t *testing.T, servers []string, timeout time.Duration, dialer zk.Dialer) (*zk.Conn, *recorder) {
	t.Helper()
	rec := newRecorder()
	var conn *zk.Conn
	var err error
	if dialer != nil {
		conn, _, err = zk.Connect(servers, timeout, zk.WithEventCallback(rec.add), zk.WithLogInfo(false), zk.WithDialer(dialer))
	} else {
		conn, _, err = zk.Connect(servers, timeout, zk.WithEventCallback(rec.add), zk.WithLogInfo(false))
	}
	require.NoError(t, err)
	rec.wait(t, 0, zk.StateHasSession, 15*time.Second)
	return conn, rec
}

// waitDeleted waits until a watch from ExistsW reports path deleted.
func waitDeleted(t *testing.T, ch <-chan zk.Event, timeout time.Duration) time.Time {
	t.Helper()
	select {
	case ev := <-ch:
		require.Equal(t, zk.EventNodeDeleted, ev.Type, "watch fired with %+v", ev)
		return time.Now()
	case <-time.After(timeout):
		t.Fatalf("node not deleted within %v", timeout)
		return time.Time{}
	}
}

func TestTap(t *testing.T) {
	c := zktest.Start(t, 1)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	tap := zktest.NewTap()
	var dials atomic.Int32
	next := func(network, address string, timeout time.Duration) (net.Conn, error) {
		dials.Add(1)
		return net.DialTimeout(network, address, timeout)
	}
	conn, _ := client(t, c.Servers(), 4*time.Second, tap.Dialer(next))
	defer conn.Close()
	require.Equal(t, int32(1), dials.Load(), "Dialer must dial through next")

	// Recorded by the time the client has its session.
	cred, ok := tap.Credentials(conn.SessionID())
	require.True(t, ok)
	require.Equal(t, conn.SessionID(), cred.SessionID)
	require.Len(t, cred.Password, 16)
	require.Equal(t, 4*time.Second, cred.Timeout)
	last, ok := tap.Last()
	require.True(t, ok)
	require.Equal(t, cred, last)
	require.NotContains(t, fmt.Sprintf("%v %+v %#v", cred, cred, cred), fmt.Sprint(cred.Password))
	t.Logf("tapped %v", cred)

	// Returned credentials are copies.
	cred.Password[0] ^= 0xff
	again, _ := tap.Credentials(conn.SessionID())
	require.NotEqual(t, cred.Password, again.Password)

	_, ok = tap.Credentials(conn.SessionID() + 1)
	require.False(t, ok)

	// Bytes pass through untouched.
	payload := make([]byte, 100<<10)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	_, err := conn.Create("/tap", payload, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	data, _, err := conn.Get("/tap")
	require.NoError(t, err)
	require.Equal(t, payload, data)

	// A failing next dialer's error comes back unchanged.
	boom := errors.New("boom")
	_, err = tap.Dialer(func(string, string, time.Duration) (net.Conn, error) { return nil, boom })("tcp", c.Addr(0), time.Second)
	require.ErrorIs(t, err, boom)

	// A nil next dials directly; a connection that never speaks ZooKeeper
	// records nothing and is passed through.
	empty := zktest.NewTap()
	nc, err := empty.Dialer(nil)("tcp", c.Addr(0), time.Second)
	require.NoError(t, err)
	require.NoError(t, nc.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = nc.Write([]byte("ruok"))
	require.NoError(t, err)
	buf := make([]byte, 4)
	_, err = nc.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "imok", string(buf))
	require.NoError(t, nc.Close())
	_, ok = empty.Last()
	require.False(t, ok)
}
