package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shepherdzk/shepherd/admin"
	"github.com/shepherdzk/shepherd/internal/wire/zkpath"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/schedule"
	"github.com/shepherdzk/shepherd/session"
)

func (c *cli) cmdStatus(ctx context.Context, o *options, args []string) error {
	s := newSub("status", "shepherd status [flags] PATH", `
Show what is at PATH: the kind of recipe (lock, read-write lock, semaphore,
election; shepherd's, Curator's, Kazoo's or go-zookeeper's), its holders or
leader and its waiters in line order, each with its id, ZooKeeper session,
age and fencing token (decimal, as CMD's SHEPHERD_TOKEN). Sessions are
0x-hex, as ZooKeeper prints them and as CMD's SHEPHERD_SESSION; in -json each
entry has them as "session": "0x…" (and as the number "session_id", which
passes 2^53: jq rounds it). A semaphore's holders show their slots (SLOT,
SHEPHERD_SLOT). On a schedule's path it shows the leader, the last tick
(started or finished, its outcome and attempt) and the next tick due, at the
schedule's epoch plus N+1 intervals by ZooKeeper's clock. With nothing at PATH it says so and exits 7, so
that a mistyped PATH shows; when there are recipes below PATH, it says to run
'shepherd ls PATH', which lists them.`,
		"shepherd status /services/cron/leader",
		"shepherd status -json /jobs/backup | jq .holders",
		"shepherd status -watch /limits/api",
		"shepherd status -json /jobs/report | jq .next_due")
	o.registerConn(s.fs)
	asJSON := s.fs.Bool("json", false, "print JSON (one object; one per line with -watch)")
	watch := s.fs.Bool("watch", false, "keep watching and print each change until interrupted")
	pos, argv, err := s.parse(args, c.stdout)
	if err != nil {
		return err
	}
	if len(pos) == 1 && pos[0] == "/" {
		return usagef("status: the root holds no recipe: 'shepherd ls /' lists the recipes under it")
	}
	path, err := onlyPath("status", pos)
	if err != nil {
		return err
	}
	if len(argv) > 0 {
		return usagef("status: unexpected arguments %q", strings.Join(argv, " "))
	}
	if err := o.check("status"); err != nil {
		return err
	}
	sess, err := c.connect(ctx, o)
	if err != nil {
		return err
	}
	defer sess.Close()
	full := sess.Path(path)
	if !*watch {
		qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		snap, err := admin.Inspect(qctx, sess, full)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("status %s: %w", path, err)
		}
		// A schedule's path holds an election and a record: the schedule
		// package reads the record (none before the first tick).
		if snap.Kind == "schedule" {
			if sst, ok, err := schedule.Inspect(qctx, sess, path); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("status %s: %w", path, err)
			} else if ok {
				if *asJSON {
					b, _ := json.Marshal(jsonSchedule(sess, sst))
					fmt.Fprintln(c.stdout, string(b))
				} else {
					printSchedule(c.stdout, sess, sst)
				}
				return nil
			}
		}
		ho := electionExtras(qctx, sess, snap, path) // issue 38: candidates, a pending handover
		snap.Idle = snap.Idle && len(snap.Waiters) == 0
		asGiven(sess, snap, path)
		if *asJSON {
			j := jsonSnapshot(snap)
			j.HandOver = ho
			b, _ := json.Marshal(j)
			fmt.Fprintln(c.stdout, string(b))
		} else {
			printSnapshot(c.stdout, snap, time.Now())
			printHandOver(c.stdout, ho)
		}
		if snap.Kind == "empty" && snap.PartOf != "" {
			return exitCode{exitEmpty, fmt.Errorf("status: nothing of its own at %s: it is a part of the recipe at %s", path, snap.PartOf)}
		} else if snap.Kind == "empty" {
			return exitCode{exitEmpty, nothingAt(ctx, sess, path)}
		}
		return nil
	}
	return c.statusWatch(ctx, sess, path, *asJSON)
}

// asGiven puts a snapshot's paths as given, under the same root as PATH (as
// SHEPHERD_NODE).
func asGiven(sess *session.Session, snap *admin.Snapshot, path string) {
	snap.Path = path
	if snap.PartOf != "" {
		snap.PartOf = zkpath.Parent(path)
	}
	for _, es := range [][]admin.Entry{snap.Holders, snap.Waiters} {
		for i := range es {
			es[i].Node = strings.TrimPrefix(es[i].Node, sess.Namespace())
		}
	}
}

