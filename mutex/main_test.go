package mutex_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

var zk *zktest.Cluster // the package's shared standalone server

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c, err := zktest.StartCluster(ctx, 1)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	zk = c
	code := m.Run()
	c.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var pathN atomic.Int64

func uniquePath(t *testing.T) string {
	return fmt.Sprintf("/mutex-test/%s-%d", t.Name(), pathN.Add(1))
}

func open(t *testing.T, servers []string, opts ...session.Option) *session.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := session.Open(ctx, servers, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close(); <-s.Done() })
	return s
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// children lists path's children on the server, through a fresh session.
func children(t *testing.T, s *session.Session, path string) []string {
	t.Helper()
	ep, err := s.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	names, _, err := ep.Conn().Children(s.Path(path))
	if err != nil {
		return nil
	}
	return names
}

// notifications is the number of watch notifications the server has fired.
func notifications(t *testing.T) int64 {
	t.Helper()
	kv, err := zk.Mntr(ctxT(t, 5*time.Second), 0)
	require.NoError(t, err)
	var sum int64
	for _, k := range []string{"zk_sum_node_created_watch_count", "zk_sum_node_deleted_watch_count",
		"zk_sum_node_changed_watch_count", "zk_sum_node_children_watch_count"} {
		v, _ := strconv.ParseInt(kv[k], 10, 64)
		sum += v
	}
	return sum
}

// exclusion checks mutual exclusion on one clock: when a holder is granted,
// the previous holder's loss signal must have fired or it must have released.
type exclusion struct {
	mu         sync.Mutex
	holder     string
	lost       <-chan struct{}
	grants     int
	violations []string
}

func (x *exclusion) granted(id string, lost <-chan struct{}) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.holder != "" {
		select {
		case <-x.lost:
		default:
			x.violations = append(x.violations, fmt.Sprintf("%s granted while %s holds", id, x.holder))
		}
	}
	x.holder, x.lost = id, lost
	x.grants++
}

func (x *exclusion) released(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.holder == id {
		x.holder, x.lost = "", nil
	}
}

func (x *exclusion) check(t *testing.T) {
	t.Helper()
	x.mu.Lock()
	defer x.mu.Unlock()
	require.Empty(t, x.violations)
}
