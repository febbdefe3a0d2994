package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shepherdzk/shepherd/admin"
	"github.com/shepherdzk/shepherd/internal/wire/zkpath"

	shold "github.com/shepherdzk/shepherd/hold"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/schedule"
	"github.com/shepherdzk/shepherd/session"
)

func (c *cli) cmdRevoke(ctx context.Context, o *options, args []string) error {
	s := newSub("revoke", "shepherd revoke [flags] PATH [NODE]", `
An operator's revocation of a hold at PATH: by default its holder's (the
lock's holder, the leader, a schedule's leader, the one lease or reader);
where several hold (a semaphore, readers), name one: NODE as 'status'
shows it (a waiter's node may be named too).

Forced (the default): the holder is told that it lost the hold (its CMD is
stopped as on any loss, and 'shepherd lock' exits 5; a library holder's
Lost closes, with recipe.ErrRevoked as the cause), and deletes its node
itself, so that whoever is granted next is granted after the holder was
told. A holder that has not deleted its node within -grace (a stuck
process, a lost connection: it learns of the deletion when it reaches
ZooKeeper again) has it deleted by revoke.

-ask: asks the holder to let go when its work allows: its CMD gets SIGTERM
(a schedule's leader steps down after the tick it runs; a library holder
sees RevokeRequested). revoke waits up to -wait for the release; if the
hold is still there, it exits 4 (force it with revoke without -ask).

Each revocation is logged on stderr: which node, whose (session, id), by
which session, and how it ended. Exit status 7 when nobody holds PATH (or
NODE is not there); the revoking principal needs WRITE on the node (to ask)
and DELETE on PATH (to force).`,
		"shepherd revoke /jobs/backup",
		"shepherd revoke -ask -wait 2m /services/cron/leader",
		"shepherd revoke /limits/api lease-0000000007")
	o.registerConn(s.fs)
	ask := s.fs.Bool("ask", false, "ask the holder to release instead of forcing it")
	wait := s.fs.Duration("wait", 30*time.Second, "with -ask: how long to wait for the release")
	grace := s.fs.Duration("grace", 2*time.Second, "forced: how long the holder has to delete its own node before revoke does")
	pos, argv, err := s.parse(args, c.stdout)
	if err != nil {
		return err
	}
	if len(argv) > 0 {
		return usagef("revoke: unexpected arguments %q", strings.Join(argv, " "))
	}
	var name string
	switch {
	case len(pos) == 2:
		name, pos = pos[1], pos[:1]
	case len(pos) > 2:
		return usagef("revoke takes PATH and at most one NODE, not %d arguments (%s)", len(pos), strings.Join(pos, " "))
	}
	path, err := onlyPath("revoke", pos)
	if err != nil {
		return err
	}
	if *wait <= 0 || *grace < 0 {
		return usagef("revoke: -wait must be positive and -grace not negative")
	}
	if err := o.check("revoke"); err != nil {
		return err
	}
	sess, err := c.connect(ctx, o)
	if err != nil {
		return err
	}
	defer sess.Close()
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	target, err := revokeTarget(qctx, sess, path, name)
	cancel()
	if err != nil {
		return err
	}
	who := fmt.Sprintf("%s (session %s", strings.TrimPrefix(target.Node, sess.Namespace()), sessionHex(target.SessionID))
	if target.Data != "" {
		who += ", id " + target.Data
	}
	who += ")"
	by := "-"
	if ep, ok := sess.Current(); ok {
		by = sessionHex(ep.SessionID())
	}
	start := time.Now()
	if *ask {
		fmt.Fprintf(c.stderr, "shepherd: asking %s to let go of %s (by session %s)\n", who, path, by)
		wctx, cancel := context.WithTimeout(ctx, *wait)
		defer cancel()
		if err := admin.AskRevoke(wctx, sess, target.Grant()); err != nil {
			if ctx.Err() != nil {
				return interruptedWaiting(ctx, "waiting for the release")
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return exitCode{exitTimeout, fmt.Errorf("%s still holds %s after %v: it was asked (the request stays); "+
					"'shepherd revoke %s %s' forces it", who, path, *wait, path, lastElem(target.Node))}
			}
			return revokeError(path, err)
		}
		fmt.Fprintf(c.stderr, "shepherd: %s released %s after %v\n", who, path, roundPause(time.Since(start)))
		return nil
	}
	fmt.Fprintf(c.stderr, "shepherd: revoking %s of %s (by session %s)\n", who, path, by)
	byHolder, err := admin.Revoke(ctx, sess, target.Grant(), *grace)
	if err != nil {
		if ctx.Err() != nil {
			return interruptedWaiting(ctx, "revoking")
		}
		return revokeError(path, err)
	}
	if byHolder {
		fmt.Fprintf(c.stderr, "shepherd: revoked: the holder was told and deleted its node in %v\n", roundPause(time.Since(start)))
	} else {
		fmt.Fprintf(c.stderr, "shepherd: revoked: the holder did not let go within -grace %v: its node was deleted "+
			"(it learns of it when it next reaches ZooKeeper)\n", *grace)
	}
	return nil
}

