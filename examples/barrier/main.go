// Command barrier is a double barrier written on shepherd's recipe toolkit
// (package recipe), as an example of a recipe of one's own: no member starts
// its work until -n members have arrived, and none goes on past the work
// until every member has finished it.
//
//	go run ./examples/barrier -id a -n 3 &
//	go run ./examples/barrier -id b -n 3 &
//	go run ./examples/barrier -id c -n 3
//
// The recipe is in barrier.go: a waiting line (recipe.Line) for the
// members, a hold (hold.Hold) for each member's place, one watch per
// waiter.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/shepherdzk/shepherd/session"
)

func main() {
	id := flag.String("id", "", "member id (required)")
	zk := flag.String("zk", envOr("SHEPHERD_ZK", "127.0.0.1:2181"), "ZooKeeper connect string (env SHEPHERD_ZK)")
	path := flag.String("path", "/shepherd/examples/barrier", "barrier path (one per round)")
	n := flag.Int("n", 3, "members the barrier waits for")
	work := flag.Duration("work", time.Second, "how long the work between the barriers takes")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stdout, nil)).With("member", *id)
	if *id == "" || *n < 1 {
		fmt.Fprintln(os.Stderr, "barrier: -id is required and -n must be at least 1")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *zk, *path, *id, *n, *work, log); err != nil {
		log.Error("barrier", "err", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run(ctx context.Context, zk, path, id string, n int, work time.Duration, log *slog.Logger) error {
	// Open keeps trying until a session is usable: bound it.
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	sess, err := session.Connect(octx, zk, session.WithSessionTimeout(4*time.Second))
	cancel()
	if err != nil {
		return err
	}
	defer sess.Close()
	b, err := NewBarrier(sess, path, n)
	if err != nil {
		return err
	}
	log.Info("waiting for the others", "members", n)
	m, err := b.Enter(ctx, []byte(id))
	if err != nil {
		return err
	}
	log.Info("entered: working", "work", work)
	select {
	case <-time.After(work): // the work being simulated
	case <-m.Lost():
		log.Warn("connection lost inside the barrier")
	case <-ctx.Done():
	}
	lctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Leave(lctx); err != nil {
		return err
	}
	log.Info("left: every member is done")
	return nil
}
