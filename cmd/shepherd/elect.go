package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

var (
	errTimedOut = errors.New("not elected in time")
	errFinished = errors.New("finished")
)

func (c *cli) cmdElect(ctx context.Context, o *options, args []string) error {
	s := newSub("elect", "shepherd elect [flags] PATH [-- CMD [ARG...]]", `
Take part in the leader election at PATH and run CMD while this process is
the leader. When leadership is lost, CMD's processes are stopped and shepherd
rejoins the election (with -once it exits 5 instead); when CMD exits, shepherd
exits with its status. SIGINT or SIGTERM hands leadership over at once: to
the candidate of highest -priority (then the first in line), the others in
line stepping aside (docs/handover.md); with -handover-wait D the leader
first waits up to D, leading, for a candidate of higher priority than its own
(a rolling deploy's new version). -yield D moves leadership to a candidate of
higher priority by itself, at most once every D. 'shepherd handover' moves it
on an operator's word.

With -http ADDR, shepherd also serves, for a service that is not written in
Go (a Kubernetes sidecar, a load balancer's health check):
  /readyz            200 while this process is the leader, else 503 (for a
                     readinessProbe: traffic to the leader alone); the JSON
                     body names this candidate and the leader:
                     {"leading":false,"id":"b","leader":"a","term":123}
                     With -on-disconnect=pause, /readyz answers 503 (and the
                     body "paused":true) while leadership is paused
  /healthz, /livez   200 while this process works, leader or follower, paused
                     or not (for a livenessProbe); 500 when a leader's CMD
                     cannot be stopped or the connection stays suspended past
                     twice the session timeout. Body: /readyz's, and
                     "status":"ok" (or "error" and "error":"why")
  /metrics           Prometheus metrics (the observe/prometheus adapter)
With -http and no CMD, shepherd only campaigns and serves, until SIGTERM
(exit 0). Fair mode shares PATH with Curator's LeaderLatch. CMD's
environment, the exit statuses and what happens to CMD's processes: see
'shepherd help'.`,
		`shepherd elect -id "$(hostname)" /services/cron/leader -- ./scheduler`,
		`shepherd elect -http 0.0.0.0:8080 -id "$POD_NAME" /services/web/leader`,
		`shepherd elect -once -timeout 10s /jobs/migrate/leader -- ./migrate.sh`,
		`shepherd elect -priority 20401 -attr version=2.4.1 -handover-wait 20s /services/web/leader -- ./web`)
	o.registerConn(s.fs)
	o.registerHold(s.fs)
	id := s.fs.String("id", defaultID(), "candidate `ID` shown to others (status, /readyz; SHEPHERD_ID)")
	once := s.fs.Bool("once", false, "exit after one term instead of rejoining the election (exit 5 if it is lost)")
	nonFair := s.fs.Bool("nonfair", false, "race for a single leader node instead of queueing.\n"+
		"PATH then stays in ZooKeeper, a persistent node, after the last leader:\n"+
		"its data version fences the terms (see the README). 'shepherd ls' shows\n"+
		"it idle; shepherd never deletes it: zkCli.sh delete PATH, once no process uses it")
	httpAddr := s.fs.String("http", "", "serve /readyz, /healthz, /livez and /metrics on `ADDR` (e.g. 127.0.0.1:8080)")
	cand := registerCandidate(s.fs)
	pos, argv, err := s.parse(args, c.stdout)
	if err != nil {
		return err
	}
	path, err := onePath("elect", pos)
	if err != nil {
		return err
	}
	switch {
	case len(argv) == 0 && *httpAddr == "":
		return usagef("elect: missing CMD (shepherd elect [flags] PATH -- CMD...), or -http ADDR to only campaign and serve")
	case len(argv) == 0 && *once:
		return usagef("elect: -once needs a CMD")
	case *httpAddr != "" && o.metrics != "":
		return usagef("elect: -http serves /metrics too: give -http or -metrics")
	}
	if err := election.ValidateID(*id); err != nil {
		return usagef("elect: -id: %v", err)
	}
	if err := o.check("elect"); err != nil {
		return err
	}
	// A session is Suspended at most the session timeout (then Lost, and a
	// new one is made): twice that, the client is wedged.
	st := &leaderState{id: *id, maxSuspended: 2 * o.sessionTimeout}
	var sopts []session.Option
	if *httpAddr != "" {
		ln, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			return fmt.Errorf("elect: -http: %w", err)
		}
		srv, obs, err := newProbeServer(st)
		if err != nil {
			ln.Close()
			return err
		}
		sopts = append(sopts, session.WithObserver(obs))
		fmt.Fprintf(c.stderr, "shepherd: serving /readyz, /healthz, /livez and /metrics on http://%s\n", ln.Addr())
		go func() { _ = srv.Serve(ln) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}
	sess, err := c.connect(ctx, o, sopts...)
	if err != nil {
		return err
	}
	defer sess.Close()
	// OnElected must have stopped CMD's processes before the election
	// reports it stuck: -grace, then the backstop.
	opts := []election.Option{election.WithStopDeadline(o.grace + 2*backstop)}
	copts, err := cand.options()
	if err != nil {
		return err
	}
	opts = append(opts, copts...)
	if *nonFair {
		opts = append(opts, election.NonFair())
	}
	e, err := election.New(sess, path, *id, opts...)
	if err != nil {
		return usagef("elect: %v", err)
	}
	st.setElection(e)

	// SIGINT/SIGTERM end the election: CMD is stopped and leadership handed
	// over at once.
	runCtx, cancel, stop := c.signalContext(ctx)
	defer stop()
	// -timeout bounds the wait for the first term.
	elected := make(chan struct{})
	if o.timeout > 0 {
		t := time.AfterFunc(o.timeout, func() {
			select {
			case <-elected:
			default:
				cancel(errTimedOut)
			}
		})
		defer t.Stop()
	}
	var result error
	var firstTerm sync.Once
	err = e.Run(runCtx, election.Callbacks{
		OnElected: func(lctx context.Context, term election.Term) {
			firstTerm.Do(func() { close(elected) })
			if lctx.Err() != nil {
				return
			}
			st.setLeading(true)
			fmt.Fprintf(c.stderr, "shepherd: elected %s at %s (term %d)\n", *id, path, int64(term))
			if len(argv) == 0 {
				<-lctx.Done()
				st.setLeading(false)
				return
			}
			var lp pausable = neverPaused{}
			if l := e.Leadership(); l != nil {
				lp = l
			}
			// CMD does not start on a paused leadership.
			if lp.Gate(lctx) != nil {
				st.setLeading(false)
				return
			}
			h := hold{path: path, id: *id, token: int64(term), elect: true, slot: -1}
			h.node, h.session = st.leaderNode(lctx, term, sess)
			ch, err := c.procs.start(argv, h.env(), o.pidns, o.grace, c.stderr)
			if err != nil {
				st.setLeading(false)
				result = err
				cancel(errFinished)
				return
			}
			if !c.ride(lp, ch, lctx.Done(), "leadership at "+path, argv[0], o.grace) {
				st.setLeading(false)
				result = exitCode{code: ch.status()}
				cancel(errFinished)
			} else {
				st.setLeading(false)
				if sig, ok := signalOf(runCtx); ok {
					c.stopLeading(ch, sig, o, sess, argv[0])
					result = exitCode{code: ch.status()}
					return
				}
				how := lostHow(lctx)
				c.stopLost(ch, lostGrace(o, sess), fmt.Sprintf("leadership at %s%s (term %d)", path, how, int64(term)), argv[0])
				if *once {
					c.awaitSession(sess)
					result = exitCode{exitLost, fmt.Errorf("leadership at %s%s while %s ran", path, how, argv[0])}
					cancel(errFinished)
				}
			}
		},
		OnPaused: func() {
			st.setPaused(true)
			if len(argv) == 0 {
				fmt.Fprintf(c.stderr, "shepherd: connection to ZooKeeper lost: /readyz answers 503 (the leadership at %s is kept while the session lives)\n", path)
			}
		},
		OnResumed: func() {
			st.setPaused(false)
			if len(argv) == 0 {
				fmt.Fprintf(c.stderr, "shepherd: the leadership at %s resumed\n", path)
			}
		},
		OnRevoked: func() { st.setPaused(false) },
		OnLeader: func(l election.Leader) {
			st.setLeader(l)
			if o.verbose {
				fmt.Fprintf(c.stderr, "shepherd: leader is %q (term %d)\n", l.ID, int64(l.Term))
			}
		},
	})
	cause := context.Cause(runCtx)
	switch {
	case result != nil:
		return result
	case errors.Is(cause, errTimedOut):
		return exitCode{exitTimeout, fmt.Errorf("elect %s: not elected within %v", path, o.timeout)}
	case errors.Is(err, recipe.ErrPermission) || errors.Is(err, recipe.ErrNoPrincipal):
		return deniedError("elect", path, err)
	case errors.Is(err, recipe.ErrWrongKind) || errors.Is(err, recipe.ErrForeignRecipe):
		return refused(sess, "elect", path, err)
	case err != nil:
		return fmt.Errorf("elect %s: %w", path, err)
	}
	if sig, ok := signalOf(runCtx); ok && len(argv) > 0 {
		return exitCode{128 + int(sig), fmt.Errorf("%s while waiting to lead %s", interrupted{sig}, path)}
	}
	return nil
}

