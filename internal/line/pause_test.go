package line_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// The ride-through policy (session.PauseOnDisconnect), against real servers.
// See hold/pause.go for the mechanism and why it is safe.

// pausable is what every recipe's hold offers.
type pausable interface {
	Lost() <-chan struct{}
	Paused() <-chan struct{}
	Gate(context.Context) error
	Context() context.Context
}

// waitClosed fails the test unless ch closes within d.
func waitClosed(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: not within %v", what, d)
	}
}

var pause = session.WithDisconnectPolicy(session.PauseOnDisconnect)

// TestPauseRollingRestart: every server of a 3-node ensemble is stopped for a
// second and started again, in turn (the ZooKeeper leader among them), while
// 3 lock holders, a semaphore of 2 with 4 clients and 3 election candidates
// work, each on its own session. No session is lost. With the ride-through
// policy no hold is lost and leadership never changes, though every session
// is disconnected at least once (so holds pause and resume); with the
// default, every lock holder loses its lock at least once.
func TestPauseRollingRestart(t *testing.T) {
	t.Parallel() // its own paths, sessions and proxies
	c := zktest.Start(t, 3)
	for _, policy := range []session.DisconnectPolicy{session.PauseOnDisconnect, session.StopOnDisconnect} {
		t.Run(policy.String(), func(t *testing.T) { rollingRestart(t, c, policy) })
	}
}

type rollCounts struct {
	lost, paused, resumed, elected, leaders, sessionsLost atomic.Int64
}

func rollingRestart(t *testing.T, c *zktest.Cluster, policy session.DisconnectPolicy) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := testutil.UniquePath(t, "pause-roll")
	var n rollCounts
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	openOne := func() *session.Session {
		// 20 s: the restarts' disconnects must not lose a session, and on a
		// loaded 2-core machine (load 14) three restarting JVMs took longer
		// than 8 s to take the reconnections of the default policy's run.
		s := testutil.Open(t, c.Servers(), session.WithSessionTimeout(20*time.Second), session.WithDisconnectPolicy(policy))
		s.Listen(func(ev session.Event) {
			if ev.State == session.Lost {
				n.sessionsLost.Add(1)
			}
		})
		return s
	}
	// hold keeps a hold until ctx ends, counting its pauses, resumes and
	// losses; after a loss it acquires again.
	var held atomic.Int64
	hold := func(acquire func(context.Context) (pausable, func(), error)) {
		defer wg.Done()
		for i := 0; i < 100 && ctx.Err() == nil; i++ {
			h, release, err := acquire(ctx)
			if err != nil {
				return
			}
			held.Add(1)
			for gone := false; !gone; {
				select {
				case <-h.Paused():
					n.paused.Add(1)
					if h.Gate(ctx) == nil {
						n.resumed.Add(1)
					}
				case <-h.Lost():
					n.lost.Add(1)
					gone = true
				case <-ctx.Done():
					gone = true
				}
			}
			held.Add(-1)
			release()
		}
	}
	for i := 0; i < 3; i++ {
		m, err := mutex.New(openOne(), fmt.Sprintf("%s/lock-%d", base, i))
		require.NoError(t, err)
		wg.Add(1)
		go hold(func(ctx context.Context) (pausable, func(), error) {
			err := m.Lock(ctx)
			return m, func() { _ = m.Unlock(context.Background()) }, err
		})
	}
	for i := 0; i < 4; i++ {
		sem, err := semaphore.New(openOne(), base+"/sem", 2)
		require.NoError(t, err)
		wg.Add(1)
		go hold(func(ctx context.Context) (pausable, func(), error) {
			l, err := sem.Acquire(ctx)
			if err != nil {
				return nil, nil, err
			}
			return l, func() { _ = l.Release(context.Background()) }, nil
		})
	}
	for i := 0; i < 3; i++ {
		e, err := election.New(openOne(), base+"/leader", fmt.Sprint("c", i))
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = e.Run(ctx, election.Callbacks{
				OnElected: func(ctx context.Context, _ election.Term) { n.elected.Add(1); <-ctx.Done() },
				OnPaused:  func() { n.paused.Add(1) },
				OnResumed: func() { n.resumed.Add(1) },
				OnLeader:  func(election.Leader) { n.leaders.Add(1) },
			})
		}()
	}
	require.Eventually(t, func() bool { return held.Load() == 5 && n.elected.Load() == 1 }, 30*time.Second,
		10*time.Millisecond, "3 locks and 2 leases held, and a leader")

	for i := 0; i < c.Size(); i++ {
		require.NoError(t, c.Stop(i))
		time.Sleep(time.Second) // the fault: server i down for a second
		require.NoError(t, c.Restart(ctx, i))
		require.NoError(t, c.WaitServing(ctx))
	}
	settled := func() bool {
		return held.Load() == 5 && n.paused.Load() == n.resumed.Load()+n.lost.Load()
	}
	if policy == session.StopOnDisconnect {
		settled = func() bool { return held.Load() == 5 }
	}
	require.Eventually(t, settled, 30*time.Second, 10*time.Millisecond, "holds settled after the restarts")
	t.Logf("%v: holds lost %d, pauses %d, resumes %d, elections %d, leaders seen %d, sessions lost %d", policy,
		n.lost.Load(), n.paused.Load(), n.resumed.Load(), n.elected.Load(), n.leaders.Load(), n.sessionsLost.Load())
	require.Zero(t, n.sessionsLost.Load(), "a session was lost: the restarts were too slow for the test")
	if policy == session.PauseOnDisconnect {
		require.Zero(t, n.lost.Load(), "holds lost")
		require.EqualValues(t, 1, n.elected.Load(), "leadership changed")
		require.EqualValues(t, 3, n.leaders.Load(), "a candidate saw the leader change")
		require.Positive(t, n.paused.Load(), "no hold paused: the restarts disconnected nobody")
		require.Equal(t, n.paused.Load(), n.resumed.Load(), "every pause resumed")
	} else {
		require.GreaterOrEqual(t, n.lost.Load(), int64(3), "every lock holder is disconnected at least once")
	}
}

