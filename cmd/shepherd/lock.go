package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/semaphore"
)

func defaultID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

func cmdLock(ctx context.Context, o *options, args []string, stderr io.Writer, stopSignals func()) error {
	fs := flag.NewFlagSet("lock", flag.ContinueOnError)
	id := fs.String("id", defaultID(), "holder `ID` stored in the lock's node (shown by status)")
	nonFair := fs.Bool("nonfair", false, "race for a single node instead of queueing (no FIFO)")
	path, argv, err := parse(fs, o, args, true)
	if err != nil {
		return err
	}
	opts := []mutex.Option{mutex.WithData([]byte(*id))}
	if *nonFair {
		opts = append(opts, mutex.NonFair())
	}
	sess, err := connect(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer sess.Close()
	m, err := mutex.New(sess, path, opts...)
	if err != nil {
		return usagef("lock: %v", err)
	}
	actx, cancel := acquireCtx(ctx, o)
	err = m.Lock(actx)
	cancel()
	if err != nil {
		return acquireError(ctx, o, "lock", path, err)
	}
	tctx, tcancel := context.WithTimeout(context.Background(), 10*time.Second)
	tok, err := m.Token(tctx)
	tcancel()
	if err != nil {
		_ = m.Unlock(context.Background())
		return exitCode{exitLost, fmt.Errorf("lock %s lost at once: %w", path, err)}
	}
	if o.verbose {
		fmt.Fprintf(stderr, "shepherd: locked %s (token %v, node %s)\n", path, tok, m.Node())
	}
	env := holdEnv(tok, m.Node(), path)
	err = supervise(ctx, o, argv, env, m.Lost(), "lock", stopSignals, stderr)
	uctx, ucancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ucancel()
	if uerr := m.Unlock(uctx); uerr != nil && !errors.Is(uerr, mutex.ErrLost) && o.verbose {
		fmt.Fprintln(stderr, "shepherd: unlock:", uerr)
	}
	return err
}

func cmdSemaphore(ctx context.Context, o *options, args []string, stderr io.Writer, stopSignals func()) error {
	fs := flag.NewFlagSet("semaphore", flag.ContinueOnError)
	n := fs.Int("n", 0, "maxLeases: at most `N` holders at once (required; must match the path's)")
	id := fs.String("id", defaultID(), "holder `ID` stored in the lease's node (shown by status)")
	path, argv, err := parse(fs, o, args, true)
	if err != nil {
		return err
	}
	if *n < 1 {
		return usagef("semaphore: -n N is required and must be at least 1")
	}
	sess, err := connect(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer sess.Close()
	sem, err := semaphore.New(sess, path, *n, semaphore.WithData([]byte(*id)))
	if err != nil {
		return usagef("semaphore: %v", err)
	}
	actx, cancel := acquireCtx(ctx, o)
	l, err := sem.Acquire(actx)
	cancel()
	if err != nil {
		return acquireError(ctx, o, "semaphore", path, err)
	}
	tctx, tcancel := context.WithTimeout(context.Background(), 10*time.Second)
	tok, err := l.Token(tctx)
	tcancel()
	if err != nil {
		_ = l.Release(context.Background())
		return exitCode{exitLost, fmt.Errorf("lease on %s lost at once: %w", path, err)}
	}
	env := holdEnv(tok, l.Nodes()[0], path)
	err = supervise(ctx, o, argv, env, l.Lost(), "lease", stopSignals, stderr)
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	_ = l.Release(rctx)
	return err
}

func holdEnv(tok recipe.Token, node, path string) []string {
	return []string{"SHEPHERD_TOKEN=" + fmt.Sprint(int64(tok)), "SHEPHERD_NODE=" + node, "SHEPHERD_PATH=" + path}
}

// acquireError maps a failed acquisition to an exit status.
func acquireError(ctx context.Context, o *options, what, path string, err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return exitCode{exitTimeout, fmt.Errorf("%s %s: not acquired within %v", what, path, o.timeout)}
	case ctx.Err() != nil:
		return exitCode{130, fmt.Errorf("%s %s: interrupted while waiting", what, path)}
	case errors.Is(err, recipe.ErrMaxLeasesMismatch) || errors.Is(err, recipe.ErrWrongKind):
		return usagef("%s: %v", what, err)
	}
	return fmt.Errorf("%s %s: %w", what, path, err)
}
