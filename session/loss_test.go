package session_test

import (
	"context"
	"encoding/binary"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// sessionCounter is a dialer that records, in order, the distinct session IDs
// of the ConnectResponses the servers send on its connections: every session a
// client was given, including ones it closed at once.
type sessionCounter struct {
	mu    sync.Mutex
	ids   []int64
	dials int
}

func (sc *sessionCounter) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	sc.mu.Lock()
	sc.dials++
	sc.mu.Unlock()
	return &countedConn{Conn: c, sc: sc}, nil
}

func (sc *sessionCounter) sessions() []int64 {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return slices.Clone(sc.ids)
}

// countedConn parses the first 20 bytes a server sends: int32 length, int32
// protocolVersion, int32 timeOut, int64 sessionId.
type countedConn struct {
	net.Conn
	sc    *sessionCounter
	hello []byte
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if len(c.hello) < 20 {
		c.hello = append(c.hello, p[:min(n, 20-len(c.hello))]...)
		if len(c.hello) == 20 {
			if id := int64(binary.BigEndian.Uint64(c.hello[12:20])); id != 0 {
				c.sc.mu.Lock()
				if !slices.Contains(c.sc.ids, id) {
					c.sc.ids = append(c.sc.ids, id)
				}
				c.sc.mu.Unlock()
			}
		}
	}
	return n, err
}

// TestExpiryOpensOneSession: when the server says a session expired, the
// manager opens exactly one new session. go-zookeeper, left alone, would redial
// with session ID 0 on the expired session's connection and be given a
// throwaway session the manager then closes: one extra session created and
// closed through the quorum per client per expiry. A 3-node ensemble, so that
// go-zookeeper has another server to redial at once.
func TestExpiryOpensOneSession(t *testing.T) {
	noLeaks(t)
	c := zktest.Start(t, 3)
	p, err := zktest.NewProxy(c.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	sc := &sessionCounter{}
	s := open(t, p.Addrs(), session.WithSessionTimeout(4*time.Second), session.WithDialer(sc.dial))
	r := record(s)
	want := []int64{s.SessionID()}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const expiries = 2
	for range expiries {
		old := s.SessionID()
		require.NoError(t, p.ExpireSession(ctx, old))
		var evs []session.Event
		for len(evs) == 0 || evs[len(evs)-1].State != session.Connected {
			evs = append(evs, r.next(t, 10*time.Second))
		}
		require.Equal(t, session.Lost, evs[len(evs)-2].State, "%v", evs)
		require.NotEqual(t, old, s.SessionID())
		want = append(want, s.SessionID())
	}
	// Once Done, every connection of the manager has ended: every session it
	// was ever given has been seen by the dialer.
	closing := time.Now()
	require.NoError(t, s.Close())
	<-s.Done()
	t.Logf("closed in %v", time.Since(closing))
	require.Equal(t, want, sc.sessions(), "sessions given to the client (want one per expiry)")
}

// TestSilenceIsSuspendedOnTime: when nothing is received for the read timeout
// (2/3 of the session timeout) the manager reports Suspended at once, on its
// own clock, even when go-zookeeper notices late. Here it does: the network
// stalls, and just before go-zookeeper's read timeout the application sends
// more than the sockets' buffers hold, so go-zookeeper's sender blocks in a
// write (for up to another read timeout) and its connection loop reports
// nothing until that write gives up — later than the server may expire the
// session, which would let another client be granted a hold before its holder
// is told.
func TestSilenceIsSuspendedOnTime(t *testing.T) {
	noLeaks(t)
	c := zktest.Start(t, 1)
	p, err := zktest.NewProxy(c.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	const timeout = 3 * time.Second
	readTimeout := timeout * 2 / 3
	const margin = 150 * time.Millisecond
	s := open(t, p.Addrs(), session.WithSessionTimeout(timeout))
	r := record(s)
	e, ok := s.Current()
	require.True(t, ok)

	stalledAt := time.Now()
	p.Stall()
	// The fault's timing: the writes start shortly before the read timeout.
	time.Sleep(readTimeout * 3 / 4)
	big := make([]byte, 512<<10)
	var wg sync.WaitGroup
	defer wg.Wait()
	for range 32 { // 16 MiB: more than the client's send and the proxy's receive buffers
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = e.Conn().Set("/no-such-node", big, -1) // fails once the connection ends
		}()
	}
	ev := r.next(t, 2*timeout)
	took := ev.Time.Sub(stalledAt)
	t.Logf("stall → %v after %v (read timeout %v)", ev.State, took, readTimeout)
	require.Equal(t, session.Suspended, ev.State, "%v", ev)
	require.LessOrEqual(t, took, readTimeout+margin, "Suspended reported late: %v", ev)
	require.ErrorIs(t, e.Context().Err(), context.Canceled, "the epoch (every hold's loss signal) must end at Suspended")

	ev = r.next(t, 2*timeout)
	require.Equal(t, session.Lost, ev.State, "%v", ev)
	took = ev.Time.Sub(stalledAt)
	t.Logf("stall → Lost after %v", took)
	require.LessOrEqual(t, took, timeout+margin, "Lost declared late")
	p.Heal()
	r.expect(t, 15*time.Second, session.Connected)
}
