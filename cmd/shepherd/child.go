package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// child is CMD, running.
type child struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startChild(argv, env []string, stderr io.Writer) (*child, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, stderr
	// If shepherd itself dies (SIGKILL), CMD must not run on unguarded: the
	// kernel kills it with its parent.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, exitCode{127, fmt.Errorf("cannot run %q: %w", argv[0], err)}
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// stop sends SIGTERM, then SIGKILL after grace, and waits for the exit.
func (c *child) stop(grace time.Duration) {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
		return
	case <-t.C:
	}
	_ = c.cmd.Process.Kill()
	<-c.done
}

// status is CMD's exit status (128+signal when killed by a signal).
func (c *child) status() int {
	var ee *exec.ExitError
	if errors.As(c.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if c.err != nil {
		return exitError
	}
	return 0
}

// supervise runs CMD while a hold lasts. SIGINT and SIGTERM to shepherd are
// passed to CMD. When lost closes, CMD is stopped and supervise returns exit
// status 5. Otherwise it returns CMD's own status when CMD ends.
func supervise(ctx context.Context, o *options, argv, env []string, lost <-chan struct{}, what string,
	stopSignals func(), stderr io.Writer) error {
	// Take signals over from the context, to pass them on.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if ctx.Err() != nil {
		// A signal came before we took them over: do not start CMD.
		stopSignals()
		return exitCode{130, fmt.Errorf("interrupted before %s started", argv[0])}
	}
	stopSignals()
	c, err := startChild(argv, env, stderr)
	if err != nil {
		return err
	}
	for {
		select {
		case s := <-sigs:
			_ = c.cmd.Process.Signal(s)
		case <-lost:
			fmt.Fprintf(stderr, "shepherd: %s lost: stopping %s\n", what, argv[0])
			c.stop(o.grace)
			return exitCode{exitLost, fmt.Errorf("%s lost while %s ran", what, argv[0])}
		case <-c.done:
			return exitCode{code: c.status()}
		}
	}
}
