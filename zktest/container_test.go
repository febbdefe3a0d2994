package zktest_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/zktest"
)

// TestContainerCleanup: a container node that had a child and has none left
// is removed within the (short) check interval zktest configures.
func TestContainerCleanup(t *testing.T) {
	c := zktest.Start(t, 1)
	conn := connect(t, c.Servers())
	acl := zk.WorldACL(zk.PermAll)
	_, err := conn.CreateContainer("/box", nil, zk.FlagContainer, acl)
	require.NoError(t, err)
	_, err = conn.Create("/box/x", nil, 0, acl)
	require.NoError(t, err)
	// go-zookeeper's Multi sends creates with the plain create opcode, and
	// the server refuses the container flag there: a container must be
	// created on its own (CreateContainer).
	_, err = conn.Multi(&zk.CreateRequest{Path: "/multi", Acl: acl, Flags: zk.FlagContainer})
	require.ErrorIs(t, err, zk.ErrAPIError)
	require.NoError(t, conn.Delete("/box/x", -1))
	start := time.Now()
	require.Eventually(t, func() bool {
		ok, _, err := conn.Exists("/box")
		return err == nil && !ok
	}, 5*time.Second, 10*time.Millisecond, "the empty container stayed")
	t.Logf("container removed after %v", time.Since(start))
}
