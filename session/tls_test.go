package session_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// countHandshakes makes cfg count its completed handshakes in n.
func countHandshakes(cfg *tls.Config, n *atomic.Int32) *tls.Config {
	cfg.VerifyConnection = func(tls.ConnectionState) error { n.Add(1); return nil }
	return cfg
}

func TestTLSMutualSessionSurvivesRestart(t *testing.T) {
	noLeaks(t)
	c := zktest.Start(t, 1, zktest.WithTLS(zktest.TLSConfig{}))
	var handshakes, dials atomic.Int32
	// TLS goes on top of a custom dialer's connections.
	dialer := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		dials.Add(1)
		return net.DialTimeout(network, addr, timeout)
	}
	// A session that outlives the server's restart on a loaded machine
	// (a JVM with TLS took over 4 s twice in make test; a plain one took
	// over 10 s once on a slower machine).
	s := open(t, c.Servers(), session.WithSessionTimeout(30*time.Second),
		session.WithTLS(countHandshakes(c.ClientTLS(), &handshakes)), session.WithDialer(dialer))
	r := record(s)
	sid := s.SessionID()
	// One TLS handshake on each of the dialer's connections (a server just
	// started may take a second dial).
	require.Positive(t, dials.Load())
	require.Equal(t, dials.Load(), handshakes.Load(), "a TLS handshake on each dialled connection")
	before := handshakes.Load()

	e, _ := s.Current()
	_, err := e.Conn().Create("/tls", []byte("over TLS"), zk.FlagEphemeral, s.ACL())
	require.NoError(t, err)
	data, _, err := e.Conn().Get("/tls")
	require.NoError(t, err)
	require.Equal(t, "over TLS", string(data))
	// The server knows the client by its certificate (x509 provider).
	out, err := c.FourLetter(context.Background(), 0, "cons")
	require.NoError(t, err)
	t.Log(out)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, c.Restart(ctx, 0))
	r.expect(t, 30*time.Second, session.Suspended, session.Reconnected)
	require.Equal(t, sid, s.SessionID())
	require.Greater(t, handshakes.Load(), before, "no new handshake on reconnect")

	e, _ = s.Current()
	data, _, err = e.Conn().Get("/tls") // the ephemeral survived with the session
	require.NoError(t, err)
	require.Equal(t, "over TLS", string(data))
}

// openErr opens a session that cannot be established and returns Open's error.
func openErr(t *testing.T, servers []string, opts ...session.Option) error {
	t.Helper()
	// Time for a TLS server just started (its JVM busy beside the others
	// these cases start) to answer a handshake, so that the error kept is
	// the server's last answer, not a handshake timed out: 3 s an attempt
	// (the default, 1 s, timed out every attempt of three cases beside six
	// busy loops), 8 s in all.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	opts = append([]session.Option{session.WithConnectTimeout(3 * time.Second)}, opts...)
	s, err := session.Open(ctx, servers, append(opts, session.WithSessionTimeout(4*time.Second))...)
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded")
	}
	require.ErrorIs(t, err, context.DeadlineExceeded)
	t.Log(err)
	return err
}

// Each misconfiguration gives an error that names the server and the cause.
// The cases run in parallel: each waits for Open to give up.
func TestTLSMisconfigurationErrors(t *testing.T) {
	noLeaks(t)
	c := zktest.Start(t, 1, zktest.WithTLS(zktest.TLSConfig{}))
	plain := zktest.Start(t, 1)
	other, err := zktest.NewCA("another CA")
	require.NoError(t, err)
	addr := c.Addr(0)
	// One handshake that succeeds first: the server's TLS stack is then
	// loaded and compiled before the cases below handshake with it at once.
	require.NoError(t, open(t, c.Servers(), session.WithConnectTimeout(5*time.Second), session.WithTLS(c.ClientTLS())).Close())

	t.Run("plaintext client, TLS port", func(t *testing.T) {
		t.Parallel()
		err := openErr(t, c.Servers())
		require.ErrorContains(t, err, "server "+addr+": no ZooKeeper answer")
		require.ErrorContains(t, err, "is it a TLS port? (use session.WithTLS)")
	})
	t.Run("TLS client, plaintext port", func(t *testing.T) {
		t.Parallel()
		err := openErr(t, plain.Servers(), session.WithTLS(c.ClientTLS()))
		require.ErrorContains(t, err, "server "+plain.Addr(0)+": TLS handshake failed")
		require.ErrorContains(t, err, "a plaintext port?")
	})
	t.Run("wrong CA", func(t *testing.T) {
		t.Parallel()
		cfg := c.ClientTLS()
		cfg.RootCAs = other.Pool()
		err := openErr(t, c.Servers(), session.WithTLS(cfg))
		require.ErrorContains(t, err, "server "+addr+": TLS handshake failed")
		var ua x509.UnknownAuthorityError
		require.ErrorAs(t, err, &ua)
		require.ErrorContains(t, err, "certificate signed by unknown authority")
	})
	t.Run("wrong server name", func(t *testing.T) {
		t.Parallel()
		cfg := c.ClientTLS()
		cfg.ServerName = "zk.example.com"
		err := openErr(t, c.Servers(), session.WithTLS(cfg))
		var he x509.HostnameError
		require.ErrorAs(t, err, &he)
		require.ErrorContains(t, err, "server "+addr+": TLS handshake failed")
	})
	t.Run("expired client certificate", func(t *testing.T) {
		t.Parallel()
		cert, err := c.CA().ExpiredClientCert("late")
		require.NoError(t, err)
		cfg := c.ClientTLS()
		cfg.Certificates = []tls.Certificate{cert}
		err = openErr(t, c.Servers(), session.WithTLS(cfg))
		require.ErrorContains(t, err, "server "+addr+": ")
		require.ErrorContains(t, err, "client certificate")
	})
	t.Run("client certificate of another CA", func(t *testing.T) {
		t.Parallel()
		cert, err := other.ClientCert("stranger")
		require.NoError(t, err)
		cfg := c.ClientTLS()
		cfg.Certificates = []tls.Certificate{cert}
		err = openErr(t, c.Servers(), session.WithTLS(cfg))
		require.ErrorContains(t, err, "server "+addr+": ")
		require.ErrorContains(t, err, "client certificate")
	})
	t.Run("no client certificate", func(t *testing.T) {
		t.Parallel()
		cfg := c.ClientTLS()
		cfg.Certificates = nil
		err := openErr(t, c.Servers(), session.WithTLS(cfg))
		require.ErrorContains(t, err, "server "+addr+": ")
		require.ErrorContains(t, err, "client certificate")
	})
	t.Run("expired server certificate", func(t *testing.T) {
		t.Parallel()
		exp := zktest.Start(t, 1, zktest.WithTLS(zktest.TLSConfig{CA: c.CA(), ExpiredServerCert: true}))
		err := openErr(t, exp.Servers(), session.WithTLS(c.ClientTLS()))
		require.ErrorContains(t, err, "server "+exp.Addr(0)+": TLS handshake failed")
		var ce x509.CertificateInvalidError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, x509.Expired, ce.Reason)
	})
	t.Run("nil config", func(t *testing.T) {
		_, err := session.Open(context.Background(), c.Servers(), session.WithTLS(nil))
		require.ErrorIs(t, err, session.ErrInvalidArgument)
	})
}

