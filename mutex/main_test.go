package mutex_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

var zk *zktest.Cluster // the package's shared standalone server

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m, &zk, 1))
}

func uniquePath(t testing.TB) string { return testutil.UniquePath(t, "mutex-test") }

func open(t testing.TB, servers []string, opts ...session.Option) *session.Session {
	return testutil.Open(t, servers, opts...)
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

// isClosed reports whether c is closed now.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// proxied opens a session through its own fault proxy.
func proxied(t *testing.T, timeout time.Duration) (*session.Session, *zktest.Proxy) {
	t.Helper()
	p, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return open(t, p.Addrs(), session.WithSessionTimeout(timeout)), p
}

func ctxT(t testing.TB, d time.Duration) context.Context { return testutil.Ctx(t, d) }

func children(t *testing.T, s *session.Session, path string) []string {
	return testutil.Children(t, s, path)
}

func notifications(t *testing.T) int64 { return testutil.Notifications(t, zk, 0) }

// watches is the number of watches the server holds.
func watches(t *testing.T) int64 { return testutil.WatchCount(t, zk, 0) }
