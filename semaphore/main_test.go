package semaphore_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
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
	os.Exit(testutil.Main(m, &zk, 1))
}

func uniquePath(t testing.TB) string { return testutil.UniquePath(t, "semaphore-test") }

func open(t testing.TB, servers []string, opts ...session.Option) *session.Session {
	return testutil.Open(t, servers, opts...)
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

func ctxT(t testing.TB, d time.Duration) context.Context { return testutil.Ctx(t, d) }

func children(t *testing.T, s *session.Session, path string) []string {
	return testutil.Children(t, s, path)
}

func notifications(t *testing.T) int64 { return testutil.Notifications(t, zk, 0) }

// watches is the number of watches the server holds.
func watches(t *testing.T) int64 { return testutil.WatchCount(t, zk, 0) }

// pinContainers keeps the semaphore's containers at path (locks, leases)
// from being removed while a test counts requests (see
// testutil.PinContainer): a take consumes the head's node, a release deletes
// the last lease. Call it while a lease is held (the path stays).
func pinContainers(t *testing.T, s *session.Session, path string) {
	t.Helper()
	for _, c := range []string{"locks", "leases"} {
		testutil.PinContainer(t, s, path+"/"+c)
	}
}
