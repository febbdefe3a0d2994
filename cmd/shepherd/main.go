// Command shepherd runs commands under ZooKeeper coordination, in the spirit
// of `etcdctl lock/elect` and `consul lock`:
//
//	shepherd dev                            a local ZooKeeper to try it on
//	shepherd lock PATH -- CMD...            run CMD while holding a lock
//	shepherd semaphore -n N PATH -- CMD...  run CMD while holding one of N leases
//	shepherd elect -id ID PATH -- CMD...    run CMD while leader; -http serves /readyz
//	shepherd schedule -every D PATH -- CMD  run CMD once per tick, on the leader only
//	shepherd status PATH                    show holders, waiters, leader, tokens
//	shepherd ls PREFIX                      list the recipes under PREFIX
//	shepherd version                        the module version, VCS revision and Go version
//
// Every process CMD starts is part of the hold: on Linux CMD runs in a new
// PID namespace under a small init (this binary, re-executed), so that a hold
// loss, a signal or even a SIGKILL of shepherd leaves none of them running.
// See the usage text below (`shepherd help`) for the environment CMD gets, the
// exit statuses and the fallback where namespaces are refused.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shepherdzk/shepherd/internal/wire/zkpath"
	"github.com/shepherdzk/shepherd/session"
)

// Exit statuses.
const (
	exitError       = 1
	exitUsage       = 2
	exitUnreachable = 3
	exitTimeout     = 4
	exitLost        = 5
	exitRefused     = 6
	exitEmpty       = 7
	exitCannotExec  = 126
	exitNotFound    = 127
)

