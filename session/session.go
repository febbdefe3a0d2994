package session

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Session is a managed ZooKeeper session. It is safe for concurrent use.
type Session struct {
	cfg     config
	servers []string
	log     *slog.Logger
	logq    *logQueue // the manager's own messages (never written on go-zookeeper's goroutines)
	base    time.Time // the monotonic clock's origin

	mu        sync.Mutex
	state     State
	stateAt   time.Time // when state began
	cur       *handle   // the connection of the current session; nil while establishing
	epoch     *Epoch    // the current (or last) epoch
	ready     chan struct{}
	listeners map[*listener]struct{}
	closed    bool
	retire    []*handle // connections the run loop must close
	epochs    uint64    // epochs begun so far

	wake    chan struct{}
	closeCh chan struct{}
	runDone chan struct{}
	done    chan struct{}
	connWG  sync.WaitGroup
	syncWG  sync.WaitGroup // resync goroutines
	nodes   nodeWatches    // WatchNode's registrations
	lisWG   sync.WaitGroup
	once    sync.Once
}

// Open establishes a ZooKeeper session with one of servers ("host:port") and
// returns once it is usable (credentials sent), or fails when ctx ends, the
// input is invalid, the server rejects the session timeout or the credentials.
// Nothing is left running after a failed Open.
func Open(ctx context.Context, servers []string, opts ...Option) (*Session, error) {
	cfg := config{
		timeout:        DefaultSessionTimeout,
		connectTimeout: DefaultConnectTimeout,
		backoff:        defaultBackoff,
	}
	for _, o := range opts {
		if o == nil {
			cfg.setErr(fmt.Errorf("%w: nil option", ErrInvalidArgument))
			continue
		}
		o(&cfg)
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	if cfg.acl == nil {
		cfg.acl = zk.WorldACL(zk.PermAll)
		if cfg.authenticated() {
			cfg.acl = CreatorACL()
		}
	}
	cfg.namespace = cfg.chroot + cfg.namespace
	if err := checkServers(servers); err != nil {
		return nil, err
	}
	if cfg.log == nil {
		cfg.log = slog.New(slog.DiscardHandler)
	}
	s := &Session{
		cfg:       cfg,
		servers:   append([]string(nil), servers...),
		log:       cfg.log,
		base:      time.Now(),
		ready:     make(chan struct{}),
		listeners: make(map[*listener]struct{}),
		wake:      make(chan struct{}, 1),
		closeCh:   make(chan struct{}),
		runDone:   make(chan struct{}),
		done:      make(chan struct{}),
		logq:      newLogQueue(cfg.log),
	}
	h, err := s.connect(ctx)
	if err != nil {
		close(s.runDone)
		s.logq.close()
		<-s.logq.done
		close(s.done)
		return nil, err
	}
	// The observer hears the first state before Open returns: a metric
	// gathered right after Open shows the session Connected.
	var first chan struct{}
	if o := cfg.observer; o != nil {
		first = make(chan struct{})
		var once sync.Once
		s.Listen(func(ev Event) {
			o.SessionEvent(ev)
			once.Do(func() { close(first) })
		})
	}
	s.mu.Lock()
	s.adoptLocked(h, time.Now())
	s.mu.Unlock()
	go s.run()
	if first != nil {
		select {
		case <-first:
		case <-ctx.Done(): // a slow observer; the session is open all the same
		}
	}
	return s, nil
}

func (s *Session) mono() int64 { return int64(time.Since(s.base)) }

// connect opens a new *zk.Conn and waits for its session (or ctx's end).
func (s *Session) connect(ctx context.Context) (*handle, error) {
	h := &handle{s: s, ready: make(chan struct{}), failed: make(chan struct{})}
	conn, events, err := zk.Connect(s.servers, s.cfg.timeout,
		zk.WithDialer(h.dial),
		zk.WithHostProvider(&hostProvider{h: h}),
		zk.WithEventCallback(func(ev zk.Event) { s.onEvent(h, ev) }),
		zk.WithLogger(zkLogger{s.logq}),
		zk.WithLogInfo(false),
	)
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	s.mu.Lock()
	h.conn, h.events = conn, events
	s.mu.Unlock()
	fail := func(err error) (*handle, error) {
		h.close()
		return nil, err
	}
	select {
	case <-h.ready:
	case <-h.failed:
		return fail(fmt.Errorf("session: the new session expired at once"))
	case <-s.closeCh:
		return fail(ErrClosed)
	case <-ctx.Done():
		// The last error with each server, wrapped (errors.As finds an
		// x509 error, say), then ctx's.
		format, args := "session: no session with %s (no server answered): %w", []any{strings.Join(s.servers, ",")}
		if errs := h.lastErrs(s.servers); len(errs) > 0 {
			format = "session: no session with %s (" + strings.Repeat("%w; ", len(errs)-1) + "%w): %w"
			for _, e := range errs {
				args = append(args, e)
			}
		}
		return fail(fmt.Errorf(format, append(args, ctx.Err())...))
	}
	if got := h.timeout(); got > s.cfg.timeout {
		return fail(fmt.Errorf("%w: asked for %v, the server's minimum is %v (2 ticks)",
			ErrTimeoutRejected, s.cfg.timeout, got))
	} else if got < s.cfg.timeout {
		s.logq.add(slog.LevelInfo, "session timeout lowered by the server", "asked", s.cfg.timeout, "granted", got)
	}
	for _, a := range s.cfg.auth {
		err := call(ctx, func() error { return conn.AddAuth(a.scheme, a.cred) })
		if err != nil {
			return fail(fmt.Errorf("%w (scheme %q): %w", ErrAuthFailed, a.scheme, err))
		}
	}
	return h, nil
}

// State returns the current state.
func (s *Session) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// SessionID returns the ID of the current (or last) ZooKeeper session.
func (s *Session) SessionID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch.sid
}

