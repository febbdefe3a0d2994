package schedule_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/shepherdzk/shepherd/schedule"
	"github.com/shepherdzk/shepherd/session"
)

// Every candidate runs the same schedule; the elected one runs the job once
// per tick, on ZooKeeper's clock. Here one candidate runs three ticks and
// stops, which records the third as finished and leaves the election.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// TestingServers is this package's test server (main_test.go): use your
	// ensemble's addresses, e.g. []string{"zk1:2181", "zk2:2181", "zk3:2181"}.
	sess, err := session.Open(ctx, schedule.TestingServers(), session.WithSessionTimeout(4*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	s, err := schedule.New(sess, "/examples/jobs/report", "worker-a", 100*time.Millisecond,
		// Late ticks still run, in order (up to 1,000 behind): all three
		// print, even on a machine that stalls for a second.
		schedule.WithCatchUp(schedule.CatchUpAll(1000)), schedule.WithRunTimeout(time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	runCtx, shutdown := context.WithCancel(ctx)
	defer shutdown()
	err = s.Run(runCtx, func(ctx context.Context, t schedule.Tick) error {
		// Key the job's effects by t.N and fence them with t.Term.
		fmt.Println("tick", t.N, "attempt", t.Attempt)
		if t.N == 2 {
			shutdown() // this example runs three ticks; a service runs until it stops
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// tick 0 attempt 1
	// tick 1 attempt 1
	// tick 2 attempt 1
}
