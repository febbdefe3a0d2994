package semaphore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/semaphore"
)

// TestTopLevelPathAcquireN: a semaphore directly under the root, and
// directly under a namespace's own root (a path with no parent of its own to
// create), is acquired two leases at once, held and released like any other
// (one lease at a time: TestHoldContract/TopLevelPath), and leaves nothing
// behind but its containers (its path, locks and leases, which the server
// removes).
func TestTopLevelPathAcquireN(t *testing.T) {
	acquires := []struct {
		name    string
		n       int
		acquire func(*semaphore.Semaphore, context.Context) (*semaphore.Lease, error)
	}{
		{"AcquireN", 2, func(s *semaphore.Semaphore, ctx context.Context) (*semaphore.Lease, error) {
			return s.AcquireN(ctx, 2)
		}},
	}
	for _, namespaced := range []bool{false, true} {
		for _, a := range acquires {
			t.Run(fmt.Sprintf("%s/namespace=%v", a.name, namespaced), func(t *testing.T) {
				s, path, top := testutil.OpenTopLevel(t, zk.Servers(), "sem", namespaced)
				ctx := ctxT(t, 10*time.Second)
				sem, err := semaphore.New(s, path, 2)
				require.NoError(t, err)
				l, err := a.acquire(sem, ctx)
				require.NoError(t, err)
				require.Equal(t, a.n, l.Count())
				require.NoError(t, l.Validate(ctx), "the lease is not held")
				full := sem.Path()
				keep := []string{top, full, full + "/locks", full + "/leases"}
				require.Len(t, testutil.Leftovers(t, s, top, keep...), a.n, "a node for each lease")
				require.NoError(t, l.Release(ctx))
				require.Empty(t, testutil.Leftovers(t, s, top, keep...), "left behind")
			})
		}
	}
}
