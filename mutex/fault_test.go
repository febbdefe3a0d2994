package mutex_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// proxied opens a session through its own fault proxy.
func proxied(t *testing.T, timeout time.Duration) (*session.Session, *zktest.Proxy) {
	t.Helper()
	p, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return open(t, p.Addrs(), session.WithSessionTimeout(timeout)), p
}

// contend runs holders that take the lock in turn until stop, recording every
// grant in x; each holder holds until its lock is lost or a short time passes.
func contend(t *testing.T, x *exclusion, ms map[string]*mutex.Mutex, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for id, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10000; i++ {
				ctx, cancel := context.WithCancel(context.Background())
				go func() {
					select {
					case <-stop:
					case <-ctx.Done():
					}
					cancel()
				}()
				err := m.Lock(ctx)
				if err != nil {
					cancel()
					return
				}
				x.granted(id, m.Lost())
				select {
				case <-m.Lost():
				case <-time.After(30 * time.Millisecond):
				case <-stop:
				}
				x.released(id)
				_ = m.Unlock(context.Background())
				cancel()
			}
		}()
	}
	return &wg
}

// TestExpiredHolderIsToldFirst: the holder's session is ended by the server,
// again and again; its Lost() must close before another session is granted.
func TestExpiredHolderIsToldFirst(t *testing.T) {
	for _, fair := range []bool{true, false} {
		t.Run(fmt.Sprint("fair=", fair), func(t *testing.T) {
			var opts []mutex.Option
			if !fair {
				opts = append(opts, mutex.NonFair())
			}
			path := uniquePath(t)
			ctx := ctxT(t, 60*time.Second)
			ms := map[string]*mutex.Mutex{}
			sessions := map[string]*session.Session{}
			proxies := map[string]*zktest.Proxy{}
			for _, id := range []string{"a", "b", "c"} {
				s, p := proxied(t, 2*time.Second)
				m, err := mutex.New(s, path, opts...)
				require.NoError(t, err)
				ms[id], sessions[id], proxies[id] = m, s, p
			}
			var x exclusion
			stop := make(chan struct{})
			wg := contend(t, &x, ms, stop)
			defer func() { close(stop); wg.Wait(); x.check(t) }()
			expired := 0
			for round := 0; round < 40 && expired < 6; round++ {
				// Find the current holder and end its session from elsewhere.
				var holder string
				require.Eventually(t, func() bool {
					x.mu.Lock()
					defer x.mu.Unlock()
					holder = x.holder
					return holder != ""
				}, 10*time.Second, time.Millisecond)
				sid := sessions[holder].SessionID()
				if !ms[holder].IsHeld() {
					continue
				}
				if err := proxies[holder].ExpireSession(ctx, sid); err != nil {
					t.Logf("expire %s: %v", holder, err)
					continue
				}
				expired++
				// Wait for the holder's next session before the next round.
				require.Eventually(t, func() bool {
					id := sessions[holder].SessionID()
					return id != 0 && id != sid
				}, 10*time.Second, 5*time.Millisecond)
			}
			require.GreaterOrEqual(t, expired, 4)
			x.mu.Lock()
			t.Logf("%d expiries, %d grants", expired, x.grants)
			x.mu.Unlock()
		})
	}
}

// TestStalledHolderIsToldFirst: the holder's network is stalled past the
// session timeout; it is told (Suspended) long before the server expires it
// and grants the lock to the waiter.
func TestStalledHolderIsToldFirst(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 60*time.Second)
	s, p := proxied(t, 1500*time.Millisecond)
	holder, _ := mutex.New(s, path)
	waiter, _ := mutex.New(open(t, zk.Servers()), path)
	for round := 0; round < 3; round++ {
		require.NoError(t, holder.Lock(ctx))
		lost := holder.Lost()
		var lostAt time.Time
		lostSeen := make(chan struct{})
		go func() { <-lost; lostAt = time.Now(); close(lostSeen) }()
		got := make(chan error, 1)
		go func() { got <- waiter.Lock(ctx) }()
		stalled := time.Now()
		p.Stall()
		require.NoError(t, <-got)
		grantedAt := time.Now()
		<-lostSeen
		require.True(t, lostAt.Before(grantedAt), "the holder must be told before the waiter is granted")
		t.Logf("round %d: holder told %v after the stall, waiter granted %v after it (margin %v)", round,
			lostAt.Sub(stalled).Round(time.Millisecond), grantedAt.Sub(stalled).Round(time.Millisecond),
			grantedAt.Sub(lostAt).Round(time.Millisecond))
		require.ErrorIs(t, holder.Unlock(ctx), mutex.ErrLost, "the hold is over")
		p.Heal()
		require.NoError(t, waiter.Unlock(ctx))
	}
}

