// Command scheduler runs a singleton job: every -every, on the elected leader
// only, with the leadership's term (its fencing token) passed to the job. A
// job started by a leader that loses leadership is cancelled at once, and
// each run is recorded in a ZooKeeper node (-state) with a fenced write: it
// lands only while this leadership holds, so a deposed leader cannot record.
//
//	go run ./examples/scheduler -id a -every 2s
//	go run ./examples/scheduler -id b -every 2s   # standby until a goes away
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

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/session"
)

func main() {
	id := flag.String("id", "", "scheduler id (required)")
	zk := flag.String("zk", envOr("SHEPHERD_ZK", "127.0.0.1:2181"), "ZooKeeper connect string (env SHEPHERD_ZK)")
	path := flag.String("path", "/shepherd/examples/scheduler", "election path")
	state := flag.String("state", "/shepherd/examples/scheduler-state", "node recording the last run (fenced writes)")
	every := flag.Duration("every", 2*time.Second, "how often the job runs")
	work := flag.Duration("work", 500*time.Millisecond, "how long one run of the job takes")
	runs := flag.Int("runs", 0, "exit after this many runs of the job on this process (0: forever)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stdout, nil)).With("scheduler", *id)
	if *id == "" || *every <= 0 {
		fmt.Fprintln(os.Stderr, "scheduler: -id is required and -every must be positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *zk, *path, *state, *id, *every, *work, *runs, log); err != nil {
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

func run(ctx context.Context, zk, path, state, id string, every, work time.Duration, maxRuns int, log *slog.Logger) error {
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	sess, err := session.Connect(octx, zk, session.WithSessionTimeout(4*time.Second))
	cancel()
	if err != nil {
		return err
	}
	defer sess.Close()
	// The node each run is recorded in, created once (with its parents).
	if err := fence.Ensure(ctx, sess, state, nil); err != nil {
		return err
	}
	e, err := election.New(sess, path, id)
	if err != nil {
		return err
	}
	ctx, cancel = context.WithCancel(ctx)
	defer cancel()
	done := 0
	return e.Run(ctx, election.Callbacks{
		OnElected: func(lctx context.Context, term election.Term) {
			l := e.Leadership() // this leadership: its fenced writes
			if l == nil {
				return // already lost
			}
			log.Info("leader: scheduling the job", "term", term)
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				if err := job(lctx, term, work); err != nil {
					log.Warn("job cancelled", "term", term, "err", err)
				} else if _, err := l.Fenced(lctx, fence.Set(state, []byte(fmt.Sprintf("%s run by %s, term %v", time.Now().UTC().Format(time.RFC3339), id, term)), fence.AnyVersion)); err != nil {
					// election.ErrLost: leadership ended before the record landed.
					log.Warn("job done, not recorded", "term", term, "err", err)
				} else {
					log.Info("job done and recorded", "term", term)
				}
				done++
				if maxRuns > 0 && done >= maxRuns {
					cancel()
					return
				}
				select {
				case <-lctx.Done():
					return
				case <-t.C:
				}
			}
		},
		OnRevoked: func() { log.Info("not leader any more") },
	})
}

// job stands for the singleton work. It gets the term to fence what it
// writes (a store would reject writes carrying a lower term than it has
// seen), and stops when ctx is cancelled: when leadership may be lost.
func job(ctx context.Context, term election.Term, work time.Duration) error {
	select {
	case <-time.After(work):
		return nil
	case <-ctx.Done():
		return fmt.Errorf("term %v: %w", term, ctx.Err())
	}
}