// Timeout returns the session timeout the server granted.
func (s *Session) Timeout() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		return s.cur.timeout()
	}
	return s.cfg.timeout
}

// DisconnectPolicy is what a lost connection does to the holds of the
// session's recipes, unless a recipe value says otherwise.
func (s *Session) DisconnectPolicy() DisconnectPolicy {
	if s.cfg.policy == 0 {
		return StopOnDisconnect
	}
	return s.cfg.policy
}

// Namespace returns the namespace prefix ("" for none).
func (s *Session) Namespace() string { return s.cfg.namespace }

// Path returns p under the session's namespace.
func (s *Session) Path(p string) string { return s.cfg.namespace + p }

// ACL returns a copy of the ACL of the nodes the recipes create: WithACL's,
// or by default CreatorACL for a session with credentials or a client
// certificate, zk.WorldACL(zk.PermAll) for one without (see WithACL: its
// consequences for who may join a path).
func (s *Session) ACL() []zk.ACL { return append([]zk.ACL(nil), s.cfg.acl...) }

// Logger returns the session's logger (never nil).
func (s *Session) Logger() *slog.Logger { return s.log }

// Done is closed once Close has finished: the session is closed on the server,
// every goroutine of the manager has ended, and every listener has been given
// Closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Current returns the current epoch and true while the session is usable
// (Connected or Reconnected).
func (s *Session) Current() (*Epoch, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.state.Live() {
		return nil, false
	}
	return s.epoch, true
}

// StateSince returns the current state and when it began.
func (s *Session) StateSince() (State, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.stateAt
}

// Wait returns the current epoch once the session is usable. It fails with
// ErrClosed once the manager is closed, or ctx.Err().
func (s *Session) Wait(ctx context.Context) (*Epoch, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		if s.state.Live() {
			e := s.epoch
			s.mu.Unlock()
			return e, nil
		}
		ready := s.ready
		s.mu.Unlock()
		select {
		case <-ready:
		case <-s.closeCh:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Close closes the ZooKeeper session (the server deletes its ephemeral nodes at
// once), stops every goroutine of the manager and reports Closed to listeners.
// Holds are signalled lost before the session is closed. It is idempotent and
// safe to call from any goroutine, including a listener. It waits for
// go-zookeeper's connection goroutine to end for at most the session timeout
// plus twice the connect timeout (go-zookeeper v1.0.4 can block it for ever
// when a request races the close): past that it logs a warning and returns.
func (s *Session) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.epoch.end(ErrClosed, true)
		if s.state.Live() {
			s.ready = make(chan struct{})
		}
		cur := s.cur
		s.cur = nil
		s.mu.Unlock()
		close(s.closeCh)
		<-s.runDone
		if cur != nil {
			cur.close()
		}
		s.connWG.Wait()
		s.syncWG.Wait()
		s.mu.Lock()
		s.setStateLocked(Closed, time.Now(), "closed by the application")
		for l := range s.listeners {
			l.end()
			delete(s.listeners, l)
		}
		s.mu.Unlock()
		s.logq.close()
		go func() {
			s.lisWG.Wait()
			<-s.logq.done
			close(s.done)
		}()
	})
	return nil
}

// call runs fn, returning early when ctx ends (fn's request then finishes or
// fails on its own when its connection ends): go-zookeeper has no per-request
// timeout.
func call(ctx context.Context, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- fn() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
