package session_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// A session is the unit of liveness: recipes borrow it. Open keeps trying the
// servers until it has a session or its ctx ends, so give it a deadline.
func ExampleOpen() {
	// A throwaway ZooKeeper for the example (package zktest); a service uses
	// its ensemble's addresses, e.g. []string{"zk1:2181", "zk2:2181", "zk3:2181"}.
	srv, err := zktest.StartCluster(context.Background(), 1)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	servers := srv.Servers()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := session.Open(ctx, servers, session.WithSessionTimeout(4*time.Second))
	if err != nil {
		log.Fatal(err) // ctx.Err() when no server answered in time
	}
	defer sess.Close()
	fmt.Println("state:", sess.State())

	// Every listener sees every transition, in order, on a goroutine of its own.
	events := make(chan session.State, 16)
	stop := sess.Listen(func(ev session.Event) { events <- ev.State })
	defer stop()

	if err := sess.Close(); err != nil {
		log.Fatal(err)
	}
	for st := range events {
		fmt.Println("event:", st)
		if st == session.Closed { // the last event
			break
		}
	}
	// Output:
	// state: Connected
	// event: Closed
}
