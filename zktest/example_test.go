package zktest_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// A real ZooKeeper for your own tests: StartCluster in TestMain, shared by
// the package's tests, each on a path of its own:
//
//	var zkc *zktest.Cluster
//
//	func TestMain(m *testing.M) {
//		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
//		c, err := zktest.StartCluster(ctx, 1) // 3 or 5 for an ensemble
//		cancel()
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err) // zktest.ErrNotInstalled without ZooKeeper
//			os.Exit(1)
//		}
//		zkc = c
//		code := m.Run()
//		c.Close()
//		os.Exit(code)
//	}
//
// or, for one test, zktest.Start(t, 1), stopped when the test ends.
func ExampleStartCluster() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zkc, err := zktest.StartCluster(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	defer zkc.Close()
	fmt.Println("mode:", zkc.Mode(ctx, 0))

	sess, err := session.Open(ctx, zkc.Servers(), session.WithSessionTimeout(4*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	fmt.Println("session:", sess.State())
	// Output:
	// mode: standalone
	// session: Connected
}

// A Proxy between a client and the servers injects network faults: here a
// partition (Stall) makes a lock holder's loss signal fire, as a real one would
// before the server can expire the session and grant the lock to another.
func ExampleProxy() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zkc, err := zktest.StartCluster(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	defer zkc.Close()
	proxy, err := zktest.NewProxy(zkc.Servers()...)
	if err != nil {
		log.Fatal(err)
	}
	defer proxy.Close()

	// The client talks to ZooKeeper through the proxy only.
	sess, err := session.Open(ctx, proxy.Addrs(), session.WithSessionTimeout(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	m, err := mutex.New(sess, "/jobs/backup/lock")
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("locked")

	proxy.Stall() // a partition: no byte passes either way
	select {
	case <-m.Lost():
		fmt.Println("lock lost: stop working on what it guards")
	case <-ctx.Done():
		log.Fatal("the loss signal did not fire")
	}
	proxy.Heal() // connections are closed; the client reconnects
	// The hold is over: Unlock says so, and the lock's node is removed once
	// the connection is back (or by the server, with the session).
	err = m.Unlock(ctx)
	fmt.Println("unlock reports ErrLost:", errors.Is(err, mutex.ErrLost))
	// Output:
	// locked
	// lock lost: stop working on what it guards
	// unlock reports ErrLost: true
}