// TestPausePartitionLost: a holder partitioned from ZooKeeper for longer
// than its session timeout is paused, then lost by its own clock, never
// resumed; the waiter on another session is granted only after the loss.
func TestPausePartitionLost(t *testing.T) {
	t.Parallel() // its own paths, sessions and proxies
	path := testutil.UniquePath(t, "pause-partition")
	ctx := testutil.Ctx(t, 60*time.Second)
	hs, p := testutil.Proxied(t, zk, 2*time.Second, pause)
	var reason atomic.Value
	hs.Listen(func(ev session.Event) {
		if ev.State == session.Lost {
			reason.CompareAndSwap(nil, ev.Reason)
		}
	})
	holder, err := mutex.New(hs, path)
	require.NoError(t, err)
	require.NoError(t, holder.Lock(ctx))
	h := holder.Hold()
	waiter, err := mutex.New(testutil.Open(t, zk.Servers()), path)
	require.NoError(t, err)
	grantedAfterLoss := make(chan bool, 1)
	go func() {
		if waiter.Lock(ctx) == nil {
			grantedAfterLoss <- testutil.IsClosed(h.Lost())
			_ = waiter.Unlock(context.Background())
		}
	}()

	p.Stall()
	stalled := time.Now()
	waitClosed(t, h.Paused(), 5*time.Second, "paused")
	pausedAt := time.Since(stalled)
	require.False(t, testutil.IsClosed(h.Lost()), "lost at the pause")
	require.NoError(t, h.Context().Err(), "a pause ends the hold's context")
	waitClosed(t, h.Lost(), 10*time.Second, "lost")
	t.Logf("paused %v and lost %v after the stall began (session timeout %v)", pausedAt, time.Since(stalled), hs.Timeout())
	require.Eventually(t, func() bool { return reason.Load() != nil }, 5*time.Second, time.Millisecond, "no Lost event")
	require.Contains(t, reason.Load(), "no answer", "the loss was not the local clock's")
	select {
	case after := <-grantedAfterLoss:
		require.True(t, after, "the waiter was granted before the holder was told")
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter was never granted")
	}
	p.Heal()
	require.ErrorIs(t, h.Gate(ctx), line.ErrLost, "a lost hold resumed")
	require.ErrorIs(t, h.Validate(ctx), line.ErrLost)
}