const usage = `shepherd: run commands under ZooKeeper coordination.

Usage:
  shepherd dev       [-port 2181] [-data DIR] [-tls]    a local ZooKeeper to try shepherd on
  shepherd lock      [flags] PATH -- CMD [ARG...]       run CMD while holding a lock
  shepherd semaphore [flags] -n N PATH -- CMD [ARG...]  run CMD while holding one of N leases
  shepherd elect     [flags] PATH [-- CMD [ARG...]]     run CMD while leader; -http for probes
  shepherd schedule  -every D [flags] PATH -- CMD ...   run CMD once per tick, on the leader only
  shepherd status    [flags] PATH                       show holders, waiters, leader, tokens
  shepherd ls        [flags] PREFIX                     list the recipes under PREFIX ("/": all)
  shepherd revoke    [flags] [-ask] PATH [NODE]         an operator's force-release (or request)
  shepherd handover  [flags] PATH [ID]                  move leadership to ID (or the best candidate)
  shepherd rm        [flags] PATH                       remove what an idle recipe left at PATH
  shepherd version                                      shepherd's version (also --version)
  shepherd help      [SUBCOMMAND]                       this text, or a subcommand's flags

Flags may come before or after PATH; only "--" ends them. 'shepherd
SUBCOMMAND -h' lists a subcommand's flags. ZooKeeper is reached through -zk
or SHEPHERD_ZK, a connect string as zkCli and Curator take it:
"host:port,host:port[/chroot]". No ZooKeeper at hand? Run 'shepherd dev'.

A secured ZooKeeper: -tls-ca FILE verifies the servers (TLS, to the
secureClientPort), -tls-cert FILE and -tls-key FILE add a client certificate
(mutual TLS; re-read at each reconnect); or SHEPHERD_TLS_CA, SHEPHERD_TLS_CERT,
SHEPHERD_TLS_KEY. Credentials never go on the command line (ps shows it):
-auth-file FILE (a line scheme:credentials, e.g. digest:alice:secret, in a
file only you can read) or SHEPHERD_AUTH=scheme:credentials. -acl creator
(the default with credentials or a client certificate) makes the nodes
shepherd creates changeable, and PATH joinable, only by their creator's
principal, and readable by all (status works for anyone); -acl creator-only
hides them too; -acl open opens them to all (the default without
credentials). PATH's missing parents get the same ACL: create shared
parents beforehand. ZooKeeper's ACLs cannot separate the holders of one PATH:
deleting a node takes DELETE on its parent, so whoever may take part in
PATH's line may delete the others' nodes in it. ACLs keep out the principals
without rights on PATH, not fellow holders. (SASL/Kerberos is not supported.)

Examples:
  shepherd dev &                     # then: export SHEPHERD_ZK=127.0.0.1:2181
  shepherd lock -timeout 1m /jobs/backup -- ./backup.sh
  shepherd semaphore -n 3 /limits/api -- ./call-api.sh
  shepherd elect -id "$(hostname)" /services/cron/leader -- ./scheduler
  shepherd elect -http 127.0.0.1:8080 -id "$POD_NAME" /services/web/leader
  shepherd schedule -every 5m /jobs/report -- ./report.sh
  shepherd status -json /services/cron/leader
  shepherd ls /services

CMD's environment (lock, semaphore, elect and schedule set the same variables):
  SHEPHERD_PATH     PATH as given
  SHEPHERD_NODE     the hold's node: the lock's, the lease's, or the leader's,
                    under the same root as PATH
  SHEPHERD_TOKEN    the fencing token, in decimal: it grows with every grant
                    of PATH (the node's creation zxid; 'status' shows it too)
  SHEPHERD_SESSION  the ZooKeeper session that holds it, 0x-hex as ZooKeeper
                    prints session ids
  SHEPHERD_ID       the holder's -id
  SHEPHERD_TERM     elect, schedule: the term, the same number as SHEPHERD_TOKEN
  SHEPHERD_SLOT     semaphore: the lease's slot, 0..N-1, unique among the holders
  SHEPHERD_TICK     schedule: the tick's number N (0, 1, ...)
  SHEPHERD_TICK_TIME
                    schedule: when tick N was due (ZooKeeper's clock), RFC 3339 UTC
  SHEPHERD_ATTEMPT  schedule: 1, or more for a tick run again after its leader was lost

CMD's processes: every process CMD starts, double-forked daemons included,
is part of the hold. When the hold is lost, or shepherd gets SIGINT or
SIGTERM, they all get that signal (SIGTERM on a loss), then SIGKILL after
-grace, and shepherd releases the hold only when none is left. When CMD exits
on its own, the processes it left running are stopped the same way. On a hold
loss the grace is cut to a sixth of the session timeout: shepherd hears of a
loss when its connection has been silent for 2/3 of the session timeout, and
ZooKeeper may give the hold to another client at 3/3. (When ZooKeeper ends
the session itself, e.g. after shepherd was paused, the others may be
granted the hold before shepherd hears of it: no client can prevent that.)
Once they are gone after a lost connection, shepherd waits at most the
session timeout for ZooKeeper to be back and removes its node there, so that
the next in line is not kept waiting for the session to expire, then exits 5.
If shepherd itself is SIGKILLed, none of them outlives it: CMD runs under an
init process (shepherd itself) in a new PID namespace (inside a user
namespace when not root), and the kernel kills every process of the
namespace when its init dies, which it does with shepherd. Where the kernel
refuses namespaces (containers without CAP_SYS_ADMIN, some sandboxes), or
with -pidns=false, shepherd says so once on stderr and falls back to the same
init without a namespace: it is the subreaper of CMD's processes and stops
them all as above, and kills them when shepherd dies; only if that helper is
SIGKILLed too (kill -9 of the whole process group, the OOM killer) can they
survive. Processes started through another daemon (systemd-run, docker, ssh)
are never covered. Inside the namespace, CMD sees the namespace's PIDs: a
PID file written there means nothing outside (use -pidns=false for that);
when shepherd is not root, $$ is the same small number for every CMD (name
temporary files with mktemp, not $$).

With -on-disconnect=pause (lock, semaphore, elect, schedule), a lost connection to
ZooKeeper pauses the hold instead of ending it while the session may still
live: shepherd freezes every process of CMD's (SIGSTOP, the whole tree),
thaws them (SIGCONT) if the same session comes back, its node intact (the
hold was never lost), and kills them at once (SIGKILL: a frozen process
never runs again) if the session is lost, then exits 5. A signal to shepherd
thaws CMD after passing the signal on. elect -http answers /readyz with 503
while paused. A ZooKeeper restart or a network blip then costs CMD a pause,
not its run. The trade-off: a frozen CMD performs no side effect, but one
already in flight when the connection dropped may still land after the
session expired and another holder was granted the hold; only writes fenced
with SHEPHERD_TOKEN are safe across a session expiry.

Exit status:
  CMD's own   CMD ran to its end (128+N when it was killed by signal N)
  0           status or ls found something there; elect -http without CMD, or
              schedule, stopped by SIGINT or SIGTERM (a tick's CMD exit status
              is recorded as the tick's outcome, not returned)
  1           other errors
  2           bad usage (a -session-timeout below the server's minimum too; a
              -tls-ca, -tls-cert, -tls-key or -auth-file that cannot be read)
  3           ZooKeeper unreachable: not connected within -connect-timeout,
              or every server refused the connection for 2s (a TLS failure
              too: the message names each server and the cause)
  4           not acquired within -timeout; revoke -ask: not released within -wait
  5           the hold was lost while CMD ran (CMD was stopped)
  6           refused: PATH holds another kind of recipe (or rm: someone
              holds or waits there), or a semaphore
              with another -n, or a schedule with another -every (the
              message says what is there); or an ACL denies this principal
              a permission the recipe needs (the message names the node
              and the permission)
  7           status: nothing at PATH; ls: no recipe under PREFIX; revoke:
              nobody holds PATH (or NODE is not there); rm: no recipe at PATH
  126, 127    CMD cannot be executed, or is not found
  128+N       interrupted by signal N while waiting (SIGINT: 130)
`

