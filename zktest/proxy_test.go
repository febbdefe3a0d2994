package zktest_test

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/shepherdzk/shepherd/zktest"
)

// echoServer echoes every connection until the peer half-closes it, and
// counts the connections it accepted.
type echoServer struct {
	ln       net.Listener
	accepted atomic.Int32
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	e := &echoServer{ln: ln}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.accepted.Add(1)
			e.mu.Lock()
			e.conns = append(e.conns, c)
			e.mu.Unlock()
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				_, _ = io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	return e
}

func (e *echoServer) close() {
	e.ln.Close()
	e.mu.Lock()
	for _, c := range e.conns {
		c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

func dialProxy(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg and reads it back within 5 s.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	_, err := c.Write([]byte(msg))
	require.NoError(t, err)
	buf := make([]byte, len(msg))
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	require.Equal(t, msg, string(buf))
}

// requireClosed checks that c is closed by the far end within 5 s.
func requireClosed(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	n, err := c.Read(make([]byte, 1))
	require.Zero(t, n)
	require.Error(t, err)
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "connection still open")
}

// requireSilent checks that nothing arrives on c for d, and that c stays open.
func requireSilent(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(d)))
	n, err := c.Read(make([]byte, 1))
	require.Zero(t, n)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
}

// TestProxyFaults checks the proxy's mechanics on a plain echo server.
func TestProxyFaults(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	_, err := zktest.NewProxy()
	require.Error(t, err)
	_, err = zktest.NewProxy("no-port")
	require.ErrorContains(t, err, "zktest: ")

	echo := startEcho(t)
	defer echo.close()
	p, err := zktest.NewProxy(echo.ln.Addr().String())
	require.NoError(t, err)
	defer p.Close()
	addr := p.Addrs()[0]
	host, _, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", host)

	// Bytes pass both ways, including a large burst, and a half-close
	// still delivers the bytes in flight.
	c1 := dialProxy(t, addr)
	roundTrip(t, c1, "hello")
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i % 251)
	}
	go func() { _, _ = c1.Write(big); _ = c1.(*net.TCPConn).CloseWrite() }()
	got, err := io.ReadAll(c1)
	require.NoError(t, err)
	require.Equal(t, big, got)
	require.Eventually(t, func() bool { return p.Conns() == 0 }, 5*time.Second, 5*time.Millisecond)

	// Sever closes current connections; new ones work.
	c2 := dialProxy(t, addr)
	roundTrip(t, c2, "x")
	require.Equal(t, 1, p.Conns())
	p.Sever()
	requireClosed(t, c2)
	roundTrip(t, dialProxy(t, addr), "after sever")

	// Refuse: existing connections carry on, new ones are closed at once.
	c3 := dialProxy(t, addr)
	roundTrip(t, c3, "y")
	p.Refuse(true)
	requireClosed(t, dialProxy(t, addr))
	roundTrip(t, c3, "still here")
	p.Refuse(false)
	roundTrip(t, dialProxy(t, addr), "accepted again")

	// Stall: nothing is forwarded on old or new connections, and they stay
	// open; a connection made during the stall never reaches the server.
	p.Stall()
	_, err = c3.Write([]byte("held"))
	require.NoError(t, err)
	requireSilent(t, c3, 300*time.Millisecond)
	upstream := echo.accepted.Load()
	c4 := dialProxy(t, addr)
	_, err = c4.Write([]byte("held too"))
	require.NoError(t, err)
	requireSilent(t, c4, 300*time.Millisecond)
	require.Equal(t, upstream, echo.accepted.Load(), "dialled through during a stall")

	// Heal closes what was stalled, never resumes it; new connections work.
	p.Heal()
	requireClosed(t, c3)
	requireClosed(t, c4)
	roundTrip(t, dialProxy(t, addr), "healed")

	// Heal also stops refusing; without a stall it closes nothing.
	c5 := dialProxy(t, addr)
	roundTrip(t, c5, "z")
	p.Refuse(true)
	p.Heal()
	roundTrip(t, dialProxy(t, addr), "no longer refused")
	roundTrip(t, c5, "not closed")

	// Close is idempotent, closes everything, and the port stops listening.
	require.NoError(t, p.Close())
	require.NoError(t, p.Close())
	requireClosed(t, c5)
	require.Zero(t, p.Conns())
	_, err = net.DialTimeout("tcp", addr, time.Second)
	require.Error(t, err)

	// A target that is down: the client's connection is closed.
	dead := deadAddr(t)
	q, err := zktest.NewProxy(dead)
	require.NoError(t, err)
	defer q.Close()
	requireClosed(t, dialProxy(t, q.Addrs()[0]))
}

