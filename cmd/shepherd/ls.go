package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shepherdzk/shepherd/admin"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/session"
)

// Default bounds of a walk.
const (
	lsDepth = 32
	lsNodes = 10000
)

func (c *cli) cmdLs(ctx context.Context, o *options, args []string) error {
	s := newSub("ls", "shepherd ls [flags] PREFIX", `
List every recipe under PREFIX (PREFIX included; "/" for all): locks,
read-write locks, semaphores, elections and schedules, shepherd's, Curator's,
Kazoo's or go-zookeeper's, each with its kind, fair or non-fair, the naming
of its nodes (curator, kazoo), and how many hold and wait ('shepherd status
PATH' shows them). It walks the tree below PREFIX, at most -depth levels and
-max-nodes nodes, and says so on stderr when it stops there. Some recipes
leave a trace when no one holds or waits (a non-fair lock's or election's
path, whose data version fences the holds; a schedule's record): ls shows
such a path as idle, so that it can be found; 'shepherd rm PATH' removes it
once no process uses it. A node below PREFIX whose ACL does not grant this
session READ is not read (nor what is below it): ls names it on stderr and
lists the rest. With nothing found it says so and exits 7.`,
		"shepherd ls /",
		"shepherd ls -json /services | jq '.recipes[].path'")
	o.registerConn(s.fs)
	asJSON := s.fs.Bool("json", false, "print JSON (one object)")
	depth := s.fs.Int("depth", lsDepth, "descend at most `N` levels below PREFIX")
	maxNodes := s.fs.Int("max-nodes", lsNodes, "read at most `N` nodes")
	pos, argv, err := s.parse(args, c.stdout)
	if err != nil {
		return err
	}
	prefix := "/"
	if len(pos) != 1 || pos[0] != "/" {
		if prefix, err = onlyPath("ls", pos); err != nil {
			return err
		}
	}
	if len(argv) > 0 {
		return usagef("ls: unexpected arguments %q", strings.Join(argv, " "))
	}
	if *depth < 0 || *maxNodes < 1 {
		return usagef("ls: -depth must be at least 0 and -max-nodes at least 1")
	}
	if err := o.check("ls"); err != nil {
		return err
	}
	sess, err := c.connect(ctx, o)
	if err != nil {
		return err
	}
	defer sess.Close()
	w := walk{sess: sess, depth: *depth, nodes: *maxNodes}
	if err := w.run(ctx, prefix); err != nil {
		if ctx.Err() != nil {
			return interruptedWaiting(ctx, "listing "+prefix)
		}
		return fmt.Errorf("ls %s: %w", prefix, err)
	}
	if *asJSON {
		b, _ := json.Marshal(lsJSON{Prefix: prefix, Recipes: w.found, Complete: w.stopped == "" && len(w.denied) == 0,
			Visited: w.visited, Unreadable: w.denied})
		fmt.Fprintln(c.stdout, string(b))
	} else {
		printListing(c.stdout, w.found)
	}
	if w.stopped != "" {
		fmt.Fprintf(c.stderr, "shepherd: ls %s: the listing is incomplete: %s\n", prefix, w.stopped)
	}
	if len(w.denied) > 0 {
		fmt.Fprintf(c.stderr, "shepherd: ls %s: the listing is incomplete: not listed, as their ACL does not grant this session READ: %s\n",
			prefix, strings.Join(w.denied, ", "))
	}
	if len(w.found) == 0 {
		return exitCode{exitEmpty, fmt.Errorf("ls: no recipe under %s", prefix)}
	}
	return nil
}

// listed is one recipe ls found.
type listed struct {
	Path      string `json:"path"` // under the same root as PREFIX
	Kind      string `json:"kind"` // mutex, rwlock, semaphore, election, schedule
	Fair      bool   `json:"fair"`
	Names     string `json:"names,omitempty"` // curator, kazoo, mixed; "" with no contender node
	MaxLeases int    `json:"max_leases,omitempty"`
	Holders   int    `json:"holders"`
	Waiters   int    `json:"waiters"`
	// Idle: a recipe's trace that no one holds or waits on (a non-fair
	// recipe's persistent path, a schedule's record, a semaphore's limit).
	Idle bool `json:"idle,omitempty"`
	// HandOver: an election's pending handover (its successor's id).
	HandOver string `json:"handover,omitempty"`
}

type lsJSON struct {
	Prefix   string   `json:"prefix"`
	Recipes  []listed `json:"recipes"`
	Complete bool     `json:"complete"` // false: a bound stopped the walk, or a node was unreadable
	Visited  int      `json:"visited"`  // nodes read
	// Unreadable: the nodes below the prefix whose ACL does not grant this
	// session READ; neither they nor what is below them were read.
	Unreadable []string `json:"unreadable,omitempty"`
}

