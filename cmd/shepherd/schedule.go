package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/schedule"
)

func (c *cli) cmdSchedule(ctx context.Context, o *options, args []string) error {
	s := newSub("schedule", "shepherd schedule -every D|-cron EXPR [flags] PATH -- CMD [ARG...]", `
Run CMD once per tick of -every on one process of a fleet: every process
runs the same command line; the elected leader runs CMD for each tick (tick
N is due at the schedule's epoch plus N intervals, by ZooKeeper's clock),
and a record at PATH says which tick was started and finished, so that a new
leader continues where the last one stopped. A tick is recorded finished at
most once; CMD's exit status is its outcome (0: "ok", else "error: exit N").
A tick whose leader was lost while CMD ran is run again (-misfire rerun, the
default; SHEPHERD_ATTEMPT then grows) or left (-misfire skip). shepherd runs
until SIGINT or SIGTERM: it then stops a running CMD (that signal, SIGKILL
after -grace), records its end, hands leadership over and exits 0; with
-drain D it lets CMD run on for up to D first, and a CMD stopped past D
leaves its tick interrupted, to be run again by the next leader (a rolling
deploy loses no tick). 'shepherd
status PATH' shows the last tick and the next due. See package schedule for
what is guaranteed. CMD's environment: elect's variables, and SHEPHERD_TICK
(N), SHEPHERD_TICK_TIME (when tick N was due, RFC 3339 UTC) and
SHEPHERD_ATTEMPT; what happens to CMD's processes: see 'shepherd help'.`,
		"shepherd schedule -every 5m /jobs/report -- ./report.sh",
		"shepherd schedule -cron '30 2 * * *' -tz Europe/Paris /jobs/backup -- ./backup.sh",
		`shepherd schedule -every 1h -id "$(hostname)" -catch-up all:3 -run-timeout 50m /jobs/compact -- ./compact.sh`)
	o.registerConn(s.fs)
	o.registerHold(s.fs)
	id := s.fs.String("id", defaultID(), "candidate `ID` shown to others (status; SHEPHERD_ID)")
	every := s.fs.Duration("every", 0, "the interval between ticks (at least 1ms; or -cron; every process of PATH must give the same)")
	cronSpec := s.fs.String("cron", "", "tick at the times of a cron `EXPR` instead (robfig/cron: 5 fields, or 6 with seconds\n"+
		"first, or @daily, @every 90s...; CRON_TZ=Zone prefix or -tz); due by ZooKeeper's clock")
	tz := s.fs.String("tz", "", "the time `ZONE` of -cron (e.g. Europe/Paris; default UTC)")
	misfire := s.fs.String("misfire", "rerun", "a tick whose leader was lost while CMD ran: `rerun|skip` it")
	catchUp := s.fs.String("catch-up", "once", "missed ticks (nobody led, CMD ran long): run the latest `once|skip|all:N`\n"+
		"(skip: none; all:N: each, oldest first, at most N behind)")
	minSpacing := s.fs.Duration("min-spacing", 0, "start a tick no sooner than this after the previous one started (0: no spacing)")
	drain := s.fs.Duration("drain", 0, "on SIGINT/SIGTERM, let a running CMD finish for up to `D`, then hand over; past D, stop CMD\n"+
		"and record the tick interrupted, for the next leader to run again (-misfire rerun).\n"+
		"Unset: CMD is stopped at once and its tick recorded finished (cancelled)")
	runTimeout := s.fs.Duration("run-timeout", 0, "stop CMD (SIGTERM, SIGKILL after -grace) this long after its tick started;\n"+
		"the outcome is \"timeout\" (0: no timeout)")
	pos, argv, err := s.parse(args, c.stdout)
	if err != nil {
		return err
	}
	path, err := onePath("schedule", pos)
	if err != nil {
		return err
	}
	if len(argv) == 0 {
		return usagef("schedule: missing CMD (shepherd schedule -every D [flags] PATH -- CMD...)")
	}
	spec, err := cronFlags(*every, *cronSpec, *tz)
	if err != nil {
		return err
	}
	if o.timeout != 0 {
		return usagef("schedule: -timeout is not supported (a schedule's candidate waits for its turn)")
	}
	if err := election.ValidateID(*id); err != nil {
		return usagef("schedule: -id: %v", err)
	}
	opts := []schedule.Option{
		schedule.WithMinSpacing(*minSpacing),
		schedule.WithRunTimeout(*runTimeout),
		// The job must have stopped CMD's processes before the election
		// reports it stuck: -grace, then the backstop.
		schedule.WithElection(election.WithStopDeadline(o.grace + 2*backstop)),
	}
	if flagSet(s.fs, "drain") {
		if *drain < 0 {
			return usagef("schedule: -drain %v: must not be negative", *drain)
		}
		opts = append(opts, schedule.WithDrain(*drain))
	}
	switch *misfire {
	case "rerun":
		opts = append(opts, schedule.WithMisfire(schedule.RerunInterrupted))
	case "skip":
		opts = append(opts, schedule.WithMisfire(schedule.SkipInterrupted))
	default:
		return usagef("schedule: -misfire %q: want rerun or skip", *misfire)
	}
	cu, err := parseCatchUp(*catchUp)
	if err != nil {
		return usagef("schedule: -catch-up %q: %v", *catchUp, err)
	}
	opts = append(opts, schedule.WithCatchUp(cu))
	if err := o.check("schedule"); err != nil {
		return err
	}
	o.tickLines = true
	sess, err := c.connect(ctx, o)
	if err != nil {
		return err
	}
	defer sess.Close()
	var sch *schedule.Schedule
	if spec != "" {
		sch, err = schedule.NewCron(sess, path, *id, spec, opts...)
	} else {
		sch, err = schedule.New(sess, path, *id, *every, opts...)
	}
	if err != nil {
		return usagef("schedule: %v", err)
	}
	// The leader's node, for SHEPHERD_NODE: a query of the schedule's
	// election, as elect's.
	q, err := election.New(sess, path+"/leader", *id)
	if err != nil {
		return usagef("schedule: %v", err)
	}
	st := &leaderState{id: *id}
	st.setElection(q)

	// SIGINT/SIGTERM end Run: a running CMD is stopped, its end recorded,
	// and leadership handed over.
	runCtx, _, stop := c.signalContext(ctx)
	defer stop()

	job := func(jctx context.Context, t schedule.Tick) error {
		var lp pausable = neverPaused{}
		var lost <-chan struct{}
		if l := sch.Leadership(); l != nil && l.Term() == t.Term {
			lp, lost = l, l.Context().Done()
		}
		// CMD does not start on a paused leadership.
		if err := lp.Gate(jctx); err != nil {
			return err
		}
		h := hold{path: path, id: *id, token: int64(t.Term), elect: true, slot: -1, tick: &t}
		h.node, h.session = st.leaderNode(jctx, t.Term, sess)
		ch, err := c.procs.start(argv, h.env(), o.pidns, o.grace, c.stderr)
		if err != nil {
			fmt.Fprintf(c.stderr, "shepherd: tick %d: %v\n", t.N, err)
			return err
		}
		if flagSet(s.fs, "drain") {
			note := context.AfterFunc(runCtx, func() {
				if sig, ok := signalOf(runCtx); ok {
					fmt.Fprintf(c.stderr, "shepherd: %s: tick %d: %s runs on for up to -drain %v, then the leadership is handed over\n", sigName(sig), t.N, argv[0], *drain)
				}
			})
			defer note()
		}
		// An operator's request for the leadership (revoke -ask) lets the
		// tick finish: the schedule steps down after it.
		if !c.ride(tickOnly{lp}, ch, jctx.Done(), "leadership at "+path, argv[0], o.grace) {
			if code := ch.status(); code != 0 {
				fmt.Fprintf(c.stderr, "shepherd: tick %d: %s exited %d\n", t.N, argv[0], code)
				return fmt.Errorf("exit %d", code)
			}
			return nil
		}
		// jctx ended: a signal to shepherd, leadership lost, or the run
		// timeout.
		leaderLost := lost == nil
		if lost != nil {
			select {
			case <-lost:
				leaderLost = true
			default:
			}
		}
		switch sig, ok := signalOf(runCtx); {
		case ok:
			c.stopLeading(ch, sig, o, sess, argv[0])
		case leaderLost:
			c.stopLost(ch, lostGrace(o, sess), fmt.Sprintf("leadership at %s lost (term %d)", path, int64(t.Term)), argv[0])
		default:
			ch.requestStop(syscall.SIGTERM, o.grace)
			fmt.Fprintf(c.stderr, "shepherd: tick %d: -run-timeout %v: stopping %s (SIGKILL after %v)\n", t.N, *runTimeout, argv[0], o.grace)
			ch.await(o.grace)
		}
		return fmt.Errorf("exit %d", ch.status())
	}
	err = sch.Run(runCtx, job)
	if err != nil {
		if errors.Is(err, schedule.ErrIntervalMismatch) || errors.Is(err, schedule.ErrBadRecord) {
			return exitCode{exitRefused, fmt.Errorf("schedule %s refused: %w", path, err)}
		}
		if errors.Is(err, recipe.ErrPermission) || errors.Is(err, recipe.ErrNoPrincipal) {
			return deniedError("schedule", path, err)
		}
		if errors.Is(err, recipe.ErrWrongKind) {
			return refused(sess, "schedule", path, err)
		}
		return fmt.Errorf("schedule %s: %w", path, err)
	}
	return nil
}

