package admin

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/internal/wire/zkpath"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
)

// TestInspectPartAndLeases: Inspect of a part of a recipe's layout (a held
// semaphore's leases container) reports the recipe it is part of and no
// holders of its own; and lease nodes are never a line's holders, also
// where no stamp says whose they are (Curator's semaphore stamps nothing).
// Before, both were read as a mutex held by the first lease, and `shepherd
// revoke` at the leases container revoked that lease, one of two that no
// one named.
func TestInspectPartAndLeases(t *testing.T) {
	ctx := testutil.Ctx(t, 30*time.Second)
	s := testutil.Open(t, zkc.Servers())
	p := testutil.UniquePath(t, "inspect-part")
	sem, err := semaphore.New(s, p, 2)
	require.NoError(t, err)
	for range 2 {
		l, err := sem.Acquire(ctx)
		require.NoError(t, err)
		defer func() { require.NoError(t, l.Release(ctx)) }()
	}
	whole, err := Inspect(ctx, s, s.Path(p))
	require.NoError(t, err)
	require.Equal(t, "semaphore", whole.Kind)
	require.Len(t, whole.Holders, 2)

	part, err := Inspect(ctx, s, s.Path(p+"/leases"))
	require.NoError(t, err)
	require.Equal(t, s.Path(p), part.PartOf)
	require.Equal(t, "empty", part.Kind)
	require.Empty(t, part.Holders)
	require.Empty(t, part.Waiters)

	// Lease nodes under a parent that stamps nothing (as Curator's
	// InterProcessSemaphoreV2 leaves them).
	bare := s.Path(testutil.UniquePath(t, "inspect-bare-leases"))
	require.NoError(t, s.Do(ctx, func(ep *session.Epoch) error {
		for _, n := range append(zkpath.Parents(bare), bare, bare+"/leases") {
			if _, err := ep.Conn().Create(n, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return err
			}
		}
		for range 2 {
			if _, err := ep.Conn().Create(bare+"/leases/_c_0123456789abcdef0123456789abcdef-lease-", nil,
				zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
				return err
			}
		}
		return nil
	}))
	leases, err := Inspect(ctx, s, bare+"/leases")
	require.NoError(t, err)
	require.Empty(t, leases.PartOf, "no stamp says whose")
	require.Empty(t, leases.Holders, "lease nodes are no line's holders")
	require.Empty(t, leases.Waiters)
}
