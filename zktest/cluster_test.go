package zktest_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/shepherdzk/shepherd/zktest"
)

// connect returns a connection once it has a session. A request sent
// before then fails ("could not connect to a server") when no server takes
// the first connection attempt: a member of a just-elected ensemble on a
// busy machine may close it until it serves (TestLagFollower's writer, in
// a make test).
func connect(t *testing.T, servers []string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect(servers, 4*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-deadline:
			t.Fatalf("no session with %v in 30 s", servers)
		}
	}
}

func TestStandalone(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c := zktest.Start(t, 1)
	t.Logf("standalone started in %v at %s", c.StartupTime(), c.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.Equal(t, "standalone", c.Mode(ctx, 0))

	conn := connect(t, c.Servers())
	_, err := conn.Create("/x", []byte("hello"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	data, _, err := conn.Get("/x")
	require.NoError(t, err)
	require.Equal(t, "hello", string(data))

	m, err := c.Mntr(ctx, 0)
	require.NoError(t, err)
	n, err := strconv.Atoi(m["zk_packets_received"])
	require.NoError(t, err)
	require.Positive(t, n)

	// A standalone restart keeps the data. (go-zookeeper's own client may
	// wait out a whole handshake deadline, 10 x 2/3 of its session timeout,
	// on a server that accepted its connection while starting: bounded
	// above that.)
	require.NoError(t, c.Restart(ctx, 0))
	require.Eventually(t, func() bool {
		d, _, err := conn.Get("/x")
		return err == nil && string(d) == "hello"
	}, 45*time.Second, 20*time.Millisecond)
	conn.Close()
	require.NoError(t, c.Close())
	require.False(t, c.Running(0))
}

func TestEnsembleSurvivesLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("ensemble test skipped in -short mode")
	}
	c := zktest.Start(t, 3)
	t.Logf("3-node ensemble started in %v", c.StartupTime())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	leader, err := c.Leader(ctx)
	require.NoError(t, err)
	conn := connect(t, c.Servers())
	_, err = conn.Create("/before", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	sid := conn.SessionID()

	t0 := time.Now()
	require.NoError(t, c.Kill(leader))
	require.Eventually(t, func() bool {
		l, err := c.Leader(ctx)
		return err == nil && l != leader
	}, 30*time.Second, 20*time.Millisecond, "no new leader")
	t.Logf("new leader elected %v after the kill", time.Since(t0))
	require.Eventually(t, func() bool {
		_, err := conn.Create("/after", nil, 0, zk.WorldACL(zk.PermAll))
		return err == nil || err == zk.ErrNodeExists
	}, 30*time.Second, 50*time.Millisecond, "writes do not work after the leader was killed")
	t.Logf("writes work again %v after the kill", time.Since(t0))
	require.Equal(t, sid, conn.SessionID(), "session changed across a ZooKeeper leader change")

	require.NoError(t, c.Restart(ctx, leader))
	require.NotEmpty(t, c.Mode(ctx, leader))
}

// TestFiveNodes: a 5-node ensemble starts, elects one leader, and keeps a
// quorum through two followers killed.
func TestFiveNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("ensemble test skipped in -short mode")
	}
	c := zktest.Start(t, 5)
	t.Logf("5-node ensemble started in %v", c.StartupTime())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := c.Leader(ctx)
	require.NoError(t, err)
	leaders := 0
	for i := range c.Size() {
		if c.Mode(ctx, i) == "leader" {
			leaders++
		}
	}
	require.Equal(t, 1, leaders)
	conn := connect(t, c.Servers())
	killed := 0
	for i := 0; i < c.Size() && killed < 2; i++ {
		if i != leader {
			require.NoError(t, c.Kill(i))
			killed++
		}
	}
	require.Eventually(t, func() bool {
		_, err := conn.Create("/five", nil, 0, zk.WorldACL(zk.PermAll))
		return err == nil || err == zk.ErrNodeExists
	}, 30*time.Second, 50*time.Millisecond, "3 of 5 nodes keep serving writes")
}

func TestBadInput(t *testing.T) {
	_, err := zktest.StartCluster(context.Background(), 0)
	require.Error(t, err)
	_, err = zktest.StartCluster(context.Background(), 1, zktest.WithClasspath("/nonexistent.jar"), zktest.WithStartTimeout(3*time.Second))
	require.Error(t, err)
}