// cronFlags checks -every, -cron and -tz, and returns the cron expression
// to give schedule.NewCron ("" for -every).
func cronFlags(every time.Duration, spec, tz string) (string, error) {
	switch {
	case spec != "" && every != 0:
		return "", usagef("schedule: give -every or -cron, not both")
	case spec == "" && tz != "":
		return "", usagef("schedule: -tz is the time zone of -cron")
	case spec == "" && every < time.Millisecond:
		return "", usagef("schedule: -every D (at least 1ms) or -cron EXPR is required")
	case spec == "":
		return "", nil
	}
	if tz != "" {
		if strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "TZ=") {
			return "", usagef("schedule: -tz and a CRON_TZ= prefix in -cron: give one")
		}
		if _, err := time.LoadLocation(tz); err != nil {
			return "", usagef("schedule: -tz %q: %v", tz, err)
		}
		spec = "CRON_TZ=" + tz + " " + spec
	}
	if _, err := schedule.ParseCron(spec); err != nil {
		return "", usagef("schedule: -cron: %v", err)
	}
	return spec, nil
}

// parseCatchUp reads -catch-up: once, skip or all:N.
func parseCatchUp(s string) (schedule.CatchUp, error) {
	switch s {
	case "once":
		return schedule.CatchUpOnce, nil
	case "skip":
		return schedule.CatchUpSkip, nil
	}
	if n, ok := strings.CutPrefix(s, "all:"); ok {
		max, err := strconv.Atoi(n)
		if err != nil || max < 1 {
			return schedule.CatchUp{}, errors.New("all:N needs N >= 1")
		}
		return schedule.CatchUpAll(max), nil
	}
	return schedule.CatchUp{}, errors.New("want once, skip or all:N")
}

// tickOnly is a leadership as a tick's CMD rides it: a revocation request
// does not stop the tick (the schedule steps down after it).
type tickOnly struct{ pausable }

func (tickOnly) RevokeRequested() <-chan struct{} { return nil }