// TestPauseExpiredElsewhere: a paused holder whose session the server ends
// meanwhile (a frozen process, a partition the server judges first): another
// client is granted, and the paused holder never resumes: it is lost once it
// hears of the expiry.
func TestPauseExpiredElsewhere(t *testing.T) {
	t.Parallel() // its own paths, sessions and proxies
	for _, fair := range []bool{true, false} {
		t.Run(fmt.Sprint("fair=", fair), func(t *testing.T) {
			var opts []mutex.Option
			if !fair {
				opts = append(opts, mutex.NonFair())
			}
			path := testutil.UniquePath(t, "pause-expired")
			ctx := testutil.Ctx(t, 60*time.Second)
			// The sessions' log is shown if the test fails (seen once in
			// make test: the holder not paused within 5 s of the sever).
			hs, p := testutil.Proxied(t, zk, 8*time.Second, pause, session.WithLogger(testutil.LogOnFailure(t, "side", "holder")))
			holder, err := mutex.New(hs, path, opts...)
			require.NoError(t, err)
			require.NoError(t, holder.Lock(ctx))
			h := holder.Hold()
			waiter, err := mutex.New(testutil.Open(t, zk.Servers(), session.WithLogger(testutil.LogOnFailure(t, "side", "waiter"))), path, opts...)
			require.NoError(t, err)
			granted := make(chan struct{})
			go func() {
				if waiter.Lock(ctx) == nil {
					close(granted)
				}
			}()
			p.Stall()
			p.Sever() // the connection drops at once: paused without waiting for a timeout
			waitClosed(t, h.Paused(), 5*time.Second, "paused")
			cred, ok := p.Credentials(h.SessionID())
			require.True(t, ok)
			require.NoError(t, zktest.ExpireSession(ctx, zk.Servers(), cred))
			waitClosed(t, granted, 10*time.Second, "the waiter granted after the expiry")
			require.True(t, h.IsPaused(), "the holder is paused, not acting, while the other holds")
			p.Heal()
			waitClosed(t, h.Lost(), 10*time.Second, "lost once the expiry is heard")
			require.ErrorIs(t, h.Gate(ctx), line.ErrLost, "the expired hold resumed")
			require.NoError(t, waiter.Unlock(ctx))
		})
	}
}

// TestPauseFencedWritesWait: a fenced write made while the hold is paused is
// not sent: one whose ctx ends during the pause never reaches the server,
// one that waits lands after the resume.
func TestPauseFencedWritesWait(t *testing.T) {
	t.Parallel() // its own paths, sessions and proxies
	path := testutil.UniquePath(t, "pause-fenced")
	ctx := testutil.Ctx(t, 60*time.Second)
	hs, p := testutil.Proxied(t, zk, 8*time.Second, pause)
	m, err := mutex.New(hs, path+"/lock")
	require.NoError(t, err)
	require.NoError(t, fence.Ensure(ctx, hs, path+"/state", nil))
	require.NoError(t, m.Lock(ctx))
	ep, err := hs.Wait(ctx)
	require.NoError(t, err)

	p.Stall()
	p.Sever()
	waitClosed(t, m.Paused(), 5*time.Second, "paused")
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = m.Fenced(short, fence.Set(path+"/state", []byte("short"), fence.AnyVersion))
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "a fenced write during a pause")
	waited := make(chan error, 1)
	go func() {
		_, err := m.Fenced(ctx, fence.Set(path+"/state", []byte("waited"), fence.AnyVersion))
		waited <- err
	}()
	require.Never(t, func() bool { return len(waited) > 0 }, 300*time.Millisecond, 10*time.Millisecond,
		"a fenced write went on during the pause")
	p.Heal()
	require.NoError(t, m.Gate(ctx), "resumed")
	select {
	case err := <-waited:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting fenced write never landed")
	}
	require.False(t, testutil.IsClosed(m.Lost()))
	cur, err := hs.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, ep.SessionID(), cur.SessionID())
	data, st, err := cur.Conn().Get(hs.Path(path + "/state"))
	require.NoError(t, err)
	require.Equal(t, "waited", string(data))
	require.EqualValues(t, 1, st.Version, "only the write that waited landed")
	require.NoError(t, m.Unlock(ctx))
}

