package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/zktest"
)

// A hold costs no goroutine while it is held, whatever its kind: n holds on
// one session, each watching its own node (the server counts one watch per
// hold, no more), leave the process's goroutines as they were. (A goroutine per
// hold would add n.) What they cost in bytes and time is holdscale's to
// print, not a test's to bound.
func TestHoldsCostNoGoroutine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := zktest.StartCluster(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 200
	for _, kind := range []string{"lock", "nonfair-lock", "lease", "leader", "nonfair-leader"} {
		t.Run(kind, func(t *testing.T) {
			take, ok := kindOf(kind)
			if !ok {
				t.Fatalf("no kind %q", kind)
			}
			r, err := measure(ctx, c, take, n, 8, "/"+kind, func() error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			got := r.watch1 - r.watch0
			if got < n {
				t.Fatalf("the server holds %d watches more for %d holds: not every hold watches its node", got, n)
			}
			// One watch per hold, its node's, whatever the kind: a leader
			// keeps no watch of its election's handover record (an
			// operator's request writes the leader's node instead).
			if got > n+2 {
				t.Fatalf("the server holds %d watches more for %d holds: more than one per hold", got, n)
			}
			if d := r.g1 - r.g0; d > 2 {
				t.Fatalf("%d holds held: %d goroutines more (%d before, %d while held)", n, d, r.g0, r.g1)
			}
			t.Logf("%s: %d holds: %+d goroutines, %.0f heap bytes and %.2f server watches per hold",
				kind, n, r.g1-r.g0, r.heapPerHold(), r.watchesPerHold())
		})
	}
}

// The commands bench/README.md prints are holdscale's: their flags parse
// (running 100,000 holds is the benchmark's to do, not a test's).
func TestReadmeCommands(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const cmd = "go run ./bench/cmd/holdscale"
	n := 0
	for _, line := range strings.Split(string(readme), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, cmd) {
			continue
		}
		n++
		if _, err := parseArgs(strings.Fields(strings.TrimPrefix(line, cmd))); err != nil {
			t.Errorf("bench/README.md: %q: %v", line, err)
		}
	}
	if n == 0 {
		t.Fatal("bench/README.md prints no holdscale command")
	}
	for _, bad := range [][]string{{"-kind", "queue"}, {"-n", "0"}, {"-workers", "-1"}, {"extra"}} {
		if _, err := parseArgs(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}
