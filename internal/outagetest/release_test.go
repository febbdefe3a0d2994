package outagetest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// TestReleaseOutlivesLongOutage is the suite's one test longer than a minute
// (about 70 s; see the package's doc for why it is alone here): a lock
// released while the server is out of reach is deleted when the session
// comes back, however long that takes within the session timeout — the
// guaranteed delete follows the session, not a clock. Here the outage lasts
// 65 s with a 100 s session.
func TestReleaseOutlivesLongOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a 65 s outage")
	}
	// zktest's default server grants at most 60 s: this test's grants more.
	srv := zktest.Start(t, 1, zktest.WithMaxSessionTimeout(2*time.Minute))
	p, err := zktest.NewProxy(srv.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	hs := testutil.Open(t, p.Addrs(), session.WithSessionTimeout(100*time.Second))
	require.Equal(t, 100*time.Second, hs.Timeout(), "the server must grant the session timeout")
	ws := testutil.Open(t, srv.Servers())
	path := testutil.UniquePath(t, "recipe-test")
	ctx := testutil.Ctx(t, 3*time.Minute)
	holder, err := mutex.New(hs, path)
	require.NoError(t, err)
	waiter, err := mutex.New(ws, path)
	require.NoError(t, err)
	require.NoError(t, holder.Lock(ctx))
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctx) }()
	require.Eventually(t, func() bool { return len(testutil.Children(t, ws, path)) == 2 }, 10*time.Second, 5*time.Millisecond)

	sid := hs.SessionID()
	p.Refuse(true) // the server is out of reach
	p.Sever()
	require.Eventually(t, func() bool { return hs.State() == session.Suspended }, 10*time.Second, 5*time.Millisecond)
	require.ErrorIs(t, holder.Unlock(ctx), mutex.ErrLost, "the hold was lost at Suspended")
	time.Sleep(65 * time.Second) // the fault: longer than a minute, shorter than the session timeout
	p.Heal()
	require.Eventually(t, func() bool { return hs.State() == session.Reconnected }, 30*time.Second, 10*time.Millisecond)
	require.Equal(t, sid, hs.SessionID(), "the session survives the outage")
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("the waiter was not granted: the released node is still there (%v)", testutil.Children(t, ws, path))
	}
	require.NoError(t, waiter.Unlock(ctx))
}
