package main_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
)

// TestCLILostLeavesNoNode: under the stop policy a CLI holder whose
// connection is lost stops CMD and exits 5; once CMD is gone it removes its
// own nodes when the connection returns (within the session timeout), so
// that when it has exited the next in line is not kept waiting for the
// server to expire its session. Issue 36 (8): on b9d4272 shepherd exited at
// once, leaving its node (a waiter was granted 10.5 s later).
func TestCLILostLeavesNoNode(t *testing.T) {
	t.Parallel()
	for _, sub := range []string{"lock", "semaphore"} {
		t.Run(sub, func(t *testing.T) {
			t.Parallel()
			r := startPauseRun(t, sub, "8s")
			reconnect := r.disconnect()
			r.waitStderr(t, "lost: stopping sh", 1)
			r.waitStderr(t, "removing the hold's node once ZooKeeper is back", 1)
			reconnect()
			require.Equal(t, 5, r.exitCode(t), "lost: %s", r.errb)
			op := testutil.Open(t, zk.Servers())
			var left []string
			switch sub {
			case "lock":
				left = testutil.Children(t, op, r.path)
			case "semaphore":
				left = append(testutil.Children(t, op, r.path+"/leases"), testutil.Children(t, op, r.path+"/slots")...)
			}
			require.Empty(t, left, "nodes left behind by the exited holder; stderr: %s", r.errb)
		})
	}
}