// usageError is bad command-line input: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitCode carries a specific exit status.
type exitCode struct {
	code int
	err  error
}

func (e exitCode) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

// interrupted is the cause of the command's context when a signal ends it.
type interrupted struct{ sig syscall.Signal }

func (e interrupted) Error() string { return "interrupted by " + sigName(e.sig) }

// signalOf returns the signal that cancelled ctx, if one did.
func signalOf(ctx context.Context) (syscall.Signal, bool) {
	var in interrupted
	if errors.As(context.Cause(ctx), &in) {
		return in.sig, true
	}
	return 0, false
}

// signals routes SIGINT and SIGTERM to one handler at a time: by default
// the handler cancels the command's context; while CMD runs, it stops CMD.
// The handler runs with mu held, so that a command can check the context
// and start CMD atomically: no signal falls between the two.
type signals struct {
	mu      sync.Mutex
	handler func(syscall.Signal)
	def     func(syscall.Signal)
}

func newSignals(def func(syscall.Signal)) *signals {
	s := &signals{handler: def, def: def}
	ch := make(chan os.Signal, 8)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for sig := range ch {
			s.mu.Lock()
			s.handler(sig.(syscall.Signal))
			s.mu.Unlock()
		}
	}()
	return s
}

// route runs start with the router locked and, if it returns a handler,
// routes signals to it until the returned restore is called.
func (s *signals) route(start func() (func(syscall.Signal), error)) (restore func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, err := start()
	if err != nil || h == nil {
		return func() {}, err
	}
	s.handler = h
	return func() {
		s.mu.Lock()
		s.handler = s.def
		s.mu.Unlock()
	}, nil
}

// cli is one run of the command line.
type cli struct {
	stdout, stderr io.Writer
	sigs           *signals
	procs          *launcher
	atExit         []func() // run when the command has returned (-metrics' server)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == initCommand {
		os.Exit(runInit(os.Args[2:]))
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	c := &cli{stdout: os.Stdout, stderr: os.Stderr,
		sigs:  newSignals(func(s syscall.Signal) { cancel(interrupted{s}) }),
		procs: newLauncher()}
	os.Exit(c.run(ctx, os.Args[1:]))
}

// run executes the command line and returns the exit status.
func (c *cli) run(ctx context.Context, args []string) int {
	defer func() {
		for _, f := range c.atExit {
			f()
		}
	}()
	o := defaultOptions()
	global := newSub("shepherd", "shepherd [flags] SUBCOMMAND ...", "")
	o.registerConn(global.fs)
	o.registerHold(global.fs)
	printUsage := func(w io.Writer) {
		fmt.Fprint(w, usage)
		fmt.Fprintln(w, "\nFlags of lock, semaphore, elect and schedule, which may also come before the subcommand\n"+
			"(status and ls take -zk, -namespace, -session-timeout, -connect-timeout, -v,\n"+
			"the -tls flags and -auth-file):")
		global.fs.SetOutput(w)
		global.fs.PrintDefaults()
		global.fs.SetOutput(io.Discard)
	}
	rest, _, err := parseArgs(global.fs, args, true)
	switch {
	case errors.Is(err, errHelp):
		printUsage(c.stdout)
		return 0
	case errors.Is(err, errVersion):
		printVersion(c.stdout)
		return 0
	case err != nil:
		return c.report(usagef("%v", err))
	case len(rest) == 0:
		printUsage(c.stderr)
		return exitUsage
	}
	name, rest := rest[0], rest[1:]
	if name == "help" {
		if len(rest) == 0 {
			printUsage(c.stdout)
			return 0
		}
		name, rest = rest[0], []string{"-h"}
	}
	switch name {
	case "lock":
		err = c.cmdLock(ctx, &o, rest)
	case "semaphore":
		err = c.cmdSemaphore(ctx, &o, rest)
	case "elect":
		err = c.cmdElect(ctx, &o, rest)
	case "schedule":
		err = c.cmdSchedule(ctx, &o, rest)
	case "status":
		err = c.cmdStatus(ctx, &o, rest)
	case "ls":
		err = c.cmdLs(ctx, &o, rest)
	case "revoke":
		err = c.cmdRevoke(ctx, &o, rest)
	case "handover":
		err = c.cmdHandover(ctx, &o, rest)
	case "rm":
		err = c.cmdRm(ctx, &o, rest)
	case "dev":
		err = c.cmdDev(ctx, rest)
	case "version":
		err = c.cmdVersion(ctx, rest)
	default:
		err = usagef("unknown subcommand %q (want dev, lock, semaphore, elect, schedule, status, ls, revoke, handover, rm or version)", name)
	}
	return c.report(err)
}