// TestHoldDeletedFromOutside: a hold riding through disconnects whose node
// someone else deletes (an operator, another principal) is lost at once,
// held or paused; a paused one never resumes.
func TestHoldDeletedFromOutside(t *testing.T) {
	t.Parallel() // its own paths, sessions and proxies
	type grant struct {
		h       pausable
		node    string
		release func()
	}
	recipes := map[string]func(t *testing.T, s *session.Session, path string) grant{
		"mutex": func(t *testing.T, s *session.Session, path string) grant {
			m, err := mutex.New(s, path)
			require.NoError(t, err)
			require.NoError(t, m.Lock(testutil.Ctx(t, 10*time.Second)))
			return grant{m, m.Node(), func() { _ = m.Unlock(context.Background()) }}
		},
		"mutex-nonfair": func(t *testing.T, s *session.Session, path string) grant {
			m, err := mutex.New(s, path, mutex.NonFair())
			require.NoError(t, err)
			require.NoError(t, m.Lock(testutil.Ctx(t, 10*time.Second)))
			return grant{m, m.Node(), func() { _ = m.Unlock(context.Background()) }}
		},
		"semaphore": func(t *testing.T, s *session.Session, path string) grant {
			sem, err := semaphore.New(s, path, 2)
			require.NoError(t, err)
			l, err := sem.Acquire(testutil.Ctx(t, 10*time.Second))
			require.NoError(t, err)
			return grant{l, l.Nodes()[0], func() { _ = l.Release(context.Background()) }}
		},
		"election": func(t *testing.T, s *session.Session, path string) grant {
			e, err := election.New(s, path, "a")
			require.NoError(t, err)
			ctx := testutil.Ctx(t, 10*time.Second)
			l, err := e.Campaign(ctx)
			require.NoError(t, err)
			ldr, err := e.Leader(ctx)
			require.NoError(t, err)
			return grant{l, ldr.Node, func() { _ = l.Resign(context.Background()) }}
		},
	}
	other := testutil.Open(t, zk.Servers())
	remove := func(t *testing.T, node string) time.Time {
		ep, err := other.Wait(testutil.Ctx(t, 10*time.Second))
		require.NoError(t, err)
		at := time.Now()
		require.NoError(t, ep.Conn().Delete(node, -1))
		return at
	}
	for name, acquire := range recipes {
		{
			t.Run(name+"/held", func(t *testing.T) {
				s := testutil.Open(t, zk.Servers(), pause)
				g := acquire(t, s, testutil.UniquePath(t, "deleted"))
				defer g.release()
				// The own-node watch is set just after the grant: give it
				// the moment it takes (one round trip) before deleting.
				requireWatched(t, s, g.node)
				at := remove(t, g.node)
				waitClosed(t, g.h.Lost(), 5*time.Second, "lost after the deletion")
				t.Logf("told %v after the delete was sent", time.Since(at))
				require.Error(t, g.h.Context().Err())
			})
		}
		t.Run(name+"/paused", func(t *testing.T) {
			s, p := testutil.Proxied(t, zk, 8*time.Second, pause)
			g := acquire(t, s, testutil.UniquePath(t, "deleted"))
			defer g.release()
			requireWatched(t, s, g.node)
			p.Stall()
			p.Sever()
			waitClosed(t, g.h.Paused(), 5*time.Second, "paused")
			remove(t, g.node)
			p.Heal()
			waitClosed(t, g.h.Lost(), 10*time.Second, "lost after the deletion")
			err := g.h.Gate(testutil.Ctx(t, 5*time.Second))
			require.True(t, errors.Is(err, line.ErrLost), "resumed after its node was deleted: %v", err)
		})
	}
}

// requireWatched waits until the server holds a data watch of s's session on
// node (the hold's own-node watch).
func requireWatched(t *testing.T, s *session.Session, node string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return slices.Contains(testutil.WatchedBy(t, zk, 0, s.SessionID()), node)
	}, 10*time.Second, 5*time.Millisecond, "no watch on %s", node)
}

var _ = gozk.ErrNoNode

