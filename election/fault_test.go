package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// TestExpiredLeaderIsToldFirst: the leader's session is ended by the server,
// again and again; each time its OnElected ctx is cancelled before another
// candidate's OnElected starts (checked by the checker on one clock).
func TestExpiredLeaderIsToldFirst(t *testing.T) {
	path := uniquePath(t)
	c := newChecker()
	proxies := map[string]*zktest.Proxy{}
	sessions := map[string]*session.Session{}
	cands := map[string]*candidate{}
	for _, id := range []string{"a", "b", "c"} {
		p, err := zktest.NewProxy(zk.Servers()...)
		require.NoError(t, err)
		t.Cleanup(func() { p.Close() })
		proxies[id] = p
		sessions[id] = open(t, p.Addrs(), session.WithSessionTimeout(2*time.Second))
		cands[id] = startCandidate(t, c, sessions[id], path, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader := c.waitElected(t, 10*time.Second)
	for range 6 {
		// Every candidate is back in line (an expired one re-enters with a
		// new session), so another can take over.
		require.Eventually(t, func() bool {
			ps, err := cands[leader].e.Participants(ctx)
			return err == nil && len(ps) == 3
		}, 10*time.Second, 10*time.Millisecond)
		require.NoError(t, proxies[leader].ExpireSession(ctx, sessions[leader].SessionID()))
		next := c.waitElected(t, 10*time.Second)
		require.NotEqual(t, leader, next, "an expired leader cannot lead on")
		leader = next
	}
	c.check(t)
}

// TestStalledLeaderIsToldFirst: the leader's network is stalled past the
// session timeout (a real partition): it is told at Suspended (2/3 of the
// timeout), the server expires it at the timeout, and only then is another
// candidate elected.
func TestStalledLeaderIsToldFirst(t *testing.T) {
	path := uniquePath(t)
	c := newChecker()
	proxies := map[string]*zktest.Proxy{}
	for _, id := range []string{"a", "b", "c"} {
		p, err := zktest.NewProxy(zk.Servers()...)
		require.NoError(t, err)
		t.Cleanup(func() { p.Close() })
		proxies[id] = p
		s := open(t, p.Addrs(), session.WithSessionTimeout(1500*time.Millisecond))
		startCandidate(t, c, s, path, id)
	}
	leader := c.waitElected(t, 10*time.Second)
	for range 3 {
		c.mu.Lock()
		leaderCtx := c.cur
		c.mu.Unlock()
		stalled := time.Now()
		proxies[leader].Stall()
		next := c.waitElected(t, 15*time.Second)
		elected := time.Now()
		require.NotEqual(t, leader, next)
		require.Error(t, leaderCtx.Err())
		t.Logf("stalled %s: %s elected %v later", leader, next, elected.Sub(stalled).Round(time.Millisecond))
		proxies[leader].Heal()
		leader = next
	}
	c.check(t)
}

// TestGracefulHandover: cancelling the leader's Run hands leadership over
// without waiting for the session timeout (10s here).
func TestGracefulHandover(t *testing.T) {
	path := uniquePath(t)
	c := newChecker()
	byID := map[string]*candidate{}
	for _, id := range []string{"a", "b"} {
		byID[id] = startCandidate(t, c, open(t, zk.Servers(), session.WithSessionTimeout(10*time.Second)), path, id)
	}
	leader := c.waitElected(t, 10*time.Second)
	t0 := time.Now()
	byID[leader].stop()
	next := c.waitElected(t, 5*time.Second)
	require.NotEqual(t, leader, next)
	t.Logf("graceful handover %s → %s in %v", leader, next, time.Since(t0))
	c.check(t)
}

// TestZooKeeperLeaderKill: killing the ZooKeeper leader of a 3-node ensemble
// suspends our leader's connection at most; its session survives, so it keeps
// leadership with the same term and no other candidate is ever elected.
func TestZooKeeperLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("ensemble")
	}
	ens := zktest.Start(t, 3)
	path := uniquePath(t)
	c := newChecker()
	byID := map[string]*candidate{}
	for _, id := range []string{"a", "b", "c"} {
		byID[id] = startCandidate(t, c, open(t, ens.Servers(), session.WithSessionTimeout(6*time.Second)), path, id)
	}
	leader := c.waitElected(t, 10*time.Second)
	c.mu.Lock()
	term := c.terms[len(c.terms)-1]
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for round := range 2 {
		zl, err := ens.Leader(ctx)
		require.NoError(t, err)
		require.NoError(t, ens.Kill(zl))
		// Wait until the ensemble has a new leader and our leader leads again.
		require.Eventually(t, func() bool {
			l, err := ens.Leader(ctx)
			return err == nil && l != zl && byID[leader].e.IsLeader()
		}, 30*time.Second, 20*time.Millisecond)
		require.NoError(t, ens.Restart(ctx, zl))
		t.Logf("round %d: ZooKeeper leader %d killed; %s still leads", round, zl, leader)
	}
	c.check(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, id := range c.order {
		require.Equal(t, leader, id, "leadership moved (election %d)", i)
		require.Equal(t, term, c.terms[i], "term changed (election %d)", i)
	}
	t.Logf("%d grants, all to %s with term %v", len(c.order), leader, term)
}
