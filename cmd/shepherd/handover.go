package main

// Priorities and handovers on the command line (issue 38): elect's
// -priority, -attr, -yield and -handover-wait; `shepherd handover`; and
// what status shows of them.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/shepherdzk/shepherd/admin"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// candidateFlags are elect's flags of priorities and handovers.
type candidateFlags struct {
	priority     *int
	attrs        attrFlag
	yield        *time.Duration
	handoverWait *time.Duration
}

// registerCandidate defines elect's flags of priorities and handovers.
func registerCandidate(fs *flag.FlagSet) *candidateFlags {
	cf := &candidateFlags{attrs: attrFlag{}}
	cf.priority = fs.Int("priority", 0, "this candidate's priority `N` (higher is better; e.g. from the version):\n"+
		"on SIGTERM the leader hands over to the candidate of highest priority")
	fs.Var(cf.attrs, "attr", "an attribute `key=value` shown to others (status, /readyz's leader);\n"+
		"repeat for more (e.g. -attr version=2.4.1 -attr zone=eu-1)")
	cf.yield = fs.Duration("yield", 0, "a leader yields to a candidate of higher priority once that one has\n"+
		"been in line for `D` and it has led for D (at most one change per D; 0: never)")
	cf.handoverWait = fs.Duration("handover-wait", 0, "on SIGTERM, a leader waits up to `D` (leading meanwhile) for a candidate\n"+
		"of higher priority than its own to be in line before it hands over:\n"+
		"a rolling deploy's new version, started as the old one stops")
	return cf
}

// options are the election options the flags ask for: the leader hands
// over to the best candidate when it stops, always.
func (cf *candidateFlags) options() ([]election.Option, error) {
	if *cf.yield < 0 || *cf.handoverWait < 0 {
		return nil, usagef("elect: -yield and -handover-wait must not be negative")
	}
	opts := []election.Option{election.WithPriority(*cf.priority), election.HandOverOnStop(*cf.handoverWait)}
	if len(cf.attrs) > 0 {
		opts = append(opts, election.WithAttributes(cf.attrs))
	}
	if *cf.yield > 0 {
		opts = append(opts, election.WithPreferredLeader(*cf.yield))
	}
	return opts, nil
}

// attrFlag is -attr key=value, repeated.
type attrFlag map[string]string

func (a attrFlag) String() string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + a[k]
	}
	return strings.Join(keys, ",")
}

func (a attrFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return errors.New("want key=value")
	}
	a[k] = v
	return nil
}

func (c *cli) cmdHandover(ctx context.Context, o *options, args []string) error {
	s := newSub("handover", "shepherd handover [flags] PATH [ID]", `
An operator's handover: the leader of the election at PATH hands leadership
over to the candidate ID (by default the best one: the highest priority,
then the first in line), which leads next, no other candidate in between.
The leader keeps leading while the candidates between them step aside,
then lets go; the new leader is granted as after a resign (milliseconds).
handover waits until ID leads (at most -timeout), prints the new leader
and exits 0. Only a shepherd leader (of this version or later) carries it
out; a Curator or Kazoo candidate between the leader and ID makes it
refuse (exit 6). Exit 7 when no one leads or ID is not a candidate, 4 when
it did not happen within -timeout (the request is withdrawn: nothing
changes).`,
		"shepherd handover /services/web/leader replica-c",
		"shepherd handover -timeout 10s /services/cron/leader")
	o.registerConn(s.fs)
	timeout := s.fs.Duration("timeout", 30*time.Second, "give up after this long, exit 4")
	pos, argv, err := s.parse(args, c.stdout)
	if err != nil {
		return err
	}
	if len(argv) > 0 {
		return usagef("handover: unexpected arguments %q", strings.Join(argv, " "))
	}
	id := ""
	switch {
	case len(pos) == 2:
		id, pos = pos[1], pos[:1]
	case len(pos) > 2:
		return usagef("handover takes PATH and at most one ID, not %d arguments (%s)", len(pos), strings.Join(pos, " "))
	}
	path, err := onlyPath("handover", pos)
	if err != nil {
		return err
	}
	if *timeout <= 0 {
		return usagef("handover: -timeout must be positive")
	}
	if err := o.check("handover"); err != nil {
		return err
	}
	sess, err := c.connect(ctx, o)
	if err != nil {
		return err
	}
	defer sess.Close()
	hctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	l, err := election.RequestHandOver(hctx, sess, path, id)
	switch {
	case err == nil:
		fmt.Fprintf(c.stdout, "%s leads %s (term %d)\n", l.ID, path, int64(l.Term))
		return nil
	case errors.Is(err, election.ErrNoLeader), errors.Is(err, election.ErrNoCandidate):
		return exitCode{exitEmpty, fmt.Errorf("handover %s: %w", path, err)}
	case errors.Is(err, election.ErrHandOverRefused):
		return exitCode{exitRefused, fmt.Errorf("handover %s: %w", path, err)}
	case errors.Is(err, recipe.ErrWrongKind):
		return refused(sess, "handover", path, err)
	case errors.Is(err, recipe.ErrPermission) || errors.Is(err, recipe.ErrNoPrincipal):
		return deniedError("handover", path, err)
	case hctx.Err() != nil && ctx.Err() == nil:
		return exitCode{exitTimeout, fmt.Errorf("handover %s: not done within %v (withdrawn)", path, *timeout)}
	}
	return fmt.Errorf("handover %s: %w", path, err)
}

// candidateID is what status shows of a candidate's node data: its id,
// with its priority and attributes when it has any (a proclaimed value
// too).
func candidateID(data string) string {
	p, ok := election.ParseCandidate([]byte(data))
	if !ok {
		return data
	}
	return participantID(p)
}

// participantID is a candidate's id, with its priority and attributes when
// it has any.
func participantID(p election.Participant) string {
	var b strings.Builder
	b.WriteString(p.ID)
	var more []string
	if p.Priority != 0 {
		more = append(more, fmt.Sprintf("priority %d", p.Priority))
	}
	if a := attrFlag(p.Attributes()); len(a) > 0 {
		more = append(more, a.String())
	}
	if len(more) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(more, ", "))
	}
	return b.String()
}

// electionExtras adds to an election's snapshot what Inspect does not read:
// a non-fair election's registered candidates (as waiters), and returns the
// pending handover, if any (nil when none, or when it cannot be read).
func electionExtras(ctx context.Context, sess *session.Session, snap *admin.Snapshot, path string) *election.HandOverRequest {
	if snap.Kind != "election" {
		return nil
	}
	if !snap.Fair {
		if e, err := election.New(sess, path, "status", election.NonFair()); err == nil {
			if ps, err := e.Participants(ctx); err == nil {
				for _, p := range ps {
					if !p.Leader {
						snap.Waiters = append(snap.Waiters, admin.Entry{Node: p.Node, Data: participantID(p), SessionID: p.SessionID, Created: p.Joined,
							Library: "shepherd non-fair candidate (registered)"})
					}
				}
			}
		}
	}
	req, err := election.PendingHandOver(ctx, sess, path)
	if err != nil {
		return nil
	}
	return req
}

// printHandOver prints a pending handover under status's table.
func printHandOver(w io.Writer, req *election.HandOverRequest) {
	if req == nil {
		return
	}
	state := "pending"
	fmt.Fprintf(w, "handover %s: to %s (%s, by %s, session %s)\n", state, req.ID, req.Reason, req.By, sessionHex(req.SessionID))
}
