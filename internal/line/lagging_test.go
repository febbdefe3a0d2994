package line_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// TestLaggingFollowerNeverConfirmsAResume: a paused hold whose node was
// deleted meanwhile is lost, never resumed, when its session comes back on
// a follower that has not applied the deletion yet (zktest.LagFollower:
// the follower gets no update from its leader but keeps serving its
// clients). The session manager syncs before it reports Reconnected, so
// every read of the new epoch (the hold's confirmation, a kept place in a
// line) sees at least what the ensemble had committed at the reconnect.
// Issue 36 (6): on b9d4272 the hold resumed on the follower's stale read,
// and was lost only when the follower caught up.
func TestLaggingFollowerNeverConfirmsAResume(t *testing.T) {
	t.Parallel()
	c := zktest.Start(t, 3, zktest.WithFollowerLag())
	ctx := testutil.Ctx(t, 60*time.Second)
	leader, err := c.Leader(ctx)
	require.NoError(t, err)
	f := (leader + 1) % 3
	p, err := zktest.NewProxy(c.Addr(f))
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	rec := &testutil.Recorder{}
	s := testutil.Open(t, p.Addrs(), session.WithSessionTimeout(8*time.Second),
		session.WithDisconnectPolicy(session.PauseOnDisconnect), session.WithObserver(rec))
	m, err := mutex.New(s, testutil.UniquePath(t, "lag"))
	require.NoError(t, err)
	require.NoError(t, m.Lock(ctx))
	h := m.Hold()

	// Sessions are made before the lag: a session created on the lagging
	// follower waits for its commit.
	op := testutil.Open(t, []string{c.Addr(leader)})
	stale := testutil.Open(t, []string{c.Addr(f)})
	release, err := c.LagFollower(f)
	require.NoError(t, err)
	defer release()
	p.Refuse(true)
	p.Sever()
	require.Eventually(t, h.IsPaused, 10*time.Second, 5*time.Millisecond)
	ep, err := op.Wait(ctx)
	require.NoError(t, err)
	require.NoError(t, ep.Conn().Delete(h.Node(), -1))
	// The follower has not applied the deletion: it still shows the node.
	sep, err := stale.Wait(ctx)
	require.NoError(t, err)
	there, _, err := sep.Conn().Exists(h.Node())
	require.NoError(t, err)
	require.True(t, there, "the lagging follower shows the deleted node (the fault is in place)")

	p.Refuse(false) // the holder's session comes back, on the lagging follower
	require.Eventually(t, func() bool { return p.Conns() > 0 }, 10*time.Second, 5*time.Millisecond)
	gctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	gateErr := h.Gate(gctx) // nil if the hold resumed
	cancel()
	release()
	select {
	case <-h.Lost():
	case <-ctx.Done():
		t.Fatal("the hold whose node was deleted was never lost")
	}
	require.Error(t, gateErr, "the hold resumed on the follower's stale read")
	require.Eventually(t, func() bool { return rec.Seen(observe.HoldLost) }, 5*time.Second, 5*time.Millisecond)
	require.False(t, rec.Seen(observe.HoldResumed), "the hold resumed before it was lost")
}
