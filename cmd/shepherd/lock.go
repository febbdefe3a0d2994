package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/shepherdzk/shepherd/admin"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/wire/zkpath"

	shold "github.com/shepherdzk/shepherd/hold"

	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/schedule"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
)

func defaultID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

func (c *cli) cmdLock(ctx context.Context, o *options, args []string) error {
	s := newSub("lock", "shepherd lock [flags] PATH -- CMD [ARG...]", `
Run CMD while holding the lock at PATH: wait in line (FIFO) for the lock, run
CMD, release the lock when CMD and every process it started have ended.
Shares PATH with Curator's InterProcessMutex and go-zookeeper's zk.Lock.
CMD's environment, the exit statuses and what happens to CMD's processes on a
loss or a signal: see 'shepherd help'.`,
		"shepherd lock /jobs/backup -- ./backup.sh",
		"shepherd lock -timeout 30s -grace 5s /jobs/report -- sh -c 'make report && upload'",
		`shepherd lock -zk zk1:2181,zk2:2181/myapp /jobs/x -- sh -c 'echo token $SHEPHERD_TOKEN'`)
	o.registerConn(s.fs)
	o.registerHold(s.fs)
	id := s.fs.String("id", defaultID(), "holder `ID` stored in the lock's node (shown by status; SHEPHERD_ID)")
	nonFair := s.fs.Bool("nonfair", false, "race for a single node instead of queueing (no FIFO; for few contenders).\n"+
		"PATH then stays in ZooKeeper, a persistent node, after the last holder:\n"+
		"its data version fences the holds (see the README). 'shepherd ls' shows\n"+
		"it idle; shepherd never deletes it: zkCli.sh delete PATH, once no process uses it")
	pos, argv, err := s.parse(args, c.stdout)
	if err != nil {
		return err
	}
	path, err := onePath("lock", pos)
	if err != nil {
		return err
	}
	if len(argv) == 0 {
		return usagef("lock: missing CMD (shepherd lock [flags] PATH -- CMD...)")
	}
	if err := o.check("lock"); err != nil {
		return err
	}
	opts := []mutex.Option{mutex.WithData([]byte(*id))}
	if *nonFair {
		opts = append(opts, mutex.NonFair())
	}
	sess, err := c.connect(ctx, o)
	if err != nil {
		return err
	}
	defer sess.Close()
	m, err := mutex.New(sess, path, opts...)
	if err != nil {
		return usagef("lock: %v", err)
	}
	actx, cancel := acquireCtx(ctx, o)
	stopLine := c.waitLine(sess, "the lock", path)
	err = m.Lock(actx)
	stopLine()
	cancel()
	if err != nil {
		return acquireError(ctx, o, sess, "lock", path, err)
	}
	h, err := holdOf(sess, path, *id, m.Hold(), m.Token)
	if err != nil {
		_ = m.Unlock(context.Background())
		return exitCode{exitLost, fmt.Errorf("lock %s lost at once: %w", path, err)}
	}
	if o.verbose {
		fmt.Fprintf(c.stderr, "shepherd: locked %s (token %d, node %s)\n", path, h.token, h.node)
	}
	err = c.supervise(ctx, o, sess, argv, h, m.Hold(), "lock", lostGrace(o, sess))
	uctx, ucancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ucancel()
	if uerr := m.Unlock(uctx); uerr != nil && !errors.Is(uerr, mutex.ErrLost) && o.verbose {
		fmt.Fprintln(c.stderr, "shepherd: unlock:", uerr)
	}
	return err
}