// stopLeading stops CMD's processes on a signal to shepherd while it leads
// (elect, schedule), and waits until none is left: that signal, SIGKILL
// after -grace. Leadership is kept while CMD stops (it is given up when
// the caller returns): should the connection go meanwhile, the grace is
// cut as for a loss.
func (c *cli) stopLeading(ch *child, sig syscall.Signal, o *options, sess *session.Session, name string) {
	live := func(st session.State) bool { return st == session.Connected || st == session.Reconnected }
	stopL := sess.Listen(func(ev session.Event) {
		if !live(ev.State) {
			ch.requestStop(syscall.SIGTERM, lostGrace(o, sess))
		}
	})
	defer stopL()
	if !live(sess.State()) {
		ch.requestStop(syscall.SIGTERM, lostGrace(o, sess))
	}
	ch.requestStop(sig, o.grace)
	fmt.Fprintf(c.stderr, "shepherd: %s: stopping %s (SIGKILL after %v)\n", sigName(sig), name, o.grace)
	ch.await(o.grace)
}

// leaderNode is this leader's node (under the same root as PATH) and
// session: the election reports the new leader, itself, before OnElected.
func (st *leaderState) leaderNode(ctx context.Context, term election.Term, sess *session.Session) (string, int64) {
	st.mu.Lock()
	l := st.leader
	st.mu.Unlock()
	if l.Term != term || l.ID != st.id {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if got, err := st.election.Leader(qctx); err == nil && got.Term == term {
			l = got
		}
	}
	if l.Term != term {
		return "", sess.SessionID()
	}
	return strings.TrimPrefix(l.Node, sess.Namespace()), l.SessionID
}

