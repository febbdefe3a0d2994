package zktest_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/zktest"
)

// TestLagFollower: a write committed while a follower lags is not seen on
// that follower (nor does a sync there return) until the lag is released;
// the follower stays a follower and answers reads meanwhile.
func TestLagFollower(t *testing.T) {
	c := zktest.Start(t, 3, zktest.WithFollowerLag())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := c.Leader(ctx)
	require.NoError(t, err)
	f := (leader + 2) % 3
	writer := connect(t, []string{c.Addr(leader)})
	reader := connect(t, []string{c.Addr(f)})
	_, err = writer.Create("/lag", []byte("old"), 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	require.Eventually(t, func() bool { d, _, err := reader.Get("/lag"); return err == nil && string(d) == "old" },
		10*time.Second, 5*time.Millisecond)

	release, err := c.LagFollower(f)
	require.NoError(t, err)
	_, err = writer.Set("/lag", []byte("new"), -1)
	require.NoError(t, err)
	// Reads on the follower go on, from before the write, for as long as
	// the lag lasts (here: several of its leader's ping intervals).
	for range 6 {
		d, _, err := reader.Get("/lag")
		require.NoError(t, err)
		require.Equal(t, "old", string(d), "a lagging follower shows what it had")
		time.Sleep(100 * time.Millisecond) // reads spread over the lag: its length is the fault
	}
	require.Equal(t, "follower", c.Mode(ctx, f))
	// A sync there waits for the lag (and the session's later requests,
	// its pings too, wait behind it: keep it shorter than the client's
	// read timeout).
	synced := make(chan error, 1)
	go func() { _, err := reader.Sync("/lag"); synced <- err }()
	select {
	case err := <-synced:
		t.Fatalf("a sync on the lagging follower returned (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	require.NoError(t, <-synced)
	d, _, err := reader.Get("/lag")
	require.NoError(t, err)
	require.Equal(t, "new", string(d))
}
