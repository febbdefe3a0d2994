package admin

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/internal/wire/zkwire"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

var zkc *zktest.Cluster // the package's shared standalone server

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m, &zkc, 1))
}

// idleNonFairElection leaves an idle non-fair election at p (full path)
// whose candidates' container is there, empty: what the server's reaper
// removes on its own clock.
func idleNonFairElection(ctx context.Context, t *testing.T, s *session.Session, p string) *zk.Conn {
	t.Helper()
	e, err := election.New(s, p, "e", election.NonFair())
	require.NoError(t, err)
	l, err := e.Campaign(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Resign(ctx))
	ep, err := s.Wait(ctx)
	require.NoError(t, err)
	// Made again as the election makes it, never used: the server's reaper
	// removes a container once it has had children and has none (which
	// the election's is now, whenever the reaper comes by), never one that
	// never had any. It stays until the test removes it.
	candidates := p + "/" + layout.ElectionCandidates
	if err := ep.Conn().Delete(candidates, -1); !errors.Is(err, zk.ErrNoNode) {
		require.NoError(t, err)
	}
	require.NoError(t, line.EnsurePath(s, ep, candidates))
	return ep.Conn()
}

// A container that vanishes between the removal's read and its multi (the
// server's reaper at work) is no arrival: the multi's failure is told apart
// (errVanished, not ErrInUse) and the removal, planned again, removes the
// rest. On 2dae882 it failed with "changed while it was removed (someone
// arrived)": TestKindsAgree's rm of an idle non-fair election, once.
func TestRemoveIdleContainerReaped(t *testing.T) {
	ctx := testutil.Ctx(t, 30*time.Second)
	s := testutil.Open(t, zkc.Servers())
	p := testutil.UniquePath(t, "admin-test")
	c := idleNonFairElection(ctx, t, s, p)
	candidates := p + "/" + layout.ElectionCandidates

	r, err := planRemoval(c, p)
	require.NoError(t, err)
	require.Contains(t, r.names, candidates)
	require.NoError(t, c.Delete(candidates, -1)) // the reaper, between read and multi
	err = r.apply(c)
	require.ErrorIs(t, err, errVanished)
	require.NotErrorIs(t, err, ErrInUse)

	var sent *removal
	again, err := removeIdle(c, p, &sent)
	require.NoError(t, err)
	require.Equal(t, []string{p}, again.names)
	ok, _, err := c.Exists(p)
	require.NoError(t, err)
	require.False(t, ok)

	// Someone arriving is still refused: a child written into the
	// container after the read.
	p = testutil.UniquePath(t, "admin-test")
	c = idleNonFairElection(ctx, t, s, p)
	r, err = planRemoval(c, p)
	require.NoError(t, err)
	_, err = c.Create(p+"/"+layout.ElectionCandidates+"/someone", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	require.ErrorIs(t, r.apply(c), ErrInUse)
}

// answerLoser's connections fail, once armed, right after a multi is
// written, as soon as the server has applied it: its answer is lost.
type answerLoser struct {
	armed  atomic.Bool
	landed func() bool // whether the multi was applied
	lost   atomic.Int32
	multis atomic.Int32
}

func (a *answerLoser) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	return testutil.WrapDial(func(c net.Conn) net.Conn { return &losingConn{Conn: c, a: a} })(network, address, timeout)
}

type losingConn struct {
	net.Conn
	a    *answerLoser
	once sync.Once
	sent atomic.Bool
}

func (c *losingConn) Write(p []byte) (int, error) {
	if op, ok := zkwire.RequestOp(p); ok && op == zkwire.OpMulti { // go-zookeeper writes a frame a Write
		c.a.multis.Add(1)
		if c.a.armed.CompareAndSwap(true, false) {
			c.sent.Store(true)
		}
	}
	return c.Conn.Write(p)
}