// leaderState is what the probes report.
type leaderState struct {
	id           string
	maxSuspended time.Duration // /healthz fails past this long Suspended
	election     *election.Election

	mu      sync.Mutex
	leading bool
	paused  bool // leading, but the connection is lost (-on-disconnect=pause)
	leader  election.Leader
}

func (st *leaderState) setElection(e *election.Election) {
	st.mu.Lock()
	st.election = e
	st.mu.Unlock()
}

func (st *leaderState) setLeading(v bool) {
	st.mu.Lock()
	st.leading = v
	st.mu.Unlock()
}

// setPaused records a pause of leadership (OnPaused, OnResumed; OnRevoked,
// which comes after both, clears it).
func (st *leaderState) setPaused(v bool) {
	st.mu.Lock()
	st.paused = v
	st.mu.Unlock()
}

func (st *leaderState) setLeader(l election.Leader) {
	st.mu.Lock()
	st.leader = l
	st.mu.Unlock()
}

// probe is the body of /readyz (and of /healthz and /livez, in health).
type probe struct {
	Leading bool   `json:"leading"`
	Paused  bool   `json:"paused,omitempty"` // leading, but the connection is lost (-on-disconnect=pause)
	ID      string `json:"id"`
	Leader  string `json:"leader"` // the leader's id ("" when none is known)
	Term    int64  `json:"term"`   // the leader's term, decimal
}

func (st *leaderState) probe() probe {
	st.mu.Lock()
	defer st.mu.Unlock()
	return probe{Leading: st.leading, Paused: st.leading && st.paused, ID: st.id, Leader: st.leader.ID, Term: int64(st.leader.Term)}
}

func (st *leaderState) healthy() error {
	st.mu.Lock()
	e := st.election
	st.mu.Unlock()
	if e == nil {
		return nil
	}
	return e.Healthy(st.maxSuspended)
}

// health is the body of /healthz and /livez.
type health struct {
	Status string `json:"status"`          // "ok" or "error"
	Error  string `json:"error,omitempty"` // why, when "error"
	probe
}

// serveReady answers /readyz: 200 while leading and not paused (traffic
// moves away from a leader whose connection is lost).
func (st *leaderState) serveReady(w http.ResponseWriter, _ *http.Request) {
	p := st.probe()
	code := http.StatusOK
	if !p.Leading || p.Paused {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, p)
}

// serveHealth answers /healthz and /livez, as client-go's HealthzAdaptor
// does: 200 while this process works, leader or follower, paused or not
// (leadership is /readyz's), 500 when it is stuck (election.Healthy): a
// liveness probe restarts only a process that a restart can help.
func (st *leaderState) serveHealth(w http.ResponseWriter, _ *http.Request) {
	h := health{Status: "ok", probe: st.probe()}
	code := http.StatusOK
	if err := st.healthy(); err != nil {
		h.Status, h.Error, code = "error", err.Error(), http.StatusInternalServerError
	}
	writeJSON(w, code, h)
}