// statusWatch is status -watch: a snapshot at each change, and a word when
// ZooKeeper goes away and comes back (the snapshot shown is then the last
// known one). On a terminal (text, not -json) it redraws one screen, the
// ages moving once a second, with a last line "ZooKeeper: connected" or
// "ZooKeeper: disconnected since ..."; elsewhere it appends, as a log, the
// snapshots and the lines "ZooKeeper: disconnected at ..." / "ZooKeeper:
// reconnected at ..." (with -json, those lines go to stderr, the JSON
// objects alone to stdout).
func (c *cli) statusWatch(ctx context.Context, sess *session.Session, path string, asJSON bool) error {
	tty := false
	if !asJSON {
		_, _, tty = termSize(c.stdout)
	}
	quit := make(chan struct{})
	defer close(quit)
	events := make(chan session.Event, 16)
	defer sess.Listen(func(ev session.Event) {
		select {
		case events <- ev:
		case <-quit:
		}
	})()
	var down time.Time // since when ZooKeeper is away; zero while connected
	if st, at := sess.StateSince(); !st.Live() {
		down = at
	}
	note := c.stdout
	if asJSON {
		note = c.stderr
	}
	var last *admin.Snapshot
	draw := func() {
		var b strings.Builder
		if last != nil {
			printSnapshot(&b, last, time.Now())
		}
		if down.IsZero() {
			b.WriteString("\nZooKeeper: connected\n")
		} else {
			fmt.Fprintf(&b, "\nZooKeeper: disconnected since %s, %s ago (showing the last known state)\n",
				down.Format("15:04:05"), age(time.Now(), down))
		}
		// The size now: the terminal may have been resized.
		w, h, _ := termSize(c.stdout)
		fmt.Fprint(c.stdout, clearScreen+fit(b.String(), w, h))
	}
	var tick <-chan time.Time
	if tty {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	need, shown, fails := true, 0, 0
	var watch <-chan zk.Event
	for {
		if need && down.IsZero() {
			snap, err := inspectNow(ctx, sess, path, 30*time.Second)
			switch {
			case ctx.Err() != nil:
				return nil
			case errors.Is(err, errReadCut):
				// The connection went during the read: say so now (its
				// event follows), and read again once it is back.
				if st, at := sess.StateSince(); !st.Live() {
					if !tty && down.IsZero() {
						fmt.Fprintf(note, "ZooKeeper: disconnected at %s (the state above may be stale)\n", at.Format("15:04:05"))
					}
					down = at
				}
			case err != nil:
				st, at := sess.StateSince()
				if st.Live() {
					// A session lost during the read, and a new one
					// already there: read again, a few times at most.
					if fails++; errors.Is(err, session.ErrLost) && fails <= 3 {
						continue
					}
					return fmt.Errorf("status %s: %w", path, err)
				}
				down = at // and read again once it is back
				if !tty {
					fmt.Fprintf(note, "ZooKeeper: disconnected at %s (the state above may be stale)\n", down.Format("15:04:05"))
				}
			default:
				need, fails = false, 0
				asGiven(sess, snap, path)
				last, watch = snap, snap.Watch
				switch {
				case tty:
				case asJSON:
					b, _ := json.Marshal(jsonSnapshot(snap))
					fmt.Fprintln(c.stdout, string(b))
				default:
					if shown > 0 {
						fmt.Fprintln(c.stdout, "---")
					}
					printSnapshot(c.stdout, snap, time.Now())
				}
				shown++
			}
			if tty {
				draw()
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-watch:
			need, watch = true, nil
		case <-tick:
			draw()
		case ev := <-events:
			switch {
			case (ev.State == session.Suspended || ev.State == session.Lost) && down.IsZero():
				down = ev.Time
				if !tty {
					fmt.Fprintf(note, "ZooKeeper: disconnected at %s (the state above may be stale)\n", down.Format("15:04:05"))
				}
			case ev.State.Live() && !down.IsZero():
				if !tty {
					fmt.Fprintf(note, "ZooKeeper: reconnected at %s, after %s\n", ev.Time.Format("15:04:05"), age(ev.Time, down))
				}
				down = time.Time{}
				need = true // the watches may be gone with the session: read again
			}
			if tty {
				draw()
			}
		}
	}
}

// snapshotJSON is status -json's object: the snapshot, each entry with its
// session also as "0x…" ("session"), as the text view, SHEPHERD_SESSION and
// ZooKeeper's own tools print it. "session_id" stays the number it was:
// above 2^53, which jq and JavaScript round.
type snapshotJSON struct {
	*admin.Snapshot
	Holders []entryJSON `json:"holders"`
	Waiters []entryJSON `json:"waiters"`
	// HandOver is an election's pending handover (issue 38), if any.
	HandOver *election.HandOverRequest `json:"handover,omitempty"`
}

type entryJSON struct {
	admin.Entry
	Session string `json:"session"`
}

func jsonSnapshot(s *admin.Snapshot) snapshotJSON {
	conv := func(es []admin.Entry) []entryJSON {
		out := make([]entryJSON, len(es))
		for i, e := range es {
			out[i] = entryJSON{Entry: e, Session: sessionHex(e.SessionID)}
		}
		return out
	}
	return snapshotJSON{Snapshot: s, Holders: conv(s.Holders), Waiters: conv(s.Waiters)}
}

// sessionHex formats a session id as ZooKeeper prints it: 0x-hex.
func sessionHex(id int64) string { return fmt.Sprintf("0x%x", id) }

// nothingAt is status's error for a PATH with no recipe: it looks below
// PATH (a bounded walk, up to the first recipe) and points at ls if there
// is something there, or says PATH is an idle non-fair recipe's path.
func nothingAt(ctx context.Context, sess *session.Session, path string) error {
	w := walk{sess: sess, depth: lsDepth, nodes: 1000, firstOnly: true}
	if err := w.run(ctx, path); err == nil && len(w.found) > 0 {
		l := w.found[0]
		return fmt.Errorf("status: nothing at %s itself, but there are recipes below it (%s, ...): 'shepherd ls %s' lists them", path, l.Path, path)
	}
	return fmt.Errorf("status: nothing at %s (no lock, semaphore, election or schedule there; mistyped?)", path)
}

func printSnapshot(w io.Writer, s *admin.Snapshot, now time.Time) {
	mode := "fair"
	if !s.Fair {
		mode = "non-fair"
	}
	if s.Names != "" {
		mode += ", " + s.Names + " names"
	}
	switch s.Kind {
	case "empty":
		if s.PartOf != "" {
			fmt.Fprintf(w, "%s: a part of the recipe at %s, no recipe of its own ('shepherd status %s' shows that one)\n",
				s.Path, s.PartOf, s.PartOf)
			return
		}
		fmt.Fprintf(w, "%s: nothing here (no holders, no waiters)\n", s.Path)
		return
	case "semaphore":
		fmt.Fprintf(w, "%s: semaphore, %d of %d leases held, %d waiting\n", s.Path, len(s.Holders), s.MaxLeases, len(s.Waiters))
	case "election", "schedule":
		fmt.Fprintf(w, "%s: %s (%s), %s\n", s.Path, s.Kind, mode, count(len(s.Holders)+len(s.Waiters), "candidate"))
	default:
		fmt.Fprintf(w, "%s: %s (%s), %d holding, %d waiting\n", s.Path, s.Kind, mode, len(s.Holders), len(s.Waiters))
	}
	if len(s.Others) > 0 {
		fmt.Fprintf(w, "warning: nodes of other kinds are here too (%s): shepherd refuses this path to every kind\n",
			strings.Join(s.Others, ", "))
	}
	if s.Idle {
		fmt.Fprintf(w, "idle: no one holds or waits ('shepherd rm %s' removes what is left)\n", s.Path)
	}
	if len(s.Holders)+len(s.Waiters) == 0 {
		return
	}
	if s.Names == "mixed" {
		fmt.Fprintf(w, "warning: nodes named as Curator and as Kazoo name them: neither library sees the other's, "+
			"shepherd refuses this path (ErrForeignRecipe)\n")
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	slots := false
	for _, e := range s.Holders {
		slots = slots || e.Slot != nil
	}
	if slots {
		fmt.Fprintln(tw, "ROLE\tID\tSESSION\tAGE\tTOKEN\tSLOT\tNODE\tNAMING")
	} else {
		fmt.Fprintln(tw, "ROLE\tID\tSESSION\tAGE\tTOKEN\tNODE\tNAMING")
	}
	role := "holder"
	if s.Kind == "election" || s.Kind == "schedule" {
		role = "leader"
	}
	for _, e := range s.Holders {
		row(tw, role, e, now, slots)
	}
	for i, e := range s.Waiters {
		r := fmt.Sprintf("waiter %d", i+1)
		if s.Kind == "election" || s.Kind == "schedule" {
			r = fmt.Sprintf("candidate %d", i+1)
		}
		row(tw, r, e, now, slots)
	}
	tw.Flush()
}

func row(w io.Writer, role string, e admin.Entry, now time.Time, slots bool) {
	id := candidateID(e.Data) // an election candidate's priority and attributes too
	if id == "" {
		id = "-"
	}
	id = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, id)
	if r := []rune(id); len(r) > 40 {
		id = string(r[:40]) + "…"
	}
	switch e.Revoke {
	case "ask":
		role += " (revoke asked)"
	case "force":
		role += " (revoked)"
	}
	age := now.Sub(e.Created).Round(100 * time.Millisecond)
	node := e.Node[strings.LastIndex(e.Node, "/")+1:]
	slot := ""
	if slots {
		slot = "-\t"
		if e.Slot != nil {
			slot = fmt.Sprintf("%d\t", *e.Slot)
		}
	}
	// A waiter has no fencing token yet; a lock's lock- names need no
	// "(InterProcessMutex, LeaderSelector)": the kind says what it is.
	token := fmt.Sprint(int64(e.Token))
	if strings.HasPrefix(role, "waiter") || strings.HasPrefix(role, "candidate") {
		token = "-"
	}
	naming := e.Library
	if strings.HasSuffix(naming, "(InterProcessMutex, LeaderSelector)") {
		naming = strings.TrimSuffix(naming, " (InterProcessMutex, LeaderSelector)")
	}
	fmt.Fprintf(w, "%s\t%s\t%s\t%v\t%s\t%s%s\t%s\n", role, id, sessionHex(e.SessionID), age, token, slot, node, naming)
}

// scheduleJSON is status -json's object for a schedule's path.
type scheduleJSON struct {
	Path        string              `json:"path"`
	Kind        string              `json:"kind"` // "schedule"
	Every       string              `json:"every"`
	Cron        string              `json:"cron,omitempty"`
	Epoch       time.Time           `json:"epoch"`  // tick 0's due time (server clock)
	Leader      *scheduleLeaderJSON `json:"leader"` // null: none
	Tick        int64               `json:"tick"`   // the last tick started; -1: none yet
	State       string              `json:"state"`  // started or finished
	Outcome     string              `json:"outcome,omitempty"`
	Attempt     int                 `json:"attempt,omitempty"`
	Started     *time.Time          `json:"started,omitempty"` // the last tick's start (server clock)
	StartedBy   string              `json:"started_by,omitempty"`
	StartedTerm int64               `json:"started_term,omitempty"`
	NextTick    int64               `json:"next_tick"`
	NextDue     time.Time           `json:"next_due"` // epoch + next_tick intervals (server clock)
}

type scheduleLeaderJSON struct {
	ID        string `json:"id"`
	Term      int64  `json:"term"`
	Node      string `json:"node"`
	Session   string `json:"session"`
	SessionID int64  `json:"session_id"`
}

func jsonSchedule(sess *session.Session, st *schedule.Status) scheduleJSON {
	r := st.Record
	j := scheduleJSON{Path: st.Path, Kind: "schedule", Every: r.Every, Cron: r.Cron, Epoch: time.UnixMilli(r.Epoch).UTC(),
		Tick: r.N, State: r.State, Outcome: r.Outcome, Attempt: r.Attempt, StartedBy: r.Leader,
		StartedTerm: r.Term, NextTick: st.NextN, NextDue: st.NextDue}
	if r.Started != 0 {
		t := time.UnixMilli(r.Started).UTC()
		j.Started = &t
	}
	if l := st.Leader; l.Term != 0 {
		j.Leader = &scheduleLeaderJSON{ID: l.ID, Term: int64(l.Term), Node: strings.TrimPrefix(l.Node, sess.Namespace()),
			Session: sessionHex(l.SessionID), SessionID: l.SessionID}
	}
	return j
}

// printSchedule is status's text for a schedule's path.
func printSchedule(w io.Writer, sess *session.Session, st *schedule.Status) {
	j := jsonSchedule(sess, st)
	ts := func(t time.Time) string { return t.Format("2006-01-02T15:04:05.000Z07:00") }
	times := "every " + j.Every
	if j.Cron != "" {
		times = fmt.Sprintf("cron %q", j.Cron)
	}
	fmt.Fprintf(w, "%s: schedule %s (epoch %s)\n", j.Path, times, ts(j.Epoch))
	if l := j.Leader; l != nil {
		fmt.Fprintf(w, "leader:     %s (term %d, session %s)\n", l.ID, l.Term, l.Session)
	} else {
		fmt.Fprintln(w, "leader:     none")
	}
	if j.Tick < 0 {
		fmt.Fprintln(w, "last tick:  none yet")
	} else {
		state := j.State
		if j.Outcome != "" {
			state += ", " + j.Outcome
		}
		fmt.Fprintf(w, "last tick:  %d (%s), attempt %d", j.Tick, state, max(j.Attempt, 1))
		if j.Started != nil {
			fmt.Fprintf(w, ", started %s by %s (term %d)", ts(*j.Started), j.StartedBy, j.StartedTerm)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "next due:   tick %d at %s (ZooKeeper's clock)\n", j.NextTick, ts(j.NextDue))
}
