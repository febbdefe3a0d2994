package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/shepherdzk/shepherd/election"
)

func cmdElect(ctx context.Context, o *options, args []string, stderr io.Writer, stopSignals func()) error {
	fs := flag.NewFlagSet("elect", flag.ContinueOnError)
	host, _ := os.Hostname()
	id := fs.String("id", fmt.Sprintf("%s-%d", host, os.Getpid()), "candidate `ID` shown to others")
	once := fs.Bool("once", false, "exit after one term instead of rejoining the election")
	nonFair := fs.Bool("nonfair", false, "race for a single leader node instead of queueing")
	path, argv, err := parse(fs, o, args, true)
	if err != nil {
		return err
	}
	sess, err := connect(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer sess.Close()
	var opts []election.Option
	if *nonFair {
		opts = append(opts, election.NonFair())
	}
	e, err := election.New(sess, path, *id, opts...)
	if err != nil {
		return usagef("elect: %v", err)
	}
	// SIGINT/SIGTERM end the election: CMD is stopped and leadership handed
	// over at once.
	stopSignals()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-runCtx.Done():
		}
	}()
	// -timeout bounds the wait for the first term.
	elected := make(chan struct{})
	var once1 sync.Once
	timedOut := make(chan struct{})
	if o.timeout > 0 {
		go func() {
			t := time.NewTimer(o.timeout)
			defer t.Stop()
			select {
			case <-t.C:
				close(timedOut)
				cancel()
			case <-elected:
			case <-runCtx.Done():
			}
		}()
	}
	var result error
	err = e.Run(runCtx, election.Callbacks{
		OnElected: func(lctx context.Context, term election.Term) {
			once1.Do(func() { close(elected) })
			select {
			case <-timedOut:
				return
			default:
			}
			fmt.Fprintf(stderr, "shepherd: elected %s (term %v)\n", *id, term)
			c, err := startChild(argv, []string{
				"SHEPHERD_TOKEN=" + fmt.Sprint(int64(term)), "SHEPHERD_TERM=" + fmt.Sprint(int64(term)),
				"SHEPHERD_PATH=" + path, "SHEPHERD_ID=" + *id,
			}, stderr)
			if err != nil {
				result = err
				cancel()
				return
			}
			select {
			case <-c.done:
				result = exitCode{code: c.status()}
				cancel()
			case <-lctx.Done():
				c.stop(o.grace)
				if runCtx.Err() == nil {
					fmt.Fprintf(stderr, "shepherd: leadership lost (term %v): stopped %s\n", term, argv[0])
					if *once {
						result = exitCode{exitLost, errors.New("leadership lost")}
						cancel()
					}
				} else if result == nil {
					result = exitCode{code: c.status()}
				}
			}
		},
		OnLeader: func(l election.Leader) {
			if o.verbose {
				fmt.Fprintf(stderr, "shepherd: leader is %q (term %v)\n", l.ID, l.Term)
			}
		},
	})
	select {
	case <-timedOut:
		return exitCode{exitTimeout, fmt.Errorf("not elected within %v", o.timeout)}
	default:
	}
	if result != nil {
		return result
	}
	return err
}
