package election_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/session"
)

// Run is the controller loop: it campaigns, calls OnElected with a context
// cancelled the moment leadership may be lost, and campaigns again after a
// loss until its own ctx ends. Here the leader does one round of work and
// shuts down, which hands leadership over at once.
func ExampleElection_Run() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// zk is this package's test server (main_test.go): use your ensemble's
	// addresses, e.g. []string{"zk1:2181", "zk2:2181", "zk3:2181"}.
	sess, err := session.Open(ctx, zk.Servers(), session.WithSessionTimeout(4*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	e, err := election.New(sess, "/services/billing/leader", "replica-a")
	if err != nil {
		log.Fatal(err)
	}
	runCtx, shutdown := context.WithCancel(ctx)
	defer shutdown()
	err = e.Run(runCtx, election.Callbacks{
		OnElected: func(ctx context.Context, term election.Term) {
			fmt.Println("elected")
			// Lead until ctx is cancelled; pass term to what you write (fencing).
			if err := lead(ctx, term); err != nil {
				log.Print(err)
			}
			shutdown() // this example leads once; a service leads until it stops
		},
		OnRevoked: func() { fmt.Println("revoked") },
		OnLeader:  func(l election.Leader) { fmt.Println("leader:", l.ID) },
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// leader: replica-a
	// elected
	// revoked
}

// Campaign is the latch-style use: block until elected, then lead with the
// Leadership it returns: its Context ends when leadership ends for any reason,
// its Lost closes only on a loss, and its Fenced writes land only while it
// holds. Resign hands over.
func ExampleElection_Campaign() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := session.Open(ctx, zk.Servers(), session.WithSessionTimeout(4*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	// The node the leader writes, created once.
	if err := fence.Ensure(ctx, sess, "/services/cron/state", nil); err != nil {
		log.Fatal(err)
	}

	e, err := election.New(sess, "/services/cron/leader", "replica-b")
	if err != nil {
		log.Fatal(err)
	}
	l, err := e.Campaign(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leading:", e.IsLeader())
	if err := lead(l.Context(), l.Term()); err != nil { // l.Context() ends when leadership does
		log.Fatal(err)
	}
	// A write that lands only while this leadership holds.
	_, err = l.Fenced(ctx, fence.Set("/services/cron/state", []byte(l.Term().String()), fence.AnyVersion))
	if err != nil {
		log.Fatal(err) // election.ErrLost if leadership was lost
	}
	fmt.Println("state written as leader")
	if err := l.Resign(ctx); err != nil {
		log.Fatal(err)
	}
	<-l.Context().Done() // ended by Resign; l.Lost() stays open: this was no loss
	select {
	case <-l.Lost():
		fmt.Println("lost")
	default:
		fmt.Println("resigned")
	}
	// Output:
	// leading: true
	// state written as leader
	// resigned
}

// lead stands for one round of a leader's work: done under ctx (it must stop
// when ctx ends) and fenced with term, so a deposed leader's writes can be
// refused.
func lead(ctx context.Context, term election.Term) error {
	if term <= 0 {
		return fmt.Errorf("no term")
	}
	return ctx.Err()
}
