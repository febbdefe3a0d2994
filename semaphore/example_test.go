package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
)

// At most three holders across every process using the path: a lease guards
// one call to a rate-limited API.
func ExampleSemaphore() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// zk is this package's test server (main_test.go): use your ensemble's
	// addresses, e.g. []string{"zk1:2181", "zk2:2181", "zk3:2181"}.
	sess, err := session.Open(ctx, zk.Servers(), session.WithSessionTimeout(4*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	sem, err := semaphore.New(sess, "/limits/api", 3)
	if err != nil {
		log.Fatal(err)
	}
	lease, err := sem.Acquire(ctx) // or AcquireN(ctx, n): all n or none
	if err != nil {
		log.Fatal(err) // semaphore.ErrMaxLeasesMismatch if the path records another limit
	}
	fmt.Println("leases held:", lease.Count())
	if err := callAPI(lease.Context()); err != nil { // lease.Context() ends if the lease may be lost
		log.Fatal(err)
	}
	if err := lease.Release(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("released")
	// Output:
	// leases held: 1
	// released
}

// TryAcquire takes a lease only if one is free now and nobody waits.
func ExampleSemaphore_TryAcquire() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := session.Open(ctx, zk.Servers(), session.WithSessionTimeout(4*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	sem, err := semaphore.New(sess, "/limits/export", 1)
	if err != nil {
		log.Fatal(err)
	}
	first, err := sem.TryAcquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first lease:", first.Count())
	_, err = sem.TryAcquire(ctx)
	switch {
	case errors.Is(err, semaphore.ErrNoLease):
		fmt.Println("second: no lease free")
	case err != nil:
		log.Fatal(err)
	default:
		log.Fatal("a second lease beyond the limit")
	}
	if err := first.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// first lease: 1
	// second: no lease free
}

// callAPI stands for the work a lease guards: it stops when ctx ends.
func callAPI(ctx context.Context) error { return ctx.Err() }
