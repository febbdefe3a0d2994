package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/shepherdzk/shepherd/zktest"
)

// devTick is the dev servers' tickTime: sessions of 2 to 120 ticks (1s to
// 60s) are granted, the CLI's default 10s among them.
const devTick = 500 * time.Millisecond

// devServe runs until ctx ends, reporting a server that dies; SIGHUP
// restarts the servers one by one (a rolling restart).
func (c *cli) devServe(ctx context.Context, zk *zktest.Cluster) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	// Report a server that dies under us; the check is cheap and rare.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(c.stderr, "shepherd dev: stopping ZooKeeper")
			if err := zk.Close(); err != nil {
				return fmt.Errorf("dev: %w", err)
			}
			return nil
		case <-hup:
			if err := c.rollingRestart(ctx, zk); err != nil {
				if ctx.Err() != nil {
					continue // stopping
				}
				return fmt.Errorf("dev: rolling restart: %w", err)
			}
		case <-tick.C:
			for i := range zk.Size() {
				if !zk.Running(i) {
					return fmt.Errorf("dev: ZooKeeper server %d exited; its log:\n%s", i+1, zk.LogTail(i, 20))
				}
			}
		}
	}
}

// rollingRestart restarts each server in turn, the next once the last one
// serves again, as an operator restarts an ensemble without losing its
// quorum.
func (c *cli) rollingRestart(ctx context.Context, zk *zktest.Cluster) error {
	n := zk.Size()
	began := time.Now()
	for i := range n {
		fmt.Fprintf(c.stderr, "shepherd dev: rolling restart: server %d of %d (%s)...\n", i+1, n, zk.Addr(i))
		t := time.Now()
		rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		err := zk.Restart(rctx, i)
		cancel()
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "shepherd dev: rolling restart: server %d serves again after %v\n", i+1, time.Since(t).Round(100*time.Millisecond))
	}
	fmt.Fprintf(c.stderr, "shepherd dev: rolling restart done (%v)\n", time.Since(began).Round(100*time.Millisecond))
	return nil
}
