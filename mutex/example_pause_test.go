package mutex_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
)

// A lock that rides through a network blip or a ZooKeeper restart: with
// session.PauseOnDisconnect, a lost connection pauses the hold instead of
// ending it. The holder stops acting while paused and goes on once the same
// session is back; it stops for good only if the lock is lost.
func ExampleWithDisconnectPolicy() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	servers := zk.Servers() // this package's test server: use your ensemble's addresses
	sess, err := session.Open(ctx, servers, session.WithSessionTimeout(4*time.Second),
		session.WithDisconnectPolicy(session.PauseOnDisconnect)) // every recipe of the session
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	m, err := mutex.New(sess, "/jobs/import/lock")
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	for step := 0; step < 3; step++ {
		select {
		case <-m.Paused(): // the connection is lost; the session may live
			if err := m.Gate(ctx); err != nil { // wait: resumed (nil) or lost
				log.Fatal(err) // mutex.ErrLost: stop the work
			}
		case <-m.Lost():
			log.Fatal("lock lost")
		default:
		}
		fmt.Println("step", step, "under the lock")
	}
	if err := m.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// step 0 under the lock
	// step 1 under the lock
	// step 2 under the lock
}
