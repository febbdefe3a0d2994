package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shepherdzk/shepherd/internal/zkpath"
	"github.com/shepherdzk/shepherd/recipe"
)

func cmdStatus(ctx context.Context, o *options, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON (one object; one per line with -watch)")
	watch := fs.Bool("watch", false, "keep watching and print each change until interrupted")
	path, _, err := parse(fs, o, args, false)
	if err != nil {
		return err
	}
	if err := zkpath.Validate(path); err != nil {
		return usagef("status: %v", err)
	}
	sess, err := connect(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer sess.Close()
	full := sess.Path(path)
	for i := 0; ; i++ {
		var snap *recipe.Snapshot
		qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if *watch {
			snap, err = recipe.InspectW(qctx, sess, full)
		} else {
			snap, err = recipe.Inspect(qctx, sess, full)
		}
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("status %s: %w", path, err)
		}
		if *asJSON {
			b, _ := json.Marshal(snap)
			fmt.Fprintln(stdout, string(b))
		} else {
			if i > 0 {
				fmt.Fprintln(stdout, "---")
			}
			printSnapshot(stdout, snap, time.Now())
		}
		if !*watch {
			return nil
		}
		select {
		case <-snap.Watch:
		case <-ctx.Done():
			return nil
		}
	}
}

func printSnapshot(w io.Writer, s *recipe.Snapshot, now time.Time) {
	mode := "fair"
	if !s.Fair {
		mode = "non-fair"
	}
	switch s.Kind {
	case "empty":
		fmt.Fprintf(w, "%s: nothing here (no holders, no waiters)\n", s.Path)
		return
	case "semaphore":
		fmt.Fprintf(w, "%s: semaphore, %d of %d leases held, %d waiting\n", s.Path, len(s.Holders), s.MaxLeases, len(s.Waiters))
	case "election":
		fmt.Fprintf(w, "%s: election (%s), %d candidates\n", s.Path, mode, len(s.Holders)+len(s.Waiters))
	default:
		fmt.Fprintf(w, "%s: %s (%s), %d holding, %d waiting\n", s.Path, s.Kind, mode, len(s.Holders), len(s.Waiters))
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tID\tSESSION\tAGE\tTOKEN\tNODE")
	role := "holder"
	if s.Kind == "election" {
		role = "leader"
	}
	for _, e := range s.Holders {
		row(tw, role, e, now)
	}
	for i, e := range s.Waiters {
		r := fmt.Sprintf("waiter %d", i+1)
		if s.Kind == "election" {
			r = fmt.Sprintf("candidate %d", i+1)
		}
		row(tw, r, e, now)
	}
	tw.Flush()
}

func row(w io.Writer, role string, e recipe.Entry, now time.Time) {
	id := e.Data
	if id == "" {
		id = "-"
	}
	id = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, id)
	if len(id) > 40 {
		id = id[:40] + "…"
	}
	age := now.Sub(e.Created).Round(100 * time.Millisecond)
	node := e.Node[strings.LastIndex(e.Node, "/")+1:]
	fmt.Fprintf(w, "%s\t%s\t0x%x\t%v\t%v\t%s\n", role, id, e.SessionID, age, e.Token, node)
}