func (c *cli) cmdSemaphore(ctx context.Context, o *options, args []string) error {
	s := newSub("semaphore", "shepherd semaphore [flags] -n N PATH -- CMD [ARG...]", `
Run CMD while holding one of the N leases of the semaphore at PATH: at most N
CMDs run at once across every host; the others wait in line (FIFO). N is
recorded at PATH: a client with another N is refused (exit 6), never admitted
beyond the limit. CMD's environment, the exit statuses and what happens to
CMD's processes: see 'shepherd help'.`,
		"shepherd semaphore -n 3 /limits/api -- ./call-api.sh",
		"shepherd semaphore -n 2 -timeout 1m /limits/encoders -- ffmpeg -i in.mkv out.mp4")
	o.registerConn(s.fs)
	o.registerHold(s.fs)
	n := s.fs.Int("n", 0, "maxLeases: at most `N` holders at once (required; must match the one recorded at PATH)")
	id := s.fs.String("id", defaultID(), "holder `ID` stored in the lease's node (shown by status; SHEPHERD_ID)")
	pos, argv, err := s.parse(args, c.stdout)
	if err != nil {
		return err
	}
	path, err := onePath("semaphore", pos)
	if err != nil {
		return err
	}
	if len(argv) == 0 {
		return usagef("semaphore: missing CMD (shepherd semaphore [flags] -n N PATH -- CMD...)")
	}
	if *n < 1 {
		return usagef("semaphore: -n N is required and must be at least 1")
	}
	if err := o.check("semaphore"); err != nil {
		return err
	}
	sess, err := c.connect(ctx, o)
	if err != nil {
		return err
	}
	defer sess.Close()
	// Every CLI lease takes a numbered slot (SHEPHERD_SLOT): two requests
	// more per grant, nothing for a process to keep track of.
	sem, err := semaphore.New(sess, path, *n, semaphore.WithData([]byte(*id)), semaphore.WithSlots())
	if err != nil {
		return usagef("%v", err) // the library's error names the semaphore
	}
	actx, cancel := acquireCtx(ctx, o)
	stopLine := c.waitLine(sess, "a lease", path)
	l, err := sem.Acquire(actx)
	stopLine()
	cancel()
	if err != nil {
		return acquireError(ctx, o, sess, "semaphore", path, err)
	}
	h, err := holdOf(sess, path, *id, l.Hold(), l.Token)
	if err != nil {
		_ = l.Release(context.Background())
		return exitCode{exitLost, fmt.Errorf("lease on %s lost at once: %w", path, err)}
	}
	h.slot = l.Slot()
	err = c.supervise(ctx, o, sess, argv, h, l.Hold(), "lease", lostGrace(o, sess))
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	_ = l.Release(rctx)
	return err
}

// hold is what CMD's environment says about the hold.
type hold struct {
	path    string // PATH as given
	node    string // under the same root as path
	id      string
	token   int64
	session int64
	elect   bool           // also SHEPHERD_TERM
	slot    int            // a lease's slot (SHEPHERD_SLOT); -1: none
	tick    *schedule.Tick // schedule: SHEPHERD_TICK, _TICK_TIME, _ATTEMPT
}

// env is CMD's environment, the same for every subcommand (documented in
// the usage text).
func (h hold) env() []string {
	env := []string{
		"SHEPHERD_PATH=" + h.path,
		"SHEPHERD_NODE=" + h.node,
		fmt.Sprintf("SHEPHERD_TOKEN=%d", h.token),
		"SHEPHERD_SESSION=" + sessionHex(h.session),
		"SHEPHERD_ID=" + h.id,
	}
	if h.elect {
		env = append(env, fmt.Sprintf("SHEPHERD_TERM=%d", h.token))
	}
	if h.slot >= 0 {
		env = append(env, fmt.Sprintf("SHEPHERD_SLOT=%d", h.slot))
	}
	if t := h.tick; t != nil {
		env = append(env, fmt.Sprintf("SHEPHERD_TICK=%d", t.N),
			"SHEPHERD_TICK_TIME="+t.Scheduled.UTC().Format(time.RFC3339Nano),
			fmt.Sprintf("SHEPHERD_ATTEMPT=%d", t.Attempt))
	}
	return env
}

// holdOf describes a granted hold; token reads its fencing token.
func holdOf(sess *session.Session, path, id string, rh *shold.Hold,
	token func(context.Context) (shold.Token, error)) (hold, error) {
	if rh == nil {
		return hold{}, recipe.ErrLost
	}
	tctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tok, err := token(tctx)
	if err != nil {
		return hold{}, err
	}
	return hold{path: path, node: strings.TrimPrefix(rh.Node(), sess.Namespace()), id: id,
		token: int64(tok), session: rh.SessionID(), slot: -1}, nil
}

