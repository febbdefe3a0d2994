// Command scheduler runs a singleton job with package schedule: once per
// -every, on the elected leader only, ticks counted on ZooKeeper's clock.
// The schedule's record (under -path) says which tick was started and
// finished, with fenced writes, so a new leader continues with the next
// tick instead of starting a fresh timer (a failover never runs a tick
// twice, and a tick cut short by a lost leader is run again, attempt 2).
// The job gets the leadership's term, its fencing token.
//
//	go run ./examples/scheduler -id a -every 2s
//	go run ./examples/scheduler -id b -every 2s   # standby until a goes away
//
// Each run logs a line "msg=tick n=N scheduled=... attempt=A term=T" on
// stdout; `make demo` (cmd/shepherd-demo) reads them to show a failover.
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

	"github.com/shepherdzk/shepherd/schedule"
	"github.com/shepherdzk/shepherd/session"
)

func main() {
	id := flag.String("id", "", "scheduler id (required)")
	zk := flag.String("zk", envOr("SHEPHERD_ZK", "127.0.0.1:2181"), "ZooKeeper connect string (env SHEPHERD_ZK)")
	path := flag.String("path", "/shepherd/examples/scheduler", "schedule path (its election and its record live under it)")
	every := flag.Duration("every", 2*time.Second, "how often the job runs (the same for every scheduler of -path)")
	work := flag.Duration("work", 500*time.Millisecond, "how long one run of the job takes")
	runs := flag.Int("runs", 0, "exit after this many runs of the job on this process (0: forever)")
	sessionTimeout := flag.Duration("session-timeout", 4*time.Second, "ZooKeeper session timeout (a crashed leader is replaced after it)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stdout, nil)).With("scheduler", *id)
	if *id == "" || *every < time.Millisecond || *sessionTimeout <= 0 {
		fmt.Fprintln(os.Stderr, "scheduler: -id is required, -every must be at least 1ms and -session-timeout positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *zk, *path, *id, *every, *work, *runs, *sessionTimeout, log); err != nil {
		log.Error("scheduler", "err", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run(ctx context.Context, zk, path, id string, every, work time.Duration, maxRuns int, sessionTimeout time.Duration, log *slog.Logger) error {
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	sess, err := session.Connect(octx, zk, session.WithSessionTimeout(sessionTimeout))
	cancel()
	if err != nil {
		return err
	}
	defer sess.Close()
	s, err := schedule.New(sess, path, id, every, schedule.WithRunTimeout(10*every))
	if err != nil {
		return err
	}
	ctx, cancel = context.WithCancel(ctx)
	defer cancel()
	done := 0
	// Run returns once ctx ends (a signal, or -runs reached) and the job in
	// flight has returned: its end is recorded and the next scheduler takes
	// over with the next tick.
	return s.Run(ctx, func(ctx context.Context, t schedule.Tick) error {
		log.Info("tick", "n", t.N, "scheduled", t.Scheduled.UTC().Format(time.RFC3339Nano), "attempt", t.Attempt, "term", t.Term)
		err := job(ctx, t, work)
		if err != nil {
			log.Warn("job cancelled", "n", t.N, "err", err)
		}
		done++
		if maxRuns > 0 && done >= maxRuns {
			cancel()
		}
		return err
	})
}

// job stands for the singleton work. It gets the tick (key its effects by
// t.N, so a rerun after a lost leader does not repeat them) and the term to
// fence what it writes (a store would reject writes carrying a lower term
// than it has seen), and stops when ctx is cancelled: when leadership may be
// lost.
func job(ctx context.Context, t schedule.Tick, work time.Duration) error {
	select {
	case <-time.After(work):
		return nil
	case <-ctx.Done():
		return fmt.Errorf("tick %d, term %v: %w", t.N, t.Term, ctx.Err())
	}
}