// Under TLS 1.3 the server refuses a client certificate after the client's
// handshake has completed: the refusal arrives on the first read.
func TestTLS13ClientCertificateRefused(t *testing.T) {
	noLeaks(t)
	c := zktest.Start(t, 1, zktest.WithTLS(zktest.TLSConfig{TLS13: true}))
	var version atomic.Int32
	cfg := c.ClientTLS()
	cfg.VerifyConnection = func(cs tls.ConnectionState) error { version.Store(int32(cs.Version)); return nil }
	s := open(t, c.Servers(), session.WithTLS(cfg))
	require.Equal(t, int32(tls.VersionTLS13), version.Load())
	require.NoError(t, s.Close())

	cert, err := c.CA().ExpiredClientCert("late")
	require.NoError(t, err)
	cfg = c.ClientTLS()
	cfg.Certificates = []tls.Certificate{cert}
	err = openErr(t, c.Servers(), session.WithTLS(cfg))
	require.ErrorContains(t, err, "server "+c.Addr(0)+": TLS connection refused")
	require.ErrorContains(t, err, "client certificate")
}

func TestTLSEnsembleLeaderKill(t *testing.T) {
	noLeaks(t)
	c := zktest.Start(t, 3, zktest.WithTLS(zktest.TLSConfig{}))
	// After the kill the client reconnects over TLS, once the ensemble has a
	// leader again: each handshake with a JVM on a loaded machine can
	// outlast go-zookeeper's default 1 s connect timeout (zktest's
	// TestProxyTLS saw it), so each attempt has 3 s, and the session 10 s.
	s := open(t, c.Servers(), session.WithSessionTimeout(10*time.Second),
		session.WithConnectTimeout(3*time.Second), session.WithTLS(c.ClientTLS()))
	r := record(s)
	sid := s.SessionID()
	e, _ := s.Current()
	_, err := e.Conn().Create("/tls-ensemble", nil, zk.FlagEphemeral, s.ACL())
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader, err := c.Leader(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Kill(leader))
	// The client's server may not be the leader: it then stays connected
	// (or is dropped while its follower rejoins). Either way the session
	// lives and writes work again.
	err = s.Do(ctx, func(e *session.Epoch) error {
		_, err := e.Conn().Set("/tls-ensemble", []byte("after"), -1)
		return err
	})
	require.NoError(t, err)
	require.Equal(t, sid, s.SessionID())
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.events {
		require.NotEqual(t, session.Lost, ev.State, "%v", r.events)
	}
	t.Log(r.events)
}

func TestTLSWithoutClientAuth(t *testing.T) {
	noLeaks(t)
	c := zktest.Start(t, 1, zktest.WithTLS(zktest.TLSConfig{NoClientAuth: true}))
	cfg := c.ClientTLS()
	cfg.Certificates = nil // server verification only
	s := open(t, c.Servers(), session.WithTLS(cfg))
	e, _ := s.Current()
	_, _, err := e.Conn().Exists("/")
	require.NoError(t, err)
}

// A plaintext client whose server answers with a TLS record (a TLS
// terminator's alert, say) is told so, without go-zookeeper taking the
// record's header for the length of a frame.
func TestTLSAnswerToPlaintextClient(t *testing.T) {
	noLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28}) // alert: handshake failure
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	err = openErr(t, []string{ln.Addr().String()})
	require.ErrorContains(t, err, "server "+ln.Addr().String()+": answered in TLS")
	require.ErrorContains(t, err, "(use session.WithTLS)")
}