// supervise runs CMD while a hold lasts. SIGINT and SIGTERM to shepherd stop
// CMD's processes (that signal, SIGKILL after -grace) and supervise returns
// CMD's status. When the hold is lost, they are stopped the same way
// (SIGTERM, SIGKILL after lostG; at once if they are frozen) and supervise
// returns exit status 5. Either way it returns only when none of them is
// left. While the hold is paused (-on-disconnect=pause), CMD's processes
// are frozen; CMD does not start on a paused hold.
func (c *cli) supervise(ctx context.Context, o *options, sess *session.Session, argv []string, h hold,
	rh *shold.Hold, what string, lostG time.Duration) error {
	if err := rh.Gate(ctx); err != nil {
		if ctx.Err() != nil {
			return interruptedWaiting(ctx, "paused, before CMD started")
		}
		return exitCode{exitLost, fmt.Errorf("%s on %s lost before %s started: %w", what, h.path, argv[0], err)}
	}
	var ch *child
	restore, err := c.sigs.route(func() (func(syscall.Signal), error) {
		if ctx.Err() != nil {
			return nil, interruptedWaiting(ctx, "acquiring, before CMD started")
		}
		var err error
		if ch, err = c.procs.start(argv, h.env(), o.pidns, o.grace, c.stderr); err != nil {
			return nil, err
		}
		return func(sig syscall.Signal) {
			ch.requestStop(sig, o.grace)
			fmt.Fprintf(c.stderr, "shepherd: %s: stopping %s (SIGKILL after %v)\n", sigName(sig), argv[0], o.grace)
			go ch.await(o.grace)
		}, nil
	})
	if err != nil {
		return err
	}
	defer restore()
	desc := what + " on " + h.path
	if !c.ride(rh, ch, rh.Lost(), desc, argv[0], o.grace) {
		return exitCode{code: ch.status()}
	}
	lost := desc + lostHow(rh.Context())
	c.stopLost(ch, lostG, lost, argv[0])
	c.awaitSession(sess)
	return exitCode{exitLost, fmt.Errorf("%s while %s ran", lost, argv[0])}
}

// acquireError maps a failed acquisition to an exit status.
func acquireError(ctx context.Context, o *options, sess *session.Session, what, path string, err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return exitCode{exitTimeout, fmt.Errorf("%s %s: not acquired within %v", what, path, o.timeout)}
	case ctx.Err() != nil:
		return interruptedWaiting(ctx, "waiting for "+path)
	case errors.Is(err, recipe.ErrMaxLeasesMismatch) || errors.Is(err, recipe.ErrWrongKind) ||
		errors.Is(err, recipe.ErrForeignRecipe):
		return refused(sess, what, path, err)
	case errors.Is(err, recipe.ErrPermission) || errors.Is(err, recipe.ErrNoPrincipal):
		return deniedError(what, path, err)
	}
	return fmt.Errorf("%s %s: %w", what, path, err)
}

// refused is the error of a refusal because of what is at path (or, when
// path is a part of another recipe's layout, at its parent): exit status 6,
// with a message that says what is there.
func refused(sess *session.Session, what, path string, err error) error {
	at, how := path, " holds "
	var m *layout.Mismatch
	errors.As(err, &m)
	switch {
	case m != nil && m.Child != "":
		at = path + "/" + m.Child // the container another kind's nodes are in
	case m != nil && m.Part != "":
		at = zkpath.Parent(path)
		how = " is part of " + at + ", which holds "
	}
	there := "another kind of recipe"
	qctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if snap, ierr := admin.Inspect(qctx, sess, sess.Path(at)); ierr == nil {
		there = describe(snap)
	}
	return exitCode{exitRefused, fmt.Errorf("%s %s refused: %s%s%s (%v)", what, path, at, how, there, err)}
}

// deniedError is the error of a refusal by an ACL (a node's, or the
// server's refusal of the creator ACL for want of a principal): exit status
// 6; err names the node and the permission.
func deniedError(what, path string, err error) error {
	return exitCode{exitRefused, fmt.Errorf("%s %s refused: %w", what, path, err)}
}

// describe names what a snapshot shows at its path.
func describe(s *admin.Snapshot) string {
	mode := ""
	if !s.Fair {
		mode = "non-fair "
	}
	people := fmt.Sprintf("%d holding, %d waiting", len(s.Holders), len(s.Waiters))
	switch s.Kind {
	case "semaphore":
		return fmt.Sprintf("a semaphore with maxLeases %d (%s)", s.MaxLeases, people)
	case "mutex":
		return fmt.Sprintf("a %slock (%s)", mode, people)
	case "rwlock":
		return fmt.Sprintf("a read-write lock (%s)", people)
	case "election":
		article := "an "
		if mode != "" {
			article = "a "
		}
		return fmt.Sprintf("%s%selection (%s)", article, mode, count(len(s.Holders)+len(s.Waiters), "candidate"))
	case "schedule":
		return fmt.Sprintf("a schedule (%s)", count(len(s.Holders)+len(s.Waiters), "candidate"))
	}
	return "nodes of another kind of recipe"
}

// count is "1 candidate", "2 candidates".
func count(n int, what string) string { return fmt.Sprintf("%d %s%s", n, what, plural(n)) }
