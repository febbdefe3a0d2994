package zktest

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

//go:embed java/SetSequence.java
var setSequenceJava []byte

// MaxSequence is the largest sequence number ZooKeeper gives a sequential
// node (2^31−1, a signed 32-bit counter). On ZooKeeper 3.8 a parent's counter
// does not wrap there: it sticks, and every later child gets this number.
const MaxSequence = 1<<31 - 1

// SetSequence presets the counter that names path's next sequential child:
// the next EPHEMERAL_SEQUENTIAL (or PERSISTENT_SEQUENTIAL) child of path is
// named …next, the one after …next+1, and so on. path must exist, and next
// must not be below the counter's current value (a counter only grows).
//
// ZooKeeper offers no request that moves the counter (it is the parent's
// cversion, one step per child created), so a test could not
// otherwise reach the end of its range. SetSequence stops every node
// gracefully, rewrites each node's data offline (java/SetSequence.java, run
// with the server's own classes: it loads the snapshot and the log, raises
// the node's cversion, and writes a new snapshot), then starts the nodes
// again and waits until they serve. Sessions survive if it finishes within
// their timeout, as with RestartAll; it takes a few seconds (the JVM).
func (c *Cluster) SetSequence(ctx context.Context, path string, next int32) error {
	if next < 0 {
		return fmt.Errorf("zktest: SetSequence %s: negative sequence %d", path, next)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errors.New("zktest: cluster closed")
	}
	src := filepath.Join(c.dir, "SetSequence.java")
	err := os.WriteFile(src, setSequenceJava, 0o644)
	for _, n := range c.nodes {
		n.signal(syscall.SIGTERM, 5*time.Second)
	}
	for _, n := range c.nodes {
		if err != nil {
			break
		}
		cmd := exec.CommandContext(ctx, "java", "-Xmx64m", "-XX:TieredStopAtLevel=1",
			"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
			"-cp", c.cfg.classpath, src, filepath.Join(n.dir, "data"), path, fmt.Sprint(next))
		if out, rerr := cmd.CombinedOutput(); rerr != nil {
			err = fmt.Errorf("zktest: SetSequence %s on server %d: %w\n%s", path, n.id, rerr, out)
		}
	}
	// Start the nodes again even if the rewrite failed: the caller's
	// cluster keeps serving with its data as it was.
	for _, n := range c.nodes {
		if serr := n.start(c.sp, &c.cfg); serr != nil && err == nil {
			err = serr
		}
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.WaitServing(ctx)
}
