package election_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/session"
)

// A deploy: the old version leads; the new one, of a higher priority, joins
// the line; the old leader hands over to the best candidate, which leads
// next (ahead of any candidate in line before it).
func ExampleLeadership_HandOver() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := session.Open(ctx, zk.Servers(), session.WithSessionTimeout(4*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	old, err := election.New(sess, "/services/web/leader", "web-a",
		election.WithPriority(10402), election.WithAttributes(map[string]string{"version": "1.4.2"}))
	if err != nil {
		log.Fatal(err)
	}
	l, err := old.Campaign(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leading: web-a")

	// The new version (another process, in a real deploy) waits in line.
	next, err := election.New(sess, "/services/web/leader", "web-b",
		election.WithPriority(10500), election.WithAttributes(map[string]string{"version": "1.5.0"}))
	if err != nil {
		log.Fatal(err)
	}
	inLine, elected := make(chan struct{}), make(chan struct{})
	var once sync.Once
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() {
		ran <- next.Run(runCtx, election.Callbacks{
			OnElected: func(ctx context.Context, _ election.Term) {
				close(elected)
				<-ctx.Done()
			},
			OnLeader: func(election.Leader) { once.Do(func() { close(inLine) }) },
		})
	}()
	<-inLine

	// To the best candidate ("": the highest priority); or name one.
	if err := l.HandOver(ctx, ""); err != nil {
		log.Fatal(err) // election.ErrNoCandidate, ErrHandOverRefused: still leading
	}
	<-elected
	cur, err := old.Leader(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leading:", cur.ID, cur.Attributes()["version"])
	stop()
	if err := <-ran; err != nil {
		log.Fatal(err)
	}
	// Output:
	// leading: web-a
	// leading: web-b 1.5.0
}