// TestWaiterKeepsPlace: a waiter whose connection drops (the session
// survives) keeps its node and its place.
func TestWaiterKeepsPlace(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	hs := open(t, zk.Servers())
	holder, _ := mutex.New(hs, path)
	require.NoError(t, holder.Lock(ctx))
	ws, p := proxied(t, 4*time.Second)
	waiter, _ := mutex.New(ws, path)
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctx) }()
	require.Eventually(t, func() bool { return len(children(t, hs, path)) == 2 }, 5*time.Second, 5*time.Millisecond)
	before := children(t, hs, path)
	sid := ws.SessionID()
	p.Sever()
	require.Eventually(t, func() bool { return ws.State() == session.Reconnected }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, sid, ws.SessionID())
	require.ElementsMatch(t, before, children(t, hs, path), "the waiter kept its node")
	late, _ := mutex.New(open(t, zk.Servers()), path)
	lateGot := make(chan error, 1)
	go func() { lateGot <- late.Lock(ctx) }()
	require.Eventually(t, func() bool { return len(children(t, hs, path)) == 3 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, holder.Unlock(ctx))
	require.NoError(t, <-got, "the waiter is next")
	select {
	case <-lateGot:
		t.Fatal("the late waiter jumped the queue")
	default:
	}
	require.NoError(t, waiter.Unlock(ctx))
	require.NoError(t, <-lateGot)
	require.NoError(t, late.Unlock(ctx))
}

// TestLostCreateAnswerLeavesNoOrphan: the create reaches the server but its
// answer is lost; the client finds its node by guid instead of creating a
// second one, and a waiter that gives up leaves nothing behind.
func TestLostCreateAnswerLeavesNoOrphan(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	obs := open(t, zk.Servers())
	for _, giveUp := range []bool{false, true} {
		s, p := proxied(t, 4*time.Second)
		m, _ := mutex.New(s, path)
		// Make sure the path exists, so the create is the first request.
		require.NoError(t, m.Lock(ctx))
		require.NoError(t, m.Unlock(ctx))
		p.MuteReplies()
		lctx, cancel := context.WithCancel(ctx)
		got := make(chan error, 1)
		go func() { got <- m.Lock(lctx) }()
		// The create lands on the server; its answer does not come back.
		require.Eventually(t, func() bool { return len(children(t, obs, path)) == 1 }, 5*time.Second, 2*time.Millisecond)
		if giveUp {
			cancel()
			require.ErrorIs(t, <-got, context.Canceled)
			p.Heal()
			require.Eventually(t, func() bool { return len(children(t, obs, path)) == 0 }, 10*time.Second, 5*time.Millisecond,
				"an abandoned create is found and removed")
		} else {
			p.Heal()
			require.NoError(t, <-got)
			require.Len(t, children(t, obs, path), 1, "one node: the lost answer's node was adopted")
			require.NoError(t, m.Unlock(ctx))
			require.Eventually(t, func() bool { return len(children(t, obs, path)) == 0 }, 5*time.Second, 5*time.Millisecond)
		}
		cancel()
	}
}

// TestLossIsLogged: a lost hold is logged at Warn with its path, node and
// session; nothing is logged by default.
func TestLossIsLogged(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	p, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	s := open(t, p.Addrs(), session.WithSessionTimeout(2*time.Second), session.WithLogger(log))
	path := uniquePath(t)
	m, _ := mutex.New(s, path)
	ctx := ctxT(t, 30*time.Second)
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, p.ExpireSession(ctx, s.SessionID()))
	require.Eventually(t, func() bool { return strings.Contains(buf.String(), "mutex: hold lost") }, 10*time.Second, 5*time.Millisecond)
	require.Contains(t, buf.String(), "path="+s.Path(path))
	require.Contains(t, buf.String(), "session=0x")
	require.ErrorIs(t, m.Unlock(ctx), mutex.ErrLost)
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
