// Command shepherd runs commands under ZooKeeper coordination, in the spirit
// of `etcdctl lock/elect` and `consul lock`:
//
//	shepherd lock PATH -- CMD...          run CMD while holding a lock
//	shepherd semaphore -n N PATH -- CMD... run CMD while holding one of N leases
//	shepherd elect -id ID PATH -- CMD...  run CMD while leader; rejoin after a loss
//	shepherd status PATH                  show holders, waiters, leader, terms
//
// The connect string comes from -zk or SHEPHERD_ZK. Exit status: CMD's own
// when it ran to its end; 2 for bad usage; 3 when ZooKeeper cannot be
// reached; 4 when acquisition timed out; 5 when the hold was lost while CMD
// ran (CMD was stopped); 1 for any other error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/shepherdzk/shepherd/session"
)

// Exit statuses.
const (
	exitError       = 1
	exitUsage       = 2
	exitUnreachable = 3
	exitTimeout     = 4
	exitLost        = 5
)

const usage = `shepherd: run commands under ZooKeeper coordination.

Usage:
  shepherd lock      [flags] PATH -- CMD [ARG...]
  shepherd semaphore [flags] -n N PATH -- CMD [ARG...]
  shepherd elect     [flags] -id ID PATH -- CMD [ARG...]
  shepherd status    [flags] PATH

CMD gets SHEPHERD_TOKEN (the fencing token: the lock's, the lease's or the
term), SHEPHERD_NODE (the holder's node) and SHEPHERD_PATH in its environment.
If the hold is lost while CMD runs, CMD gets SIGTERM at once, SIGKILL after
-grace, and shepherd exits 5 (elect instead rejoins the election, unless
-once). SIGINT and SIGTERM to shepherd are passed on to CMD; the hold is
released when CMD ends.

Examples:
  SHEPHERD_ZK=127.0.0.1:2181 shepherd lock /jobs/backup -- ./backup.sh
  shepherd -zk 127.0.0.1:2181 semaphore -n 3 /limits/api -- curl -s http://127.0.0.1:8080/
  shepherd elect -id "$(hostname)" /services/cron/leader -- ./scheduler
  shepherd status --json /services/cron/leader

Exit status: CMD's own; 2 bad usage; 3 ZooKeeper unreachable; 4 acquisition
timed out; 5 hold lost; 1 other errors.

Common flags (before or after the subcommand):
`

// options are the flags every subcommand takes.
type options struct {
	zk             string
	timeout        time.Duration
	sessionTimeout time.Duration
	connectWait    time.Duration
	namespace      string
	grace          time.Duration
	verbose        bool
}

// defaultOptions are the flags' defaults.
func defaultOptions() options {
	return options{zk: envOr("SHEPHERD_ZK", "127.0.0.1:2181"), sessionTimeout: 10 * time.Second,
		connectWait: 15 * time.Second, grace: 10 * time.Second}
}

// register defines the common flags on fs, with o's current values (the
// defaults, or what was given before the subcommand) as defaults.
func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.zk, "zk", o.zk, "ZooKeeper connect string `host:port,...` (env SHEPHERD_ZK)")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "give up acquiring after this long (0: wait forever)")
	fs.DurationVar(&o.sessionTimeout, "session-timeout", o.sessionTimeout, "ZooKeeper session timeout")
	fs.DurationVar(&o.connectWait, "connect-timeout", o.connectWait, "give up connecting to ZooKeeper after this long")
	fs.StringVar(&o.namespace, "namespace", o.namespace, "path prefix for PATH (e.g. /myapp)")
	fs.DurationVar(&o.grace, "grace", o.grace, "time between SIGTERM and SIGKILL when CMD must stop")
	fs.BoolVar(&o.verbose, "v", o.verbose, "log to stderr")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// usageError is bad command-line input: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitError carries a specific exit status.
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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, stop)
	stop()
	os.Exit(code)
}

