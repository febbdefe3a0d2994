package election_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
)

// TestRequestsPerHandoff: a candidate that waits behind the leader costs the
// create and the listing sent with it, the read of its term, two watches
// on the leader's node (GetW, and ChildrenW, which only the node's deletion
// fires and a mark does not spend: recipe.Line.watch), and its watch of the
// handover record (set once it waits: a candidate led at once sets none,
// so a's first, immediate leadership did not); once the leader resigns it
// is elected with no further request (its predecessor was the head).
// Counted by the server.
func TestRequestsPerHandoff(t *testing.T) {
	path := uniquePath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := open(t, zk.Servers()), open(t, zk.Servers())
	ea, _ := election.New(a, path, "a")
	eb, _ := election.New(b, path, "b")
	// Each candidate's first campaign also looks for duplicate ids, once.
	_, err := ea.Campaign(ctx)
	require.NoError(t, err)
	require.NoError(t, ea.Resign(ctx))
	_, err = eb.Campaign(ctx)
	require.NoError(t, err)

	ep, err := a.Wait(ctx)
	require.NoError(t, err)
	before := testutil.LastXid(t, zk, 0, ep.SessionID())
	got := make(chan error, 1)
	go func() { _, err := ea.Campaign(ctx); got <- err }()
	awaitInLine(t, a, 1)
	testutil.AwaitWatching(t, zk, 0, a, func(p string) bool { return strings.HasSuffix(p, "/handover") })
	require.NoError(t, eb.Resign(ctx))
	require.NoError(t, <-got)
	// ... and, once elected, the leadership's watch on its own node
	// (hold/ownwatch.go), off the handoff's path: sent 10 ms into the
	// hold, later on a loaded machine, so it is awaited before counting.
	own := ea.Leadership().Hold().Node()
	testutil.AwaitWatching(t, zk, 0, a, func(p string) bool { return p == own })
	xid := func() int64 { return testutil.LastXid(t, zk, 0, ep.SessionID()) }
	// 6+1 on a quiet machine; one more was counted in make test (a hold's
	// own-node read starts after 10 ms: one of a's earlier, briefer holds
	// may last that long on a loaded machine). Bounded, still O(1). (The
	// record's watch was set by a's first leadership, before this count,
	// until leaders stopped watching the record: then 5+1.)
	n := testutil.Quiet(t, xid) - before
	require.GreaterOrEqual(t, n, int64(6+1), "a Campaign elected by a handoff")
	require.LessOrEqual(t, n, int64(6+2), "a Campaign elected by a handoff")
	require.NoError(t, ea.Resign(ctx))
}
