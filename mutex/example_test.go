package mutex_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
)

// A fair lock guarding a job: the holder gets a fencing token, works under
// the lock's context (cancelled the moment the lock may be lost) and records
// its result with a write that lands only while the lock is held.
func ExampleMutex() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// zk is this package's test server (main_test.go): use your ensemble's
	// addresses, e.g. []string{"zk1:2181", "zk2:2181", "zk3:2181"}.
	sess, err := session.Open(ctx, zk.Servers(), session.WithSessionTimeout(4*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	// The state the lock guards, a node of the application's own: created
	// once, with its parents, if missing.
	if err := fence.Ensure(ctx, sess, "/jobs/backup/state", nil); err != nil {
		log.Fatal(err)
	}

	m, err := mutex.New(sess, "/jobs/backup/lock")
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("locked")
	tok, err := m.Token(ctx) // the fencing token: it grows with every grant
	if err != nil {
		log.Fatal(err)
	}
	if err := backup(m.Context(), tok); err != nil { // m.Context() ends if the lock may be lost
		log.Fatal(err)
	}
	// A write that lands only while the lock is held (one multi-op).
	_, err = m.Fenced(ctx, fence.Set("/jobs/backup/state", []byte(tok.String()), fence.AnyVersion))
	if err != nil {
		log.Fatal(err) // mutex.ErrLost if the lock was lost
	}
	fmt.Println("state written under the lock")
	if err := m.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("released")
	// Output:
	// locked
	// state written under the lock
	// released
}

// TryLock takes the lock only if it is free now.
func ExampleMutex_TryLock() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := session.Open(ctx, zk.Servers(), session.WithSessionTimeout(4*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	a, err := mutex.New(sess, "/jobs/report/lock")
	if err != nil {
		log.Fatal(err)
	}
	b, err := mutex.New(sess, "/jobs/report/lock") // another holder (a *Mutex value is the owner)
	if err != nil {
		log.Fatal(err)
	}
	ok, err := a.TryLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("a locked:", ok)
	ok, err = b.TryLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("b locked:", ok)
	if err := a.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// a locked: true
	// b locked: false
}

// backup stands for the work the lock guards: it stops when ctx ends and
// hands token to what it writes, so a stale holder's writes can be refused.
func backup(ctx context.Context, token hold.Token) error {
	if token <= 0 {
		return fmt.Errorf("no fencing token")
	}
	return ctx.Err()
}