// run executes the command line and returns the exit status. stopSignals
// stops the signal-context so that commands that forward signals to a child
// can take signals over.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, stopSignals func()) int {
	o := defaultOptions()
	global := flag.NewFlagSet("shepherd", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	o.register(global)
	printUsage := func(w io.Writer) {
		fmt.Fprint(w, usage)
		global.SetOutput(w)
		global.PrintDefaults()
		global.SetOutput(io.Discard)
	}
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout)
			return 0
		}
		fmt.Fprintln(stderr, "shepherd:", err)
		return exitUsage
	}
	rest := global.Args()
	if len(rest) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	cmd, rest := rest[0], rest[1:]
	var err error
	switch cmd {
	case "lock":
		err = cmdLock(ctx, &o, rest, stderr, stopSignals)
	case "semaphore":
		err = cmdSemaphore(ctx, &o, rest, stderr, stopSignals)
	case "elect":
		err = cmdElect(ctx, &o, rest, stderr, stopSignals)
	case "status":
		err = cmdStatus(ctx, &o, rest, stdout, stderr)
	case "help", "-h", "--help":
		printUsage(stdout)
		return 0
	default:
		err = usagef("unknown command %q (want lock, semaphore, elect or status)", cmd)
	}
	return report(err, stderr)
}

func report(err error, stderr io.Writer) int {
	var ue usageError
	var ec exitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "shepherd:", ue.msg)
		fmt.Fprintln(stderr, "run 'shepherd help' for usage")
		return exitUsage
	case errors.As(err, &ec):
		if ec.err != nil {
			fmt.Fprintln(stderr, "shepherd:", ec.err)
		}
		return ec.code
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintln(stderr, "shepherd: timed out:", err)
		return exitTimeout
	default:
		fmt.Fprintln(stderr, "shepherd:", err)
		return exitError
	}
}

// parse parses a subcommand's flags and splits PATH from CMD.
func parse(fs *flag.FlagSet, o *options, args []string, wantCmd bool) (path string, cmd []string, err error) {
	fs.SetOutput(io.Discard)
	o.register(fs)
	if err := fs.Parse(args); err != nil {
		return "", nil, usagef("%s: %v", fs.Name(), err)
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return "", nil, usagef("%s: missing PATH", fs.Name())
	}
	path, rest = rest[0], rest[1:]
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	if wantCmd && len(rest) == 0 {
		return "", nil, usagef("%s: missing CMD after PATH (shepherd %s PATH -- CMD...)", fs.Name(), fs.Name())
	}
	if !wantCmd && len(rest) > 0 {
		return "", nil, usagef("%s: unexpected arguments %q", fs.Name(), strings.Join(rest, " "))
	}
	if o.timeout < 0 || o.grace < 0 || o.sessionTimeout <= 0 || o.connectWait <= 0 {
		return "", nil, usagef("%s: durations must be positive", fs.Name())
	}
	return path, rest, nil
}

// connect opens the session.
func connect(ctx context.Context, o *options, stderr io.Writer) (*session.Session, error) {
	servers, err := session.SplitServers(o.zk)
	if err != nil {
		return nil, usagef("-zk: %v", err)
	}
	opts := []session.Option{session.WithSessionTimeout(o.sessionTimeout)}
	if o.namespace != "" {
		opts = append(opts, session.WithNamespace(o.namespace))
	}
	if o.verbose {
		opts = append(opts, session.WithLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}
	cctx, cancel := context.WithTimeout(ctx, o.connectWait)
	defer cancel()
	s, err := session.Open(cctx, servers, opts...)
	switch {
	case errors.Is(err, session.ErrInvalidArgument):
		return nil, usagef("%v", err)
	case err != nil:
		return nil, exitCode{exitUnreachable, fmt.Errorf("cannot reach ZooKeeper at %s: %w", o.zk, err)}
	}
	return s, nil
}

// acquireCtx bounds acquisition by -timeout.
func acquireCtx(ctx context.Context, o *options) (context.Context, context.CancelFunc) {
	if o.timeout > 0 {
		return context.WithTimeout(ctx, o.timeout)
	}
	return context.WithCancel(ctx)
}
