package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/core"
)

// Kazoo's default Lock counts children matching `__lock__(-?\d{10})$` and
// its ReadLock writes `__rlock__`: KazooNaming must give names of that shape
// whose guid ParseName reads back.
func TestKazooNames(t *testing.T) {
	guid := core.NewGUID()
	require.Len(t, guid, 32, "Kazoo's prefix is a uuid4().hex")
	for kind, want := range map[string]string{
		core.KindLock:  core.KindKazooLock,
		core.KindLatch: core.KindKazooLock,
		core.KindWrite: core.KindKazooLock,
		core.KindRead:  core.KindKazooRead,
	} {
		k := core.KazooNaming.Kind(kind)
		require.Equal(t, want, k)
		name := core.KazooNaming.Prefix(guid, k) + "0000000042"
		require.Equal(t, guid+want+"0000000042", name)
		n, ok := core.ParseName(name)
		require.True(t, ok, name)
		require.Equal(t, guid, n.GUID)
		require.Equal(t, want, n.Kind)
		require.EqualValues(t, 42, n.Seq)
		require.Equal(t, core.KazooNaming, core.NamingOf(n.Kind))

		c := core.CuratorNaming.Prefix(guid, core.CuratorNaming.Kind(kind)) + "0000000042"
		n, ok = core.ParseName(c)
		require.True(t, ok, c)
		require.Equal(t, guid, n.GUID)
		require.Equal(t, kind, n.Kind)
		require.Equal(t, core.CuratorNaming, core.NamingOf(n.Kind))
	}
	require.False(t, core.Naming(7).Valid())
}

// Kazoo sorts its contenders by the 10-digit sequence string; Sort orders
// Kazoo names by sequence number too, whatever their uuid.
func TestSortKazooNames(t *testing.T) {
	line := core.Sort([]string{
		"ffffffffffffffffffffffffffffffff__lock__0000000001",
		"00000000000000000000000000000000__rlock__0000000003",
		"11111111111111111111111111111111__lock__0000000002",
	})
	require.Len(t, line, 3)
	for i, n := range line {
		require.EqualValues(t, i+1, n.Seq)
	}
}
