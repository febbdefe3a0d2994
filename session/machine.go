package session

// The session manager's state machine: go-zookeeper's events, the epochs
// they begin and end, and the silence watchdog that declares a session lost
// on the local clock. Session (session.go) is its public face.

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"
)

// onEvent runs on go-zookeeper's goroutines: while it runs, go-zookeeper
// neither reads, nor reports, nor redials. It is the state machine's one
// transition function (19 branches): every state change is read here, in
// one place, under one lock. It must not block and must never
// call the Conn: it updates state under s.mu (held briefly everywhere, never
// around a call into go-zookeeper or anything that waits), cancels contexts
// (which calls no connection; context.AfterFunc hooks run on goroutines of
// their own), queues events for listeners and messages for the logger, each
// delivered on a goroutine of its own.
func (s *Session) onEvent(h *handle, ev zk.Event) {
	if ev.Type != zk.EventSession {
		s.dispatch(ev) // a node's watch event (see WatchNode)
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
				// Reconnected once the server has synced (see resync).
				h.syncGen++
				s.syncWG.Add(1)
				go s.resync(h, h.syncGen)
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

// resync begins the Reconnected epoch of h's session once the server it
// reconnected to has synced with the ensemble's leader, unless the
// connection dropped, the session ended or the manager closed meanwhile
// (gen: the reconnection it is for). A follower may be behind what the
// ensemble has committed (a deletion, an operator's or a revocation's, not
// applied yet): ZooKeeper accepts a reconnecting session on any server that
// has seen what the client has, not what others wrote while it was away.
// After the sync, every read of the new epoch sees at least what was
// committed before the reconnection, so a node deleted while the connection
// was down never confirms a hold's resume nor a kept place in a line. It
// costs one round trip per reconnection; a sync that fails on a live
// connection is tried again (the watchdog loses the session if the server
// stays silent).
func (s *Session) resync(h *handle, gen uint64) {
	defer s.syncWG.Done()
	s.mu.Lock()
	conn := h.conn
	s.mu.Unlock()
	wait := 20 * time.Millisecond
	for {
		// The sync runs on a goroutine Close does not wait for: a request
		// that races go-zookeeper's close can block its caller for ever
		// (see handle.close).
		answer := make(chan error, 1)
		go func() { _, err := conn.Sync("/"); answer <- err }()
		var err error
		select {
		case err = <-answer:
		case <-s.closeCh:
			return
		}
		s.mu.Lock()
		if s.cur != h || s.closed || !h.up || h.syncGen != gen || s.state != Suspended {
			s.mu.Unlock()
			return
		}
		if err == nil {
			s.beginEpochLocked(Reconnected, time.Now(), "")
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.closeCh:
			t.Stop()
			return
		}
		wait = min(2*wait, time.Second)
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
	e := &Epoch{conn: s.cur.conn, tap: &s.cur.written, sid: s.cur.sid, sctx: prev.sctx, scancel: prev.scancel,
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

// clockLocked judges the current connection by how long ago the server last
// heard from the session, as far as the client can prove it: since the
// sending of the latest request the server has answered (handle.heard; not
// since the last byte received, see trackedConn.answered), on the local
// monotonic clock, whatever go-zookeeper reports (or fails to report).
// Silence for the read timeout (2/3 of the session timeout; go-zookeeper
// pings every 1/3 when idle) while the session is usable means Suspended at
// once; silence for the whole session timeout, less lossMargin, means Lost.
// It returns how long until the next judgement is due (0: none), and the
// handle whose connection must be dropped (outside s.mu): the one declared
// silent, so that go-zookeeper reconnects now instead of at its own timeout
// (a sender blocked in a write to a stalled connection delays that by up to
// another read timeout).
//
// The timer is not re-armed on each answer: when it fires early because one
// came meanwhile, it is simply set again from the last one.
func (s *Session) clockLocked(now time.Time) (next time.Duration, drop *handle) {
	h := s.cur
	if h == nil || s.closed {
		return 0, nil
	}
	silent := time.Duration(s.mono() - h.heard.Load())
	timeout := h.timeout()
	if s.state.Live() {
		read := timeout * 2 / 3
		if silent < read {
			return read - silent, nil
		}
		s.suspendLocked(now, fmt.Sprintf("no request answered for %v", silent.Round(time.Millisecond)))
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

// lossMargin is how much earlier than the session timeout, after the sending
// of the latest request answered, the manager declares the session lost.
// The server heard that request no earlier than it was sent, and expires a
// session one timeout (rounded up to its tick) after it last heard from it:
// the margin covers this side's lateness (the watchdog's timer firing late,
// the loss reaching the holds), so that a hold riding through a disconnect
// (PauseOnDisconnect) is told it is lost before the server can expire its
// session and grant it to someone else.
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