// TestProxy injects faults between a go-zookeeper client and a real server.
// The proxy has three front doors to the one server: go-zookeeper sleeps 1 s
// after each pass over its server list, and with three addresses a client whose
// reconnect attempt was held by a stall still has an untried one when the
// stall heals, so it hears of its expiry in milliseconds, not after 1 s.
func TestProxy(t *testing.T) {
	c := zktest.Start(t, 1)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	acl := zk.WorldACL(zk.PermAll)
	observer, _ := client(t, c.Servers(), 10*time.Second, nil)
	defer observer.Close()

	newProxy := func(t *testing.T) *zktest.Proxy {
		p, err := zktest.NewProxy(c.Addr(0), c.Addr(0), c.Addr(0))
		require.NoError(t, err)
		return p
	}

	t.Run("Sever", func(t *testing.T) {
		p := newProxy(t)
		defer p.Close()
		conn, rec := client(t, p.Addrs(), 4*time.Second, nil)
		defer conn.Close()
		sid := conn.SessionID()
		cred, ok := p.Credentials(sid)
		require.True(t, ok)
		require.Equal(t, sid, cred.SessionID)
		require.Len(t, cred.Password, 16)
		_, err := conn.Create("/sever", nil, zk.FlagEphemeral, acl)
		require.NoError(t, err)

		from := rec.mark()
		t0 := time.Now()
		p.Sever()
		i, down := rec.wait(t, from, zk.StateDisconnected, 5*time.Second)
		_, up := rec.wait(t, i, zk.StateHasSession, 5*time.Second)
		t.Logf("severed: Disconnected after %v, same session back after %v", down.Sub(t0), up.Sub(t0))
		require.Equal(t, sid, conn.SessionID())
		require.NotContains(t, rec.states(from), zk.StateExpired)
		last, ok := p.Last()
		require.True(t, ok)
		require.Equal(t, sid, last.SessionID)
		_, stat, err := observer.Exists("/sever")
		require.NoError(t, err)
		require.Equal(t, sid, stat.EphemeralOwner)
	})

	t.Run("Refuse", func(t *testing.T) {
		p := newProxy(t)
		defer p.Close()
		conn, rec := client(t, p.Addrs(), 4*time.Second, nil)
		defer conn.Close()
		sid := conn.SessionID()

		from := rec.mark()
		p.Refuse(true)
		_, _, err := conn.Get("/")
		require.NoError(t, err, "refusing must not affect the open connection")
		require.Empty(t, rec.states(from))

		p.Sever()
		i, _ := rec.wait(t, from, zk.StateDisconnected, 5*time.Second)
		// Hold the fault: no session while refusing.
		hold := time.NewTimer(1500 * time.Millisecond)
		<-hold.C
		require.NotContains(t, rec.states(i), zk.StateHasSession)
		require.Contains(t, rec.states(i), zk.StateConnected, "the client should have tried (and been refused)")
		require.Zero(t, p.Conns())

		t0 := time.Now()
		p.Refuse(false)
		_, up := rec.wait(t, i, zk.StateHasSession, 5*time.Second)
		t.Logf("refused for 1.5 s (%d states); same session back %v after refusing stopped",
			len(rec.states(i)), up.Sub(t0))
		require.Equal(t, sid, conn.SessionID())
	})

	t.Run("StallPastTimeout", func(t *testing.T) {
		p := newProxy(t)
		defer p.Close()
		const timeout = time.Second
		conn, rec := client(t, p.Addrs(), timeout, nil)
		defer conn.Close()
		sid := conn.SessionID()
		_, err := conn.Create("/stall", nil, zk.FlagEphemeral, acl)
		require.NoError(t, err)
		ok, _, watch, err := observer.ExistsW("/stall")
		require.NoError(t, err)
		require.True(t, ok)

		from := rec.mark()
		t0 := time.Now()
		p.Stall()
		_, down := rec.wait(t, from, zk.StateDisconnected, 5*time.Second)
		deleted := waitDeleted(t, watch, 10*time.Second)
		// The server ended the session while the client, cut off, could
		// not hear of it.
		require.NotContains(t, rec.states(from), zk.StateExpired)
		t1 := time.Now()
		p.Heal()
		_, expired := rec.wait(t, from, zk.StateExpired, 10*time.Second)
		t.Logf("stalled: Disconnected after %v, node deleted by the server after %v; healed at %v, StateExpired %v later",
			down.Sub(t0), deleted.Sub(t0), t1.Sub(t0), expired.Sub(t1))
		// The server last heard from the client at most one ping interval
		// (timeout/3) before the stall.
		require.GreaterOrEqual(t, deleted.Sub(t0), timeout/2, "the server expired the session early")
		rec.wait(t, from, zk.StateHasSession, 10*time.Second)
		require.NotEqual(t, sid, conn.SessionID())
	})

	t.Run("StallShort", func(t *testing.T) {
		p := newProxy(t)
		defer p.Close()
		const timeout = time.Second
		conn, rec := client(t, p.Addrs(), timeout, nil)
		defer conn.Close()
		sid := conn.SessionID()
		_, err := conn.Create("/short", nil, zk.FlagEphemeral, acl)
		require.NoError(t, err)

		from := rec.mark()
		p.Stall()
		hold := time.NewTimer(timeout / 3) // well under 2/3 of the timeout
		<-hold.C
		during := rec.states(from)
		p.Heal()
		i, _ := rec.wait(t, from, zk.StateDisconnected, 5*time.Second)
		rec.wait(t, i, zk.StateHasSession, 5*time.Second)
		t.Logf("states during a %v stall: %v; after Heal: %v", timeout/3, during, rec.states(from))
		require.Equal(t, sid, conn.SessionID())
		require.NotContains(t, rec.states(from), zk.StateExpired)
		_, stat, err := observer.Exists("/short")
		require.NoError(t, err)
		require.Equal(t, sid, stat.EphemeralOwner)
	})
}