func (c *losingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.sent.Load() {
		c.once.Do(func() {
			// Wait (10 s at most) until the server has applied the
			// multi, then lose its answer: counted only if it landed.
			if testutil.Poll(10*time.Second, 5*time.Millisecond, c.a.landed) {
				c.a.lost.Add(1)
			}
		})
		c.Conn.Close()
		return 0, net.ErrClosed
	}
	return n, err
}

// A removal whose multi landed and whose answer was lost is reported as
// done (the nodes it removed), not as "no recipe at the path" when the
// session's retry finds the path gone.
func TestRemoveIdleAnswerLost(t *testing.T) {
	ctx := testutil.Ctx(t, 60*time.Second)
	p := testutil.UniquePath(t, "admin-test")
	other := testutil.Open(t, zkc.Servers())
	oep, err := other.Wait(ctx)
	require.NoError(t, err)
	loser := &answerLoser{landed: func() bool {
		ok, _, err := oep.Conn().Exists(p)
		return err == nil && !ok
	}}
	s := testutil.Open(t, zkc.Servers(), session.WithDialer(loser.dial), session.WithSessionTimeout(10*time.Second))
	idleNonFairElection(ctx, t, s, p)

	loser.multis.Store(0) // the election's own
	loser.armed.Store(true)
	kind, removed, err := RemoveIdle(ctx, s, p)
	require.NoError(t, err)
	require.Equal(t, int32(1), loser.lost.Load(), "the multi did not land before its answer was lost")
	require.Equal(t, int32(1), loser.multis.Load(), "one multi, not sent again")
	require.Equal(t, "election", kind)
	require.Equal(t, []string{p + "/" + layout.ElectionCandidates, p}, removed)
}

// Nothing at the path is an answer, at once: not retried until ctx ends.
func TestRemoveIdleNothing(t *testing.T) {
	ctx := testutil.Ctx(t, 30*time.Second)
	s := testutil.Open(t, zkc.Servers())
	p := testutil.UniquePath(t, "admin-test")
	start := time.Now()
	_, _, err := RemoveIdle(ctx, s, p)
	require.ErrorIs(t, err, ErrNotARecipe)
	require.EqualError(t, err, ErrNotARecipe.Error()+": nothing at "+p)
	require.NoError(t, ctx.Err(), "answered after %v", time.Since(start))
}

// A call given up at its ctx leaves its requests running: what they write
// once answered is not read by the call that returned (the race detector
// watches: AskRevoke read what its request wrote, after a 300 ms ctx under
// a loaded make test, and RemoveIdle would have the same way). Each call
// here returns at its ctx while its op runs on; the test then waits for the
// op's writes (the holder hears the request; the path is removed).
func TestGivenUpCallsReadNothingLate(t *testing.T) {
	ctx := testutil.Ctx(t, 30*time.Second)
	holder := testutil.Open(t, zkc.Servers())
	d := &testutil.SlowReads{Delay: 150 * time.Millisecond}
	op := testutil.Open(t, zkc.Servers(), session.WithDialer(d.Dial), session.WithSessionTimeout(10*time.Second))

	p := testutil.UniquePath(t, "admin-test")
	m, err := mutex.New(holder, p)
	require.NoError(t, err)
	require.NoError(t, m.Lock(ctx))
	nodes := testutil.Children(t, holder, p)
	require.Len(t, nodes, 1)
	d.Slow.Store(true)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = AskRevoke(short, op, Grant{Node: p + "/" + nodes[0]})
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	select {
	case <-m.RevokeRequested(): // the request the call gave up on, written after
	case <-ctx.Done():
		t.Fatal("the request never reached the holder")
	}
	require.NoError(t, m.Unlock(ctx))

	q := testutil.UniquePath(t, "admin-test")
	idleNonFairElection(ctx, t, holder, q)
	short, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
	_, _, err = RemoveIdle(short, op, q)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	hep, err := holder.Wait(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ok, _, err := hep.Conn().Exists(q)
		return err == nil && !ok
	}, 10*time.Second, 5*time.Millisecond, "the removal the call gave up on")
	d.Slow.Store(false)
}
