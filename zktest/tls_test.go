package zktest_test

import (
	"context"
	"crypto/tls"
	"log/slog"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// waitState waits for the session to reach st (a failure reports the
// state at the deadline).
func waitState(t *testing.T, s *session.Session, st session.State, d time.Duration) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, st, s.State(), "session state")
	}, d, 10*time.Millisecond)
}

func TestTLSCluster(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
	c := zktest.Start(t, 1, zktest.WithTLS(zktest.TLSConfig{}))
	require.NotNil(t, c.CA())
	require.NotNil(t, c.ClientTLS())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.Equal(t, "standalone", c.Mode(ctx, 0))
	out, err := c.FourLetter(ctx, 0, "ruok") // over TLS
	require.NoError(t, err)
	require.Equal(t, "imok", out)
	// The port speaks TLS only (the server waits for a whole TLS record).
	pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer pcancel()
	_, err = zktest.FourLetterWord(pctx, c.Addr(0), "ruok")
	require.Error(t, err)

	plain := zktest.Start(t, 1)
	require.Nil(t, plain.CA())
	require.Nil(t, plain.ClientTLS())
}

// A session over TLS through the fault proxy: the proxy forwards the
// encrypted bytes, and a Sever or a Stall breaks the connection as it
// breaks a plaintext one; the client re-handshakes and rejoins its session.
func TestProxyTLS(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
	c := zktest.Start(t, 1, zktest.WithTLS(zktest.TLSConfig{}))
	p, err := zktest.NewProxy(c.Addr(0), c.Addr(0))
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The stall below is seen at the read timeout (2/3 of the session
	// timeout), and the TLS reconnect after the heal must fit in the third
	// left, before the server expires the session. At 10 s, a loaded
	// machine's TLS handshakes after the heal outlasted that third; at
	// 15 s, in a make test, the server's first handshake after the heal
	// completed 5.2 s after it, in the same millisecond as the server
	// expired the session (as if the server had not run in between). 30 s
	// leaves 10 s, and each attempt has 3 s.
	s, err := session.Open(ctx, p.Addrs(), session.WithSessionTimeout(30*time.Second),
		session.WithConnectTimeout(3*time.Second), session.WithTLS(c.ClientTLS()),
		session.WithLogger(slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	sid := s.SessionID()
	write := func(v string) {
		t.Helper()
		require.NoError(t, s.Do(ctx, func(e *session.Epoch) error {
			_, err := e.Conn().Set("/proxy-tls", []byte(v), -1)
			return err
		}))
	}
	e, _ := s.Current()
	_, err = e.Conn().Create("/proxy-tls", nil, zk.FlagEphemeral, s.ACL())
	require.NoError(t, err)

	p.Sever()
	waitState(t, s, session.Reconnected, 10*time.Second)
	write("after sever")
	require.Equal(t, sid, s.SessionID())

	p.Stall()
	waitState(t, s, session.Suspended, 30*time.Second)
	p.Heal()
	waitState(t, s, session.Reconnected, 15*time.Second)
	write("after stall")
	require.Equal(t, sid, s.SessionID())
}

// Recipes work unchanged over mutual TLS.
func TestMutexOverTLS(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
	c := zktest.Start(t, 1, zktest.WithTLS(zktest.TLSConfig{}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var sessions [2]*session.Session
	for i := range sessions {
		s, err := session.Open(ctx, c.Servers(), session.WithSessionTimeout(4*time.Second),
			session.WithTLS(c.ClientTLS()))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		sessions[i] = s
	}
	m1, err := mutex.New(sessions[0], "/tls/lock")
	require.NoError(t, err)
	m2, err := mutex.New(sessions[1], "/tls/lock")
	require.NoError(t, err)
	require.NoError(t, m1.Lock(ctx))
	ok, err := m2.TryLock(ctx)
	require.NoError(t, err)
	require.False(t, ok, "two holders")
	require.NoError(t, m1.Unlock(ctx))
	require.NoError(t, m2.Lock(ctx))
	require.NoError(t, m2.Unlock(ctx))
}

// The servers authenticate each client as the subject of its certificate:
// a node whose ACL names one principal is closed to another.
func TestTLSClientPrincipals(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
	c := zktest.Start(t, 1, zktest.WithTLS(zktest.TLSConfig{}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	openAs := func(cert *tls.Certificate) *session.Session {
		cfg := c.ClientTLS()
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		s, err := session.Open(ctx, c.Servers(), session.WithTLS(cfg))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	owner := openAs(nil) // CN=zktest-client
	acl := []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: "CN=" + zktest.ClientCN}}
	e, _ := owner.Current()
	_, err := e.Conn().Create("/principal", []byte("mine"), 0, acl)
	require.NoError(t, err)
	_, _, err = e.Conn().Get("/principal")
	require.NoError(t, err)

	cert, err := c.CA().ClientCert("someone-else")
	require.NoError(t, err)
	other := openAs(&cert)
	e, _ = other.Current()
	_, _, err = e.Conn().Get("/principal")
	require.ErrorIs(t, err, zk.ErrNoAuth)
}

type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Log(time.Now().Format("15:04:05.000"), string(p))
	return len(p), nil
}
