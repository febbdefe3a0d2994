// A consumer of github.com/shepherdzk/shepherd/contrib/gocron: it builds
// against the module as an importer resolves it (scripts/consumercheck.sh).
// Run, it starts a ZooKeeper with zktest and runs a gocron job with the
// Locker and one with the Elector, until each has run.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	gocronv2 "github.com/go-co-op/gocron/v2"

	"github.com/shepherdzk/shepherd/contrib/gocron"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zkc, err := zktest.StartCluster(ctx, 1)
	if err != nil {
		return err
	}
	defer zkc.Close()
	sess, err := session.Open(ctx, zkc.Servers())
	if err != nil {
		return err
	}
	defer sess.Close()
	l, err := gocron.NewLocker(sess, "/consumer/gocron", "consumer", gocron.JobEvery("report", time.Second),
		gocron.WithTolerance(200*time.Millisecond))
	if err != nil {
		return err
	}
	el, err := gocron.StartElector(ctx, sess, "/consumer/gocron-leader", "consumer")
	if err != nil {
		return err
	}
	defer el.Close()
	ran := make(chan string, 100)
	for name, opt := range map[string]gocronv2.SchedulerOption{"report": gocronv2.WithDistributedLocker(l),
		"leader": gocronv2.WithDistributedElector(el)} {
		s, err := gocronv2.NewScheduler(opt)
		if err != nil {
			return err
		}
		if _, err := s.NewJob(gocronv2.DurationJob(time.Second), gocronv2.NewTask(func() { ran <- name }),
			gocronv2.WithName(name)); err != nil {
			return err
		}
		s.Start()
		defer s.Shutdown()
	}
	seen := map[string]bool{}
	for len(seen) < 2 {
		select {
		case name := <-ran:
			seen[name] = true
		case <-ctx.Done():
			return fmt.Errorf("jobs run: %v", seen)
		}
	}
	fmt.Println("gocron jobs ran with shepherd's Locker and Elector")
	return nil
}