func (c *cli) report(err error) int {
	var ue usageError
	var ec exitCode
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(c.stderr, "shepherd:", ue.msg)
		fmt.Fprintln(c.stderr, "run 'shepherd help' for usage")
		return exitUsage
	case errors.As(err, &ec):
		if ec.err != nil {
			fmt.Fprintln(c.stderr, "shepherd:", ec.err)
		}
		return ec.code
	default:
		fmt.Fprintln(c.stderr, "shepherd:", err)
		return exitError
	}
}

// onlyPath checks that pos is exactly one valid PATH, for a subcommand
// that takes no CMD.
func onlyPath(name string, pos []string) (string, error) {
	if len(pos) > 1 {
		return "", usagef("%s takes one PATH, not %d (%s)", name, len(pos), strings.Join(pos, " "))
	}
	return onePath(name, pos)
}

// onePath checks that pos is exactly one valid PATH, for a subcommand
// whose CMD follows "--".
func onePath(name string, pos []string) (string, error) {
	switch {
	case len(pos) == 0:
		return "", usagef("%s: missing PATH", name)
	case len(pos) > 1:
		return "", usagef("%s: unexpected %q after PATH: put -- before CMD (shepherd %s [flags] PATH -- CMD...)",
			name, strings.Join(pos[1:], " "), name)
	}
	if err := zkpath.Validate(pos[0]); err != nil {
		return "", usagef("%s: %v", name, err)
	}
	return pos[0], nil
}

