package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shepherdzk/shepherd/admin"
)

func (c *cli) cmdRm(ctx context.Context, o *options, args []string) error {
	s := newSub("rm", "shepherd rm [flags] PATH", `
Remove what an idle recipe left at PATH: a non-fair lock's or election's
persistent path, a schedule's record and its election's path, a
semaphore's limit and its empty containers ('shepherd ls' marks them idle).
It refuses, removing nothing, while anyone holds or waits at PATH (exit 6),
when PATH holds nodes that are no recipe's (an application's: remove those
by hand), and when someone arrives while it removes (the nodes go in one
transaction, each at the version read). Exit status 7 when there is no
recipe at PATH.`,
		"shepherd rm /jobs/tick",
		"shepherd rm /services/cron/leader")
	o.registerConn(s.fs)
	pos, argv, err := s.parse(args, c.stdout)
	if err != nil {
		return err
	}
	path, err := onlyPath("rm", pos)
	if err != nil {
		return err
	}
	if len(argv) > 0 {
		return usagef("rm: unexpected arguments %q", strings.Join(argv, " "))
	}
	if err := o.check("rm"); err != nil {
		return err
	}
	sess, err := c.connect(ctx, o)
	if err != nil {
		return err
	}
	defer sess.Close()
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	kind, removed, err := admin.RemoveIdle(qctx, sess, sess.Path(path))
	switch {
	case ctx.Err() != nil:
		return interruptedWaiting(ctx, "removing "+path)
	case errors.Is(err, admin.ErrInUse):
		return exitCode{exitRefused, fmt.Errorf("rm %s refused: %w ('shepherd status %s' shows who)", path, err, path)}
	case errors.Is(err, admin.ErrNotARecipe) && kind == "":
		return exitCode{exitEmpty, fmt.Errorf("rm %s: %w", path, err)}
	case errors.Is(err, admin.ErrNotARecipe):
		return exitCode{exitRefused, fmt.Errorf("rm %s refused: %w", path, err)}
	case err != nil:
		return fmt.Errorf("rm %s: %w", path, err)
	}
	for _, n := range removed {
		fmt.Fprintf(c.stdout, "removed %s\n", strings.TrimPrefix(n, sess.Namespace()))
	}
	fmt.Fprintf(c.stderr, "shepherd: %s's nodes at %s removed\n", kind, path)
	return nil
}
