package session_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// noLeaks checks, after every cleanup of the test has run (servers stopped,
// sessions closed), that no goroutine started during the test is left.
func noLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

// recorder collects a session's events for assertions.
type recorder struct {
	mu     sync.Mutex
	events []session.Event
	ch     chan session.Event
}

func record(s *session.Session) *recorder {
	r := &recorder{ch: make(chan session.Event, 100)}
	s.Listen(func(ev session.Event) {
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.mu.Unlock()
		r.ch <- ev
	})
	return r
}

// next waits for the next event.
func (r *recorder) next(t *testing.T, d time.Duration) session.Event {
	t.Helper()
	select {
	case ev := <-r.ch:
		return ev
	case <-time.After(d):
		t.Fatalf("no session event within %v", d)
		return session.Event{}
	}
}

func (r *recorder) expect(t *testing.T, d time.Duration, states ...session.State) []session.Event {
	t.Helper()
	var got []session.Event
	for _, st := range states {
		ev := r.next(t, d)
		require.Equal(t, st, ev.State, "event %d: %v (so far %v)", len(got), ev, got)
		got = append(got, ev)
	}
	return got
}

func open(t *testing.T, servers []string, opts ...session.Option) *session.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := session.Open(ctx, servers, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOpenClose(t *testing.T) {
	noLeaks(t)
	c := zktest.Start(t, 1)
	s := open(t, c.Servers(), session.WithSessionTimeout(2*time.Second))
	require.Equal(t, session.Connected, s.State())
	require.NotZero(t, s.SessionID())
	require.Equal(t, 2*time.Second, s.Timeout())
	r := record(s)

	e, ok := s.Current()
	require.True(t, ok)
	_, err := e.Conn().Create("/eph", nil, zk.FlagEphemeral, s.ACL())
	require.NoError(t, err)

	// Close from several goroutines at once.
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() { defer wg.Done(); s.Close() }()
	}
	wg.Wait()
	<-s.Done()
	require.Equal(t, session.Closed, s.State())
	require.Error(t, e.Context().Err(), "epoch context not cancelled by Close")
	require.Error(t, e.SessionContext().Err())
	r.expect(t, time.Second, session.Closed)
	_, err = s.Wait(context.Background())
	require.ErrorIs(t, err, session.ErrClosed)
	err = s.Do(context.Background(), func(*session.Epoch) error { return nil })
	require.ErrorIs(t, err, session.ErrClosed)

	// The ephemeral node went with the session, at once.
	s2 := open(t, c.Servers())
	e2, _ := s2.Current()
	ok, _, err = e2.Conn().Exists("/eph")
	require.NoError(t, err)
	require.False(t, ok)
	s2.Close()
	<-s2.Done()
}

func TestBadInput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cases := map[string]struct {
		servers []string
		opts    []session.Option
	}{
		"empty servers":     {nil, nil},
		"no port":           {[]string{"127.0.0.1"}, nil},
		"bad port":          {[]string{"127.0.0.1:99999"}, nil},
		"port not a number": {[]string{"127.0.0.1:abc"}, nil},
		"empty host":        {[]string{":2181"}, nil},
		"chroot in address": {[]string{"127.0.0.1:2181/app"}, nil},
		"zero timeout":      {[]string{"127.0.0.1:1"}, []session.Option{session.WithSessionTimeout(0)}},
		"negative connect":  {[]string{"127.0.0.1:1"}, []session.Option{session.WithConnectTimeout(-1)}},
		"bad namespace":     {[]string{"127.0.0.1:1"}, []session.Option{session.WithNamespace("app/")}},
		"zookeeper ns":      {[]string{"127.0.0.1:1"}, []session.Option{session.WithNamespace("/zookeeper")}},
		"empty ACL":         {[]string{"127.0.0.1:1"}, []session.Option{session.WithACL(nil)}},
		"empty auth scheme": {[]string{"127.0.0.1:1"}, []session.Option{session.WithAuth("", []byte("x"))}},
		"nil backoff":       {[]string{"127.0.0.1:1"}, []session.Option{session.WithBackoff(nil)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := session.Open(ctx, tc.servers, tc.opts...)
			require.ErrorIs(t, err, session.ErrInvalidArgument)
			require.Nil(t, s)
		})
	}
	_, err := session.SplitServers("127.0.0.1:1, 127.0.0.2:2")
	require.NoError(t, err)
	_, err = session.SplitServers(" , ")
	require.ErrorIs(t, err, session.ErrInvalidArgument)
}

func TestUnreachable(t *testing.T) {
	noLeaks(t)
	// A port nothing listens on (reserved and released).
	c := zktest.Start(t, 1)
	addr := c.Addr(0)
	require.NoError(t, c.Kill(0))
	// The deadline starts now: the server's start above may take a while
	// on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	s, err := session.Open(ctx, []string{addr})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "connection refused")
	require.Nil(t, s)
}

