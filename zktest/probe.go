package zktest

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// What a cluster's servers say: whether they serve, their modes, the
// leader, four-letter words.

// WaitServing waits until every running node serves and, for an ensemble, one
// of them is the leader.
func (c *Cluster) WaitServing(ctx context.Context) error { return c.waitServing(ctx, false) }

// waitServing is WaitServing; with all, a node that is not running is an
// error, not skipped: a start or whole restart must find every server up.
// (A server whose port was taken exits within a second, long before the
// others serve: skipped, it left an ensemble serving without it and its
// address in Servers, where some other process listened.)
func (c *Cluster) waitServing(ctx context.Context, all bool) error {
	for i := range c.nodes {
		if !all && !c.Running(i) {
			continue
		}
		if err := c.waitNode(ctx, i); err != nil {
			return err
		}
	}
	if len(c.nodes) > 1 {
		return c.waitFor(ctx, func() bool { _, err := c.Leader(ctx); return err == nil })
	}
	return nil
}

// errExitedEarly: a server's process ended before it served.
var errExitedEarly = errors.New("exited before serving")

func (c *Cluster) waitNode(ctx context.Context, i int) error {
	exited := false
	err := c.waitFor(ctx, func() bool {
		if !c.Running(i) {
			exited = true
			return true
		}
		return c.Mode(ctx, i) != ""
	})
	if exited {
		return fmt.Errorf("zktest: server %d %w (see %s)", i, errExitedEarly, c.LogPath(i))
	}
	if err != nil {
		return fmt.Errorf("zktest: server %d (%s) not serving: %w", i, c.Addr(i), err)
	}
	return nil
}

// waitFor polls cond every 25ms until it holds or ctx ends. (The only polling
// in the project: a server's readiness can only be asked for.)
func (c *Cluster) waitFor(ctx context.Context, cond func() bool) error {
	t := time.NewTicker(25 * time.Millisecond)
	defer t.Stop()
	for {
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Mode is node i's "Mode:" from srvr: "standalone", "leader", "follower", or ""
// when it is down or not serving.
func (c *Cluster) Mode(ctx context.Context, i int) string {
	actx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	out, err := c.FourLetter(actx, i, "srvr")
	if err != nil {
		return ""
	}
	return serverMode(out)
}

// Leader returns the index of the node that is ZooKeeper's leader (0 for a
// standalone server that serves).
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	for i := range c.nodes {
		switch c.Mode(ctx, i) {
		case "leader", "standalone":
			return i, nil
		}
	}
	return -1, errors.New("zktest: no leader")
}

// FourLetter sends a four-letter word to node i.
func (c *Cluster) FourLetter(ctx context.Context, i int, word string) (string, error) {
	if i < 0 || i >= len(c.nodes) {
		return "", fmt.Errorf("zktest: no node %d", i)
	}
	return fourLetterWord(ctx, c.Addr(i), word, c.tlsClient())
}

// Mntr returns node i's monitoring counters (zk_packets_received,
// zk_watch_count, ...).
func (c *Cluster) Mntr(ctx context.Context, i int) (map[string]string, error) {
	out, err := c.FourLetter(ctx, i, "mntr")
	if err != nil {
		return nil, err
	}
	m := ParseMntr(out)
	if len(m) == 0 {
		return nil, fmt.Errorf("zktest: mntr: unexpected answer %q", out)
	}
	return m, nil
}