// connect opens the session. The connect string's chroot and -namespace
// both prefix PATH, the chroot first.
func (c *cli) connect(ctx context.Context, o *options, extra ...session.Option) (*session.Session, error) {
	err := checkConnectString(o.zk)
	var servers []string
	if err == nil {
		servers, _, err = session.ParseConnectString(o.zk) // checked here for the message, and counted
	}
	if err != nil {
		return nil, usagef("-zk %q: %v", o.zk, err)
	}
	if o.namespace != "" {
		if err := zkpath.Validate(o.namespace); err != nil {
			return nil, usagef("-namespace: %v", err)
		}
	}
	sec, err := o.security(c.stderr)
	if err != nil {
		return nil, err
	}
	obs, err := c.observe(o) // -metrics, schedule's lines
	if err != nil {
		return nil, err
	}
	if obs != nil {
		extra = append([]session.Option{session.WithObserver(obs)}, extra...)
	}
	opts := append(append([]session.Option{session.WithSessionTimeout(o.sessionTimeout)}, sec...), extra...)
	if o.onDisconnect == session.PauseOnDisconnect {
		opts = append(opts, session.WithDisconnectPolicy(session.PauseOnDisconnect))
	}
	opts = append(opts, session.WithNamespace(o.namespace)) // under the connect string's chroot ("" adds none)
	if o.verbose {
		opts = append(opts, session.WithLogger(slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}
	tctx, tcancel := context.WithTimeout(ctx, o.connectWait)
	defer tcancel()
	cctx, cancel := context.WithCancelCause(tctx)
	defer cancel(nil)
	refused := &refusals{servers: len(servers), giveUp: func() { cancel(errAllRefused) }}
	opts = append(opts, session.WithDialer(refused.dial))
	s, err := session.Connect(cctx, o.zk, opts...)
	refused.stop()
	switch {
	case errors.Is(err, session.ErrInvalidArgument):
		return nil, usagef("%v", err)
	case errors.Is(err, session.ErrTimeoutRejected):
		// ZooKeeper was reached: the flag is wrong for this server.
		return nil, usagef("-session-timeout %v is less than ZooKeeper at %s grants (from its minSessionTimeout, "+
			"by default 2 ticks, to its maxSessionTimeout, by default 20 ticks): %v", o.sessionTimeout, o.zk, err)
	case err != nil && ctx.Err() != nil:
		return nil, interruptedWaiting(ctx, "connecting to ZooKeeper")
	case err != nil && errors.Is(context.Cause(cctx), errAllRefused):
		d, n, notFound := refused.span()
		if notFound != "" {
			return nil, exitCode{exitUnreachable, fmt.Errorf("cannot reach ZooKeeper at %s: connection refused "+
				"or host not found (%d attempts in %v; %s)", o.zk, n, d, notFound)}
		}
		return nil, exitCode{exitUnreachable, fmt.Errorf("cannot reach ZooKeeper at %s: connection refused "+
			"(%d attempts in %v): is ZooKeeper running there?", o.zk, n, d)}
	case err != nil:
		return nil, exitCode{exitUnreachable, cliWords{fmt.Errorf("cannot reach ZooKeeper at %s: %w%s", o.zk, err, tlsHint(o, err))}}
	}
	noteTimeout(c.stderr, o, s.Timeout())
	return s, nil
}

// cliWords is err in the CLI's words: the library's advice to use its Go
// option WithTLS becomes the flags' (tlsHint follows with them).
type cliWords struct{ err error }

func (e cliWords) Error() string {
	return strings.ReplaceAll(e.err.Error(), "(use session.WithTLS)", "(use -tls-ca)")
}

func (e cliWords) Unwrap() error { return e.err }

// tlsHint says which flags a TLS-related connect failure calls for: the
// library's own advice names its Go option, not the CLI's flags.
func tlsHint(o *options, err error) string {
	msg := err.Error()
	switch {
	case !o.tlsOn() && (strings.Contains(msg, "TLS port") || strings.Contains(msg, "answered in TLS")):
		return fmt.Sprintf("\n(for a TLS port: -tls-ca FILE, or %s; with -tls-cert and -tls-key when the server "+
			"asks for a client certificate)", envTLSCA)
	case o.tlsOn() && strings.Contains(msg, "unknown authority"):
		return fmt.Sprintf("\n(give the CA that issued the servers' certificates: -tls-ca FILE, or %s)", envTLSCA)
	case o.tlsOn() && strings.Contains(msg, "the server refused us") && o.tlsCert == "":
		return fmt.Sprintf("\n(the server may want a client certificate: -tls-cert FILE -tls-key FILE, or %s and %s)",
			envTLSCert, envTLSKey)
	}
	return ""
}

// interruptedWaiting is the error of a command a signal stopped before CMD
// ran: exit status 128+N.
func interruptedWaiting(ctx context.Context, what string) error {
	sig, ok := signalOf(ctx)
	if !ok {
		sig = syscall.SIGINT
	}
	return exitCode{128 + int(sig), fmt.Errorf("%s while %s", interrupted{sig}, what)}
}

// acquireCtx bounds acquisition by -timeout.
func acquireCtx(ctx context.Context, o *options) (context.Context, context.CancelFunc) {
	if o.timeout > 0 {
		return context.WithTimeout(ctx, o.timeout)
	}
	return context.WithCancel(ctx)
}

// lostGrace is the grace CMD gets after a hold loss: -grace, at most a
// sixth of the session timeout. A holder learns of a loss when its
// connection has been silent for 2/3 of the session timeout; ZooKeeper can
// expire the session, and grant the hold to another, at 3/3: CMD's
// processes are gone with half of that third to spare.
func lostGrace(o *options, sess *session.Session) time.Duration {
	t := sess.Timeout()
	if t <= 0 {
		t = o.sessionTimeout
	}
	return min(o.grace, t/6)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// signalContext is a context that SIGINT or SIGTERM to shepherd ends (cause:
// the signal, see signalOf), as ctx's end does (cause: ctx's), with its
// cancel for the caller's own causes; stop undoes the routing and cancels.
func (c *cli) signalContext(ctx context.Context) (runCtx context.Context, cancel context.CancelCauseFunc, stop func()) {
	runCtx, cancel = context.WithCancelCause(context.Background())
	restore, _ := c.sigs.route(func() (func(syscall.Signal), error) {
		if ctx.Err() != nil {
			cancel(context.Cause(ctx))
		}
		return func(sig syscall.Signal) { cancel(interrupted{sig}) }, nil
	})
	return runCtx, cancel, func() {
		restore()
		cancel(nil)
	}
}
