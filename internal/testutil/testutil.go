// Package testutil holds what shepherd's test packages share: a TestMain
// that starts real ZooKeeper and checks for leaked goroutines, sessions that
// close with the test, unique paths, and server-side counts.
package testutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// Main starts a ZooKeeper cluster of size for a test package, stores it in
// *c, runs the tests, stops the cluster and fails the run if goroutines were
// left behind. It returns the exit code: os.Exit(testutil.Main(m, &zk, 1)).
func Main(m *testing.M, c **zktest.Cluster, size int, opts ...zktest.Option) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cl, err := zktest.StartCluster(ctx, size, opts...)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*c = cl
	code := m.Run()
	cl.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	return code
}

var pathN atomic.Int64

// UniquePath returns a path under /prefix unique to this test run.
func UniquePath(t testing.TB, prefix string) string {
	return fmt.Sprintf("/%s/%s-%d", prefix, strings.ReplaceAll(t.Name(), "/", "_"), pathN.Add(1))
}

// Open opens a session that is closed (and waited for) when the test ends.
func Open(t testing.TB, servers []string, opts ...session.Option) *session.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := session.Open(ctx, servers, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close(); <-s.Done() })
	return s
}

// Ctx returns a context that ends after d or with the test.
func Ctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Children lists path's children (nil if it does not exist) through s.
func Children(t testing.TB, s *session.Session, path string) []string {
	t.Helper()
	ep, err := s.Wait(Ctx(t, 10*time.Second))
	require.NoError(t, err)
	names, _, err := ep.Conn().Children(s.Path(path))
	if err != nil {
		return nil
	}
	return names
}

// Notifications is the number of watch notifications server i of c has
// fired (ZooKeeper 3.6+ counts them per event type in mntr).
func Notifications(t testing.TB, c *zktest.Cluster, i int) int64 {
	t.Helper()
	kv, err := c.Mntr(Ctx(t, 5*time.Second), i)
	require.NoError(t, err)
	var sum int64
	for _, k := range []string{"zk_sum_node_created_watch_count", "zk_sum_node_deleted_watch_count",
		"zk_sum_node_changed_watch_count", "zk_sum_node_children_watch_count"} {
		v, _ := strconv.ParseInt(kv[k], 10, 64)
		sum += v
	}
	return sum
}

// LastXid is the xid of the last request of session sid that server i of c
// answered (from the "cons" command): it moves by one per request and not at
// all on pings, so the difference between two readings counts requests.
func LastXid(t testing.TB, c *zktest.Cluster, i int, sid int64) int64 {
	t.Helper()
	out, err := c.FourLetter(Ctx(t, 5*time.Second), i, "cons")
	require.NoError(t, err)
	tag := fmt.Sprintf("sid=0x%x,", sid)
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, tag) {
			continue
		}
		_, rest, _ := strings.Cut(line, "lcxid=0x")
		hex, _, _ := strings.Cut(rest, ",")
		n, err := strconv.ParseInt(hex, 16, 64)
		require.NoError(t, err, line)
		return n
	}
	t.Fatalf("session 0x%x not among server %d's connections:\n%s", sid, i, out)
	return 0
}

// WatchCount is the number of watches (data and child) server i of c holds,
// from mntr.
func WatchCount(t testing.TB, c *zktest.Cluster, i int) int64 {
	t.Helper()
	kv, err := c.Mntr(Ctx(t, 5*time.Second), i)
	require.NoError(t, err)
	n, err := strconv.ParseInt(kv["zk_watch_count"], 10, 64)
	require.NoError(t, err, "zk_watch_count")
	return n
}

// ExhaustedCounter starts a standalone server of the test's own (SetSequence
// restarts it), creates path as a persistent node, and presets its sequence
// counter to zktest.MaxSequence−2: its next sequential children are numbered
// …45, …46, …47, and every later one …47 again (ZooKeeper 3.8's counter
// sticks at 2^31−1). It returns the server.
func ExhaustedCounter(t testing.TB, path string) *zktest.Cluster {
	t.Helper()
	c := zktest.Start(t, 1)
	ctx := Ctx(t, 60*time.Second)
	s := Open(t, c.Servers())
	ep, err := s.Wait(ctx)
	require.NoError(t, err)
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := range parts {
		_, err := ep.Conn().Create("/"+strings.Join(parts[:i+1], "/"), nil, 0, s.ACL())
		if err != nil && !errors.Is(err, gozk.ErrNodeExists) {
			require.NoError(t, err)
		}
	}
	s.Close()
	<-s.Done()
	require.NoError(t, c.SetSequence(ctx, path, zktest.MaxSequence-2))
	return c
}
