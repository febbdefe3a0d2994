package prometheus_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	promobs "github.com/shepherdzk/shepherd/observe/prometheus"
	"github.com/shepherdzk/shepherd/session"
)

// TestPathLabels: with WithPathLabels, a process holding two locks says
// which one it lost: the lock at a, whose node is deleted from outside,
// counts one loss at a, none at b, and b is still held.
func TestPathLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	obs, err := promobs.New(reg, promobs.WithPathLabels())
	require.NoError(t, err)
	sess := open(t, zk.Servers(), session.WithObserver(obs))
	ctx := testutil.Ctx(t, 30*time.Second)
	a, b := uniquePath(t)+"-a", uniquePath(t)+"-b"
	ma, err := mutex.New(sess, a)
	require.NoError(t, err)
	mb, err := mutex.New(sess, b)
	require.NoError(t, err)
	require.NoError(t, ma.Lock(ctx))
	require.NoError(t, mb.Lock(ctx))
	defer func() { _ = mb.Unlock(context.Background()) }()
	held := func(p string) float64 {
		return metric(t, reg, "shepherd_holds", map[string]string{"recipe": "mutex", "path": sess.Path(p)})
	}
	lost := func(p string) float64 {
		return metric(t, reg, "shepherd_hold_lost_total", map[string]string{"recipe": "mutex", "path": sess.Path(p)})
	}
	require.Equal(t, 1.0, held(a))
	require.Equal(t, 1.0, held(b))

	other := open(t, zk.Servers())
	for _, n := range mustChildren(t, other, a) {
		ep, err := other.Wait(ctx)
		require.NoError(t, err)
		require.NoError(t, ep.Conn().Delete(other.Path(a+"/"+n), -1))
	}
	select {
	case <-ma.Lost():
	case <-ctx.Done():
		t.Fatal("the lock at a was not lost")
	}
	require.Eventually(t, func() bool { return lost(a) == 1 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 0.0, lost(b))
	require.Equal(t, 0.0, held(a))
	require.Equal(t, 1.0, held(b))
}