func TestTimeoutBelowServerMinimum(t *testing.T) {
	c := zktest.Start(t, 1) // tickTime 200ms: the minimum is 400ms
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := session.Open(ctx, c.Servers(), session.WithSessionTimeout(100*time.Millisecond))
	require.ErrorIs(t, err, session.ErrTimeoutRejected)
	require.ErrorContains(t, err, "400ms")
}

func TestServerRestartKeepsSession(t *testing.T) {
	noLeaks(t)
	c := zktest.Start(t, 1)
	// A long session: a restart of the server's JVM on a loaded 2-core
	// machine can take most of 10 s, and the session must outlive it.
	s := open(t, c.Servers(), session.WithSessionTimeout(30*time.Second))
	r := record(s)
	sid := s.SessionID()
	e, _ := s.Current()
	_, err := e.Conn().Create("/eph", nil, zk.FlagEphemeral, s.ACL())
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, c.Stop(0))
	sus := r.expect(t, 10*time.Second, session.Suspended)[0]
	require.Error(t, e.Context().Err(), "the epoch's context must end at Suspended")
	require.NoError(t, e.SessionContext().Err(), "the session is not lost yet")
	require.NoError(t, c.Restart(ctx, 0))
	rec := r.expect(t, 30*time.Second, session.Reconnected)[0]
	require.Equal(t, sid, rec.SessionID)
	require.Equal(t, sid, s.SessionID())
	t.Logf("suspended for %v", rec.Time.Sub(sus.Time))

	e2, err := s.Wait(ctx)
	require.NoError(t, err)
	require.Greater(t, e2.Seq(), e.Seq())
	require.NoError(t, e2.Context().Err())
	ok, st, err := e2.Conn().Exists("/eph")
	require.NoError(t, err)
	require.True(t, ok, "ephemeral node lost across a restart within the session timeout")
	require.Equal(t, sid, st.EphemeralOwner)
}

func TestEnsembleLeaderKillKeepsSession(t *testing.T) {
	if testing.Short() {
		t.Skip("ensemble")
	}
	c := zktest.Start(t, 3)
	s := open(t, c.Servers(), session.WithSessionTimeout(4*time.Second))
	sid := s.SessionID()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader, err := c.Leader(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Kill(leader))
	// Whatever the client saw (it may not even have been connected to the
	// killed node), the same session must be usable for writes.
	err = s.Do(ctx, func(e *session.Epoch) error {
		_, err := e.Conn().Create("/after-kill", nil, 0, s.ACL())
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	})
	require.NoError(t, err)
	require.Equal(t, sid, s.SessionID())
	require.NotEqual(t, session.Lost, s.State())
}

func TestNamespaceAndAuth(t *testing.T) {
	c := zktest.Start(t, 1)
	acl := zk.DigestACL(zk.PermAll, "alice", "secret")
	// A long session (the default is 10 s): it must outlive the restart
	// below, which on a loaded 2-core machine took longer once (Lost).
	s := open(t, c.Servers(), session.WithNamespace("/app/ns"), session.WithSessionTimeout(30*time.Second),
		session.WithAuth("digest", []byte("alice:secret")), session.WithACL(acl))
	require.Equal(t, "/app/ns/x", s.Path("/x"))
	require.Equal(t, "/app/ns", s.Namespace())
	e, _ := s.Current()
	_, err := e.Conn().Create("/secret", []byte("v"), 0, s.ACL())
	require.NoError(t, err)
	_, _, err = e.Conn().Get("/secret")
	require.NoError(t, err, "authenticated session cannot read its own node")

	// Another identity is refused.
	other := open(t, c.Servers(), session.WithAuth("digest", []byte("mallory:guess")))
	oe, _ := other.Current()
	_, _, err = oe.Conn().Get("/secret")
	require.ErrorIs(t, err, zk.ErrNoAuth)

	// Credentials are re-sent after a reconnect.
	r := record(s)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, c.Restart(ctx, 0))
	r.expect(t, 30*time.Second, session.Suspended, session.Reconnected)
	err = s.Do(ctx, func(e *session.Epoch) error {
		_, _, err := e.Conn().Get("/secret")
		return err
	})
	require.NoError(t, err, "credentials not re-sent after reconnect")
}

func TestListenerStop(t *testing.T) {
	c := zktest.Start(t, 1)
	s := open(t, c.Servers())
	var mu sync.Mutex
	n := 0
	stop := s.Listen(func(session.Event) { mu.Lock(); n++; mu.Unlock() })
	stop()
	stop()
	r := record(s)
	s.Close()
	r.expect(t, 5*time.Second, session.Closed)
	<-s.Done()
	mu.Lock()
	defer mu.Unlock()
	require.Zero(t, n)
}

// A nil option is an error from Open, never a panic.
func TestNilOption(t *testing.T) {
	s, err := session.Open(context.Background(), []string{"127.0.0.1:1"}, session.WithSessionTimeout(time.Second), nil)
	require.ErrorIs(t, err, session.ErrInvalidArgument)
	require.Nil(t, s)
}