// revokeTarget finds the node to revoke at path: the named one (a name or a
// path, holder or waiter), or the one holder.
func revokeTarget(ctx context.Context, sess *session.Session, path, name string) (admin.Entry, error) {
	full := sess.Path(path)
	snap, err := admin.Inspect(ctx, sess, full)
	if err != nil {
		return admin.Entry{}, revokeError(path, err)
	}
	if snap.PartOf != "" {
		// A semaphore's leases, say: revoking "the" holder there would pick
		// one lease of several that no one named.
		parent := zkpath.Parent(path)
		return admin.Entry{}, exitCode{exitRefused, fmt.Errorf("revoke %s refused: it is a part of the recipe at %s: "+
			"'shepherd status %s' lists its holders, 'shepherd revoke %s NODE' revokes one", path, parent, parent, parent)}
	}
	holders := snap.Holders
	if len(holders) == 0 {
		// A schedule's path: its leader holds it.
		if st, ok, err := schedule.Inspect(ctx, sess, path); err == nil && ok && st.Leader.Node != "" {
			holders = []admin.Entry{{Node: st.Leader.Node, Data: st.Leader.ID, SessionID: st.Leader.SessionID,
				Token: shold.Token(st.Leader.Term)}}
		}
	}
	if name != "" {
		for _, e := range append(append([]admin.Entry(nil), holders...), snap.Waiters...) {
			if lastElem(e.Node) == lastElem(name) {
				return e, nil
			}
		}
		return admin.Entry{}, exitCode{exitEmpty, fmt.Errorf("revoke: no node %s at %s ('shepherd status %s' lists them)", name, path, path)}
	}
	switch len(holders) {
	case 0:
		return admin.Entry{}, exitCode{exitEmpty, fmt.Errorf("revoke: nobody holds %s", path)}
	case 1:
		return holders[0], nil
	}
	var names []string
	for _, h := range holders {
		names = append(names, lastElem(h.Node))
	}
	return admin.Entry{}, usagef("revoke: %d hold %s (%s): name the one to revoke as NODE", len(holders), path, strings.Join(names, " "))
}

func revokeError(path string, err error) error {
	err = prefixed{"revoke " + path + ": " + unprefixed(err), err}
	if errors.Is(err, zk.ErrNoAuth) {
		return exitCode{exitRefused, fmt.Errorf("%w (the revoking principal needs WRITE on the holder's node "+
			"to ask, and DELETE on its parent to force: -auth-file, SHEPHERD_AUTH or a client certificate)", err)}
	}
	return err
}

func lastElem(p string) string { return p[strings.LastIndex(p, "/")+1:] }