// TestPauseLostAnswers: under the ride-through, a fenced write and a release
// whose answers are lost with the connection: the write's error says the
// hold is paused (its outcome unknown, never a loss), the hold resumes, and
// the write landed at most once; the release lets go all the same and its
// delete is made once the session is back.
func TestPauseLostAnswers(t *testing.T) {
	t.Parallel() // its own paths, sessions and proxies
	path := testutil.UniquePath(t, "pause-answers")
	ctx := testutil.Ctx(t, 60*time.Second)
	hs, p := testutil.Proxied(t, zk, 4*time.Second, pause)
	m, err := mutex.New(hs, path+"/lock")
	require.NoError(t, err)
	require.NoError(t, fence.Ensure(ctx, hs, path+"/state", nil))
	require.NoError(t, m.Lock(ctx))
	node, h := m.Node(), m.Hold()

	p.MuteReplies() // the write reaches the server; its answer never comes back
	_, err = m.Fenced(ctx, fence.Set(path+"/state", []byte("muted"), fence.AnyVersion))
	require.ErrorIs(t, err, line.ErrPaused, "a fenced write whose answer was lost")
	require.NotErrorIs(t, err, line.ErrLost)
	require.True(t, m.IsHeld(), "the hold ended with the connection")
	p.Heal()
	require.NoError(t, m.Gate(ctx), "resumed")
	require.Equal(t, int32(1), testutil.Version(t, hs, hs.Path(path+"/state")), "the write landed once")

	p.MuteReplies()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = m.Unlock(short)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "an unlock whose answer was lost")
	require.False(t, m.IsHeld())
	p.Heal()
	require.Eventually(t, func() bool {
		ep, ok := hs.Current()
		if !ok {
			return false
		}
		there, _, err := ep.Conn().Exists(node)
		return err == nil && !there
	}, 10*time.Second, 5*time.Millisecond, "the released node is gone once the session is back")
	require.False(t, testutil.IsClosed(h.Lost()), "a release is no loss")
}

// TestHoldContextCause: a hold's Context says why it ended: a release, a
// lost connection (the default policy), a session lost by the local clock,
// a node deleted from outside, the session manager's Close.
func TestHoldContextCause(t *testing.T) {
	t.Parallel() // its own paths, sessions and proxies
	ctx := testutil.Ctx(t, 60*time.Second)
	lock := func(t *testing.T, s *session.Session) *mutex.Mutex {
		m, err := mutex.New(s, testutil.UniquePath(t, "cause"))
		require.NoError(t, err)
		require.NoError(t, m.Lock(ctx))
		return m
	}
	t.Run("released", func(t *testing.T) {
		m := lock(t, testutil.Open(t, zk.Servers()))
		hctx := m.Context()
		require.NoError(t, m.Unlock(ctx))
		require.ErrorIs(t, context.Cause(hctx), line.ErrReleased)
		require.NotErrorIs(t, context.Cause(hctx), line.ErrLost)
	})
	t.Run("disconnected", func(t *testing.T) {
		s, p := testutil.Proxied(t, zk, 4*time.Second)
		m := lock(t, s)
		p.Sever()
		waitClosed(t, m.Lost(), 5*time.Second, "lost")
		require.ErrorIs(t, context.Cause(m.Context()), session.ErrDisconnected)
		require.ErrorIs(t, context.Cause(m.Context()), line.ErrLost)
	})
	t.Run("deleted", func(t *testing.T) {
		s := testutil.Open(t, zk.Servers(), pause)
		m := lock(t, s)
		requireWatched(t, s, m.Node())
		ep, err := testutil.Open(t, zk.Servers()).Wait(ctx)
		require.NoError(t, err)
		require.NoError(t, ep.Conn().Delete(m.Node(), -1))
		waitClosed(t, m.Lost(), 5*time.Second, "lost")
		require.ErrorIs(t, context.Cause(m.Context()), line.ErrLost)
		require.Contains(t, context.Cause(m.Context()).Error(), "deleted")
	})
	t.Run("closed", func(t *testing.T) {
		s := testutil.Open(t, zk.Servers(), pause)
		m := lock(t, s)
		hctx := m.Context()
		require.NoError(t, s.Close())
		require.ErrorIs(t, context.Cause(hctx), line.ErrClosed)
	})
	t.Run("election", func(t *testing.T) {
		s := testutil.Open(t, zk.Servers())
		e, err := election.New(s, testutil.UniquePath(t, "cause"), "a")
		require.NoError(t, err)
		rctx, stop := context.WithCancel(ctx)
		causes := make(chan error, 1)
		done := make(chan error, 1)
		go func() {
			done <- e.Run(rctx, election.Callbacks{OnElected: func(c context.Context, _ election.Term) {
				<-c.Done()
				causes <- context.Cause(c)
			}})
		}()
		require.Eventually(t, func() bool { return e.Leadership() != nil }, 10*time.Second, 5*time.Millisecond)
		stop() // a shutdown, not a loss
		require.NoError(t, <-done)
		cause := <-causes
		require.ErrorIs(t, cause, context.Canceled)
		require.NotErrorIs(t, cause, line.ErrLost)
	})
}
