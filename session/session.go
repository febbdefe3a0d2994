package session

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
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
	lisWG   sync.WaitGroup
	once    sync.Once
}

// DefaultPort is the port of a server given without one, as zkCli and
// Curator default it.
const DefaultPort = "2181"

// SplitServers parses a connect string "host:port,host:port" into a server
// list, checking each address. A host without a port gets DefaultPort.
func SplitServers(connect string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(connect, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, withPort(s))
		}
	}
	if err := checkServers(out); err != nil {
		return nil, err
	}
	return out, nil
}

// withPort adds DefaultPort to an address that has no port: "zk1",
// "127.0.0.1", "[::1]".
func withPort(s string) string {
	if _, _, err := net.SplitHostPort(s); err == nil {
		return s
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		return s + ":" + DefaultPort
	}
	if !strings.Contains(s, ":") {
		return net.JoinHostPort(s, DefaultPort)
	}
	return s // not an address: checkServers says so
}

func checkServers(servers []string) error {
	if len(servers) == 0 {
		return fmt.Errorf("%w: empty server list", ErrInvalidArgument)
	}
	for _, s := range servers {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			return fmt.Errorf("%w: server %q: want host:port", ErrInvalidArgument, s)
		}
		p, err := strconv.Atoi(port)
		if host == "" || err != nil || p < 1 || p > 65535 || strings.ContainsAny(host, "/ ") {
			return fmt.Errorf("%w: server %q: want host:port with a port in 1-65535", ErrInvalidArgument, s)
		}
	}
	return nil
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
	if o := cfg.observer; o != nil {
		s.Listen(o.SessionEvent)
	}
	s.mu.Lock()
	s.adoptLocked(h, time.Now())
	s.mu.Unlock()
	go s.run()
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

// onEvent runs on go-zookeeper's goroutines: while it runs, go-zookeeper
// neither reads, nor reports, nor redials. It must not block and must never
// call the Conn: it updates state under s.mu (held briefly everywhere, never
// around a call into go-zookeeper or anything that waits), cancels contexts
// (which calls no connection; context.AfterFunc hooks run on goroutines of
// their own), queues events for listeners and messages for the logger, each
// delivered on a goroutine of its own.
func (s *Session) onEvent(h *handle, ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	current := s.cur == h && !s.closed
	switch ev.State {
	case zk.StateHasSession:
		sid := h.helloSID.Load()
		switch {
		case h.sid == 0:
			h.sid, h.up = sid, true
			close(h.ready)
		case sid != h.sid:
			// go-zookeeper replaced an expired session by a new one on
			// the same Conn. That session is not ours to use.
			h.up = false
			if current {
				s.loseLocked(now, "server replaced the session")
			}
		default:
			h.up = true
			if current && s.state == Suspended {
				s.beginEpochLocked(Reconnected, now, "")
			}
		}
	case zk.StateDisconnected:
		h.up = false
		if current && s.state.Live() {
			s.suspendLocked(now, "disconnected from "+ev.Server)
		}
	case zk.StateExpired:
		h.up = false
		h.expired.Store(true) // before go-zookeeper's next dial: see handle.dial
		if h.sid == 0 {
			select {
			case <-h.failed:
			default:
				close(h.failed)
			}
		}
		if current && (s.state.Live() || s.state == Suspended) {
			s.loseLocked(now, "expired")
		}
	}
}

// adoptLocked makes h the current connection: a new session begins.
func (s *Session) adoptLocked(h *handle, now time.Time) {
	s.cur = h
	sctx, scancel := context.WithCancelCause(context.Background())
	s.epoch = &Epoch{sid: h.sid, sctx: sctx, scancel: scancel, shooks: &hookSet{}}
	s.beginEpochLocked(Connected, now, "")
	switch {
	case h.expired.Load():
		s.loseLocked(now, "expired")
	case !h.up:
		s.suspendLocked(now, "disconnected")
	}
}

// beginEpochLocked starts a connected stretch of the current session.
func (s *Session) beginEpochLocked(st State, now time.Time, reason string) {
	prev := s.epoch
	ctx, cancel := context.WithCancelCause(prev.sctx)
	s.epochs++
	e := &Epoch{conn: s.cur.conn, h: s.cur, sid: s.cur.sid, sctx: prev.sctx, scancel: prev.scancel,
		shooks: prev.shooks, ctx: ctx, cancel: cancel, n: s.epochs, started: now}
	s.epoch = e
	s.setStateLocked(st, now, reason)
	close(s.ready)
}

func (s *Session) suspendLocked(now time.Time, reason string) {
	s.epoch.end(fmt.Errorf("%w: %s", ErrDisconnected, reason), false) // the loss signal: synchronous
	s.ready = make(chan struct{})
	s.setStateLocked(Suspended, now, reason)
	s.kick()
}

