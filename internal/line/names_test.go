package line_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/line"
)

// Kazoo's default Lock counts children matching `__lock__(-?\d{10})$` and
// its ReadLock writes `__rlock__`: KazooNaming must give names of that shape
// whose guid ParseName reads back.
func TestKazooNames(t *testing.T) {
	guid := line.NewGUID()
	require.Len(t, guid, 32, "Kazoo's prefix is a uuid4().hex")
	for kind, want := range map[string]string{
		line.KindLock:  line.KindKazooLock,
		line.KindLatch: line.KindKazooLock,
		line.KindWrite: line.KindKazooLock,
		line.KindRead:  line.KindKazooRead,
	} {
		k := line.KazooNaming.Kind(kind)
		require.Equal(t, want, k)
		name := line.KazooNaming.Prefix(guid, k) + "0000000042"
		require.Equal(t, guid+want+"0000000042", name)
		n, ok := line.ParseName(name)
		require.True(t, ok, name)
		require.Equal(t, guid, n.GUID)
		require.Equal(t, want, n.Kind)
		require.EqualValues(t, 42, n.Seq)
		require.Equal(t, line.KazooNaming, line.NamingOf(n.Kind))

		c := line.CuratorNaming.Prefix(guid, line.CuratorNaming.Kind(kind)) + "0000000042"
		n, ok = line.ParseName(c)
		require.True(t, ok, c)
		require.Equal(t, guid, n.GUID)
		require.Equal(t, kind, n.Kind)
		require.Equal(t, line.CuratorNaming, line.NamingOf(n.Kind))
	}
	require.False(t, line.Naming(7).Valid())
}

// Kazoo sorts its contenders by the 10-digit sequence string; Sort orders
// Kazoo names by sequence number too, whatever their uuid.
func TestSortKazooNames(t *testing.T) {
	ln := line.Sort([]string{
		"ffffffffffffffffffffffffffffffff__lock__0000000001",
		"00000000000000000000000000000000__rlock__0000000003",
		"11111111111111111111111111111111__lock__0000000002",
	})
	require.Len(t, ln, 3)
	for i, n := range ln {
		require.EqualValues(t, i+1, n.Seq)
	}
}
