package gopeers

import (
	"context"
	"fmt"
	"io"
	"log"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/bench"
	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
)

// ShepherdPause is shepherd with the ride-through policy
// (session.PauseOnDisconnect), for W8 only: a disconnect pauses every hold
// instead of ending it.
func ShepherdPause() Library {
	return Library{
		Name:      "shepherd-pause",
		Workloads: []string{bench.W8},
		Connect: func(context.Context, bench.Spec) (Client, error) {
			return nil, fmt.Errorf("gopeers: shepherd-pause runs W8 only")
		},
		Roll: shepherdRoll(session.PauseOnDisconnect),
	}
}

// shepherdRoll opens a shepherd session with the given disconnect policy,
// counting its losses.
func shepherdRoll(policy session.DisconnectPolicy) func(context.Context, bench.Spec, *RollStats) (RollClient, error) {
	return func(ctx context.Context, spec bench.Spec, st *RollStats) (RollClient, error) {
		s, err := session.Open(ctx, spec.Servers(), session.WithSessionTimeout(spec.SessionTimeout()),
			session.WithDisconnectPolicy(policy))
		if err != nil {
			return nil, err
		}
		s.Listen(func(ev session.Event) {
			if ev.State == session.Lost {
				st.SessionLost()
			}
		})
		return shepherdRoller{s}, nil
	}
}

type shepherdRoller struct{ s *session.Session }

func (c shepherdRoller) Close() { c.s.Close() }

// Hold: Lock; then a pause (Paused closes) is waited out at the gate (the
// hold resumes, or is lost), a loss (Lost closes) ends the hold; after a
// loss, Unlock (it only clears the value) and Lock again.
func (c shepherdRoller) Hold(ctx context.Context, p string, h int, st *RollStats) {
	m, err := mutex.New(c.s, p)
	if err != nil {
		return
	}
	for ctx.Err() == nil {
		if err := m.Lock(ctx); err != nil {
			_ = SleepCtx(ctx, 50*time.Millisecond)
			continue
		}
		st.HolderOn(h)
	held:
		for ctx.Err() == nil {
			select {
			case <-m.Paused():
				st.HolderOff(h, false)
				if err := m.Gate(ctx); err != nil {
					if ctx.Err() == nil {
						st.HolderOff(h, true)
					}
					break held
				}
				st.HolderOn(h)
			case <-m.Lost():
				st.HolderOff(h, true)
				break held
			case <-ctx.Done():
			}
		}
		uctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = m.Unlock(uctx)
		cancel()
	}
}

// Campaign: Run; OnElected's ctx ends at a loss (or, without the
// ride-through policy, at a disconnect); OnPaused/OnResumed mark a pause.
func (c shepherdRoller) Campaign(ctx context.Context, p string, i int, st *RollStats) {
	e, err := election.New(c.s, p, fmt.Sprintf("candidate-%d", i))
	if err != nil {
		return
	}
	cb := election.Callbacks{
		OnElected: func(lctx context.Context, _ election.Term) {
			st.LeaderOn(i, true)
			<-lctx.Done()
			st.LeaderOff(i, true)
		},
		OnPaused:  func() { st.LeaderOff(i, false) },
		OnResumed: func() { st.LeaderOn(i, false) },
	}
	for ctx.Err() == nil {
		if err := e.Run(ctx, cb); err != nil {
			_ = SleepCtx(ctx, 50*time.Millisecond)
		}
	}
}

// gozkRoll opens a go-zookeeper session whose state changes are reported:
// zk.Lock has no loss signal, so a lock holder's disconnect is reported as
// the loss its users would have to assume, and its reconnect as the earliest
// moment the lock could be theirs again.
func gozkRoll(ctx context.Context, spec bench.Spec, st *RollStats) (RollClient, error) {
	c := &gozkRoller{}
	c.holder.Store(-1)
	cb := func(ev zk.Event) {
		if ev.Type != zk.EventSession {
			return
		}
		h := int(c.holder.Load())
		switch ev.State {
		case zk.StateDisconnected:
			if h >= 0 && c.held.Load() {
				st.HolderOff(h, true)
			}
		case zk.StateHasSession:
			if h >= 0 && c.held.Load() {
				st.HolderOn(h)
			}
		case zk.StateExpired:
			st.SessionLost()
		}
	}
	conn, events, err := zk.Connect(spec.Servers(), spec.SessionTimeout(),
		zk.WithLogger(log.New(io.Discard, "", 0)), zk.WithEventCallback(cb))
	if err != nil {
		return nil, err
	}
	c.conn = conn
	t := time.NewTimer(15 * time.Second)
	defer t.Stop()
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				// The callback sees every event from now on; the channel,
				// unread, drops them once its buffer is full.
				return c, nil
			}
		case <-t.C:
			conn.Close()
			return nil, fmt.Errorf("gopeers: no session within 15s")
		case <-ctx.Done():
			conn.Close()
			return nil, ctx.Err()
		}
	}
}

type gozkRoller struct {
	conn   *zk.Conn
	holder atomic.Int32 // the holder index once Hold runs (-1: a candidate)
	held   atomic.Bool  // Hold's Lock returned
}

func (c *gozkRoller) Close() { c.conn.Close() }

// Hold: zk.Lock, held until the run ends (the disconnects are reported by
// the session's callback).
func (c *gozkRoller) Hold(ctx context.Context, p string, h int, st *RollStats) {
	c.holder.Store(int32(h))
	l := zk.NewLock(c.conn, p, openACL)
	for ctx.Err() == nil {
		if err := l.Lock(); err != nil {
			_ = SleepCtx(ctx, 50*time.Millisecond)
			continue
		}
		c.held.Store(true)
		st.HolderOn(h)
		<-ctx.Done()
	}
}

// Campaign: leadership as holding a zk.Lock (W4's election); a leader has
// no loss signal.
func (c *gozkRoller) Campaign(ctx context.Context, p string, i int, st *RollStats) {
	l := zk.NewLock(c.conn, p, openACL)
	for ctx.Err() == nil {
		if err := l.Lock(); err != nil {
			_ = SleepCtx(ctx, 50*time.Millisecond)
			continue
		}
		st.LeaderOn(i, true)
		<-ctx.Done()
	}
}