func printListing(w io.Writer, found []listed) {
	if len(found) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tKIND\tMODE\tNAMING\tHOLDERS\tWAITERS")
	for _, l := range found {
		mode, names, holders, note := "fair", l.Names, strconv.Itoa(l.Holders), ""
		if !l.Fair {
			mode = "non-fair"
		}
		if names == "" {
			names = "-"
		}
		if l.Kind == "semaphore" {
			holders = fmt.Sprintf("%d of %d", l.Holders, l.MaxLeases)
		}
		if l.Idle {
			note = "\tidle (no one holds or waits: 'shepherd rm' removes it)"
		}
		if l.HandOver != "" {
			note = "\thandover pending to " + l.HandOver
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d%s\n", l.Path, l.Kind, mode, names, holders, l.Waiters, note)
	}
	tw.Flush()
}

// walk finds the recipes under a path, breadth first, within its bounds.
type walk struct {
	sess         *session.Session
	depth, nodes int
	// firstOnly stops the walk at the first recipe found.
	firstOnly bool

	found   []listed
	visited int
	stopped string // why the walk stopped short, "" if it did not
	// denied: the nodes below the walk's root it could not read or
	// inspect, their ACL denying this session READ (paths as found's).
	denied []string
}

// node is what one read of a node tells.
type node struct {
	data     string
	children []string // the children to descend into
	// candidate: the node's children or data say a recipe may be here.
	candidate bool
}

func (w *walk) run(ctx context.Context, prefix string) error {
	full := w.sess.Path(prefix)
	if prefix == "/" {
		full = w.sess.Path("")
		if full == "" {
			full = "/"
		}
	}
	type item struct {
		path  string
		depth int
	}
	queue := []item{{full, 0}}
	deeper := 0 // children not read for -depth
	unread := 0 // children not read for -max-nodes (the queue stays within it)
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		n, err := w.read(qctx, it.path)
		cancel()
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone meanwhile
		} else if w.deny(it.depth, it.path, err) {
			continue
		} else if err != nil {
			return err
		}
		w.visited++
		if n.candidate {
			qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			l, ok, err := w.inspect(qctx, it.path, n)
			cancel()
			switch {
			case w.deny(it.depth, it.path, err):
				// recorded; what is below it is walked as usual
			case err != nil:
				return err
			case ok:
				w.found = append(w.found, l)
				if w.firstOnly {
					return nil
				}
			}
		}
		if it.depth >= w.depth {
			deeper += len(n.children)
			continue
		}
		for _, c := range n.children {
			if w.visited+len(queue) >= w.nodes {
				unread++
				continue
			}
			p := it.path + "/" + c
			if it.path == "/" {
				p = "/" + c
			}
			queue = append(queue, item{p, it.depth + 1})
		}
	}
	slices.SortFunc(w.found, func(a, b listed) int { return strings.Compare(a.Path, b.Path) })
	switch {
	case unread > 0:
		w.stopped = fmt.Sprintf("stopped at %d nodes read (-max-nodes); %d more, and what is below them, not read", w.visited, unread)
	case deeper > 0:
		w.stopped = fmt.Sprintf("%d nodes below depth %d not read (-depth)", deeper, w.depth)
	}
	return nil
}

// deny reports whether err is a permission error on a node below the
// walk's root, and records the node if so: another principal's recipe
// (an ACL that grants READ to its creator only) does not end the walk of
// everything beside it. The root's own is the caller's error.
func (w *walk) deny(depth int, p string, err error) bool {
	if depth == 0 || !errors.Is(err, session.ErrPermission) {
		return false
	}
	w.denied = append(w.denied, strings.TrimPrefix(p, w.sess.Namespace()))
	return true
}

// read reads a node's data and children: whether a recipe is there (package
// layout's Classify), and which children to descend into (not the recipe's
// own nodes: its line's contenders, a semaphore's locks, leases and slots,
// a schedule's election and record; nor ZooKeeper's /zookeeper).
func (w *walk) read(ctx context.Context, p string) (node, error) {
	var out node
	err := w.sess.Do(ctx, func(ep *session.Epoch) error {
		seen, _, err := line.Look(ep.Conn(), p)
		if err != nil {
			return err
		}
		kind, _ := layout.KindOf(layout.Classify(seen))
		n := node{data: string(seen.Data), candidate: kind != nil}
		for _, c := range seen.Children {
			own := c.Contender != ""
			if kind != nil {
				for _, kn := range kind.Nodes {
					own = own || kn.Name == c.Name
				}
			}
			if own || (p == "/" && c.Name == "zookeeper") {
				continue
			}
			n.children = append(n.children, c.Name)
		}
		out = n
		return nil
	})
	if err != nil {
		return node{}, err // op may still run: do not read out
	}
	return out, nil
}

// inspect describes the recipe at p, if there is one.
func (w *walk) inspect(ctx context.Context, p string, n node) (listed, bool, error) {
	snap, err := admin.Inspect(ctx, w.sess, p)
	if err != nil {
		return listed{}, false, err
	}
	if snap.Kind == "empty" {
		return listed{}, false, nil // gone meanwhile
	}
	l := listed{Path: strings.TrimPrefix(p, w.sess.Namespace()), Kind: snap.Kind, Fair: snap.Fair,
		Names: snap.Names, MaxLeases: snap.MaxLeases, Holders: len(snap.Holders), Waiters: len(snap.Waiters), Idle: snap.Idle}
	if l.Path == "" {
		l.Path = "/" // the namespace's own node
	}
	if l.Kind == "semaphore" {
		l.Names = "curator" // InterProcessSemaphoreV2's layout, the only one
	}
	if ho := electionExtras(ctx, w.sess, snap, strings.TrimPrefix(p, w.sess.Namespace())); ho != nil {
		l.HandOver = ho.ID
	}
	l.Waiters = len(snap.Waiters) // with a non-fair election's registered candidates
	l.Idle = l.Idle && l.Waiters == 0
	return l, true, nil
}
