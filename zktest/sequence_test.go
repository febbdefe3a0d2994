package zktest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/zktest"
)

// TestSetSequence presets a parent's counter near the end of its range and
// shows what ZooKeeper 3.8 then does: the counter sticks at 2^31−1, so every
// later sequential child gets the same number.
func TestSetSequence(t *testing.T) {
	c := zktest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := connect(t, c.Servers())
	acl := zk.WorldACL(zk.PermAll)
	_, err := conn.Create("/seq", nil, 0, acl)
	require.NoError(t, err)
	_, err = conn.Create("/seq/a-", nil, zk.FlagSequence, acl)
	require.NoError(t, err)

	// The rewrite restarts the server, which may take longer than the
	// session's timeout on a loaded machine: a new session after it.
	conn.Close()
	require.NoError(t, c.SetSequence(ctx, "/seq", zktest.MaxSequence-2))
	conn = connect(t, c.Servers())
	var got []string
	for i := 0; i < 5; i++ {
		// Distinct prefixes (as protected creates have): with one prefix
		// the sixth name would be taken already (ErrNodeExists).
		prefix := fmt.Sprintf("/seq/n%d-", i)
		p, err := conn.Create(prefix, nil, zk.FlagSequence, acl)
		require.NoError(t, err)
		got = append(got, strings.TrimPrefix(p, prefix))
	}
	want := []string{"2147483645", "2147483646", "2147483647", "2147483647", "2147483647"}
	require.Equal(t, want, got, "the counter sticks at 2^31-1 (ZooKeeper 3.8)")
	// The node created before the preset is still there (the data was kept).
	ok, _, err := conn.Exists("/seq/a-0000000000")
	require.NoError(t, err)
	require.True(t, ok)

	// A counter only grows.
	require.Error(t, c.SetSequence(ctx, "/seq", 5))
	require.Error(t, c.SetSequence(ctx, "/nonexistent", 5))
}
