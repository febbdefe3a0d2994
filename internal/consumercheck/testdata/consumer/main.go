// Command consumer is a fresh module that depends on shepherd the way a user's
// does (scripts/consumercheck.sh copies it to a temporary directory and
// resolves shepherd through a module proxy). It starts a ZooKeeper with
// zktest, takes a lock, a semaphore lease and an election's leadership, and
// exits 0 only if all three worked and it was built against unreplaced
// modules.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "consumer: FAIL:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	if err := checkBuild(); err != nil {
		return err
	}
	zkc, err := zktest.StartCluster(ctx, 1)
	if err != nil {
		return err
	}
	defer zkc.Close()
	sess, err := session.Open(ctx, zkc.Servers(), session.WithSessionTimeout(4*time.Second))
	if err != nil {
		return fmt.Errorf("open a session: %w", err)
	}
	defer sess.Close()

	for _, check := range []func(context.Context, *session.Session) (string, error){lock, lease, lead} {
		what, err := check(ctx, sess)
		if err != nil {
			return err
		}
		fmt.Println("OK", what)
	}
	return nil
}

// checkBuild reports the modules the program was built with, and fails if any
// of them was replaced: a consumer must build against what it resolved.
func checkBuild() error {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return errors.New("no build information")
	}
	for _, d := range bi.Deps {
		if d.Replace != nil {
			return fmt.Errorf("%s@%s is replaced by %s %s", d.Path, d.Version, d.Replace.Path, d.Replace.Version)
		}
		fmt.Printf("OK built with %s %s\n", d.Path, d.Version)
	}
	return nil
}

func lock(ctx context.Context, sess *session.Session) (string, error) {
	m, err := mutex.New(sess, "/consumercheck/lock")
	if err != nil {
		return "", err
	}
	if err := m.Lock(ctx); err != nil {
		return "", fmt.Errorf("mutex: lock: %w", err)
	}
	tok, err := m.Token(ctx)
	if err != nil {
		return "", fmt.Errorf("mutex: token: %w", err)
	}
	if err := m.Unlock(ctx); err != nil {
		return "", fmt.Errorf("mutex: unlock: %w", err)
	}
	return fmt.Sprintf("mutex: locked and unlocked (token %v)", tok), nil
}

func lease(ctx context.Context, sess *session.Session) (string, error) {
	sem, err := semaphore.New(sess, "/consumercheck/semaphore", 2)
	if err != nil {
		return "", err
	}
	l, err := sem.Acquire(ctx)
	if err != nil {
		return "", fmt.Errorf("semaphore: acquire: %w", err)
	}
	n := l.Count()
	if err := l.Release(ctx); err != nil {
		return "", fmt.Errorf("semaphore: release: %w", err)
	}
	return fmt.Sprintf("semaphore: %d of 2 leases held and released", n), nil
}

func lead(ctx context.Context, sess *session.Session) (string, error) {
	e, err := election.New(sess, "/consumercheck/election", "consumer")
	if err != nil {
		return "", err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var term election.Term
	err = e.Run(runCtx, election.Callbacks{
		OnElected: func(ctx context.Context, t election.Term) {
			term = t
			stop() // elected once: enough
		},
	})
	if err != nil {
		return "", fmt.Errorf("election: run: %w", err)
	}
	if term == 0 {
		return "", fmt.Errorf("election: not elected: %w", ctx.Err())
	}
	return fmt.Sprintf("election: elected (term %v)", term), nil
}