func (s *Session) loseLocked(now time.Time, reason string) {
	s.epoch.end(fmt.Errorf("%w: %s", ErrLost, reason), true) // cancels the epoch's context too
	if s.state.Live() {
		s.ready = make(chan struct{})
	}
	s.setStateLocked(Lost, now, reason)
	if s.cur != nil {
		s.retire = append(s.retire, s.cur)
		s.cur = nil
	}
	s.kick()
}

func (s *Session) setStateLocked(st State, now time.Time, reason string) {
	ev := Event{State: st, Previous: s.state, SessionID: s.epoch.sid, Time: now, Reason: reason}
	if !s.stateAt.IsZero() {
		ev.InPrevious = now.Sub(s.stateAt)
	}
	s.state, s.stateAt = st, now
	s.logq.add(slog.LevelInfo, "session "+st.String(), "session", fmt.Sprintf("0x%x", ev.SessionID), "reason", reason)
	for l := range s.listeners {
		l.push(ev)
	}
}

func (s *Session) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run owns the session's life: it watches the current connection on the
// manager's own clock (clock), retires dead connections and establishes new
// sessions.
func (s *Session) run() {
	defer close(s.runDone)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		s.mu.Lock()
		next, drop := s.clockLocked(time.Now())
		retire := s.retire
		s.retire = nil
		st := s.state
		s.mu.Unlock()
		if drop != nil {
			drop.drop()
		}
		for _, h := range retire {
			s.connWG.Add(1)
			go func() { defer s.connWG.Done(); h.close() }()
		}
		select {
		case <-s.closeCh:
			return
		default:
		}
		if st == Lost {
			s.establish()
			continue
		}
		timer.Stop()
		if next > 0 {
			timer.Reset(next)
		}
		select {
		case <-s.closeCh:
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// clockLocked judges the current connection by how long nothing has been
// received on it, on the local monotonic clock, whatever go-zookeeper reports
// (or fails to report): silence for the read timeout (2/3 of the session
// timeout; a server answers pings every 1/3) while the session is usable means
// Suspended at once; silence for the whole session timeout means Lost. It
// returns how long until the next judgement is due (0: none), and the handle
// whose connection must be dropped (outside s.mu): the one declared silent, so
// that go-zookeeper reconnects now instead of at its own timeout (a sender
// blocked in a write to a stalled connection delays that by up to another read
// timeout).
//
// The timer is not re-armed on each read: when it fires early because bytes
// arrived meanwhile, it is simply set again from the last one.
func (s *Session) clockLocked(now time.Time) (next time.Duration, drop *handle) {
	h := s.cur
	if h == nil || s.closed {
		return 0, nil
	}
	silent := time.Duration(s.mono() - h.lastHeard.Load())
	timeout := h.timeout()
	if s.state.Live() {
		read := timeout * 2 / 3
		if silent < read {
			return read - silent, nil
		}
		s.suspendLocked(now, fmt.Sprintf("nothing received for %v", silent.Round(time.Millisecond)))
		drop = h
	}
	if s.state != Suspended {
		return 0, drop
	}
	if limit := timeout - lossMargin(timeout); silent < limit {
		return limit - silent, drop
	}
	s.loseLocked(now, "no answer from any server for the session timeout")
	return 0, drop
}

// lossMargin is how much earlier than the session timeout, after the last
// byte received, the manager declares the session lost. The server expires a
// session one timeout (rounded up to its tick) after it last heard from the
// client, and it heard last a little before the client received the answer:
// the margin covers that transit, so that a hold riding through a
// disconnect (PauseOnDisconnect) is told it is lost before the server can
// expire its session and grant it to someone else.
func lossMargin(timeout time.Duration) time.Duration { return timeout / 50 }

// establish opens a new session, with backoff, until it succeeds or the
// manager is closed.
func (s *Session) establish() {
	b := s.cfg.backoff()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*s.cfg.timeout+s.cfg.connectTimeout*time.Duration(len(s.servers)))
		go func() {
			select {
			case <-s.closeCh:
				cancel()
			case <-ctx.Done():
			}
		}()
		h, err := s.connect(ctx)
		cancel()
		if err == nil {
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				h.close()
				return
			}
			s.adoptLocked(h, time.Now())
			s.mu.Unlock()
			return
		}
		s.logq.add(slog.LevelWarn, "session: establishing a new session failed", "err", err)
		d := b.NextBackOff()
		if d < 0 {
			d = s.cfg.timeout
		}
		t := time.NewTimer(d)
		select {
		case <-s.closeCh:
			t.Stop()
			return
		case <-t.C:
		}
	}
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
// safe to call from any goroutine, including a listener.
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
