package semaphore_test

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

	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

var zk *zktest.Cluster // the package's shared standalone server

func TestMain(m *testing.M) {
	if os.Getenv(holderEnv) != "" {
		runHolder()
		return
	}
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
	return fmt.Sprintf("/semaphore-test/%s-%d", t.Name(), pathN.Add(1))
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

// bound checks the limit on one clock: a lease counts as in use from its
// grant until its holder releases it or its loss signal fires.
type bound struct {
	mu         sync.Mutex
	max        int
	inUse      map[*semaphore.Lease]int
	peak       int
	grants     int
	violations []string
}

func newBound(max int) *bound { return &bound{max: max, inUse: map[*semaphore.Lease]int{}} }

func (b *bound) granted(id string, l *semaphore.Lease) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for h, c := range b.inUse {
		select {
		case <-h.Lost():
			delete(b.inUse, h)
		default:
			n += c
		}
	}
	n += l.Count()
	if n > b.max {
		b.violations = append(b.violations, fmt.Sprintf("%s granted %d: %d leases in use, limit %d", id, l.Count(), n, b.max))
	}
	b.peak = max(b.peak, n)
	b.inUse[l] = l.Count()
	b.grants++
}

func (b *bound) released(l *semaphore.Lease) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.inUse, l)
}

func (b *bound) check(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Empty(t, b.violations)
}
