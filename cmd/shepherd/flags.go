package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shepherdzk/shepherd/session"
)

// errHelp: -h or --help was given; the help has been printed to stdout.
var errHelp = errors.New("help requested")

// isBool reports whether f is a boolean flag ("-once" alone means true).
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// isDuration reports whether f is a time.Duration flag.
func isDuration(f *flag.Flag) bool {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	_, ok = g.Get().(time.Duration)
	return ok
}

// parseArgs parses fs's flags wherever they are among args: Go's flag package
// stops at the first argument that is not a flag, so "lock /p -timeout 1s"
// would take "-timeout" for CMD. Here flags may come before or after the
// positional arguments ("-name value", "-name=value", "--name value", bool
// flags alone or "-name=false"); only "--" ends the flags, and what follows
// it is returned as cmd. The other arguments are returned in pos.
//
// With stopAtArg, parsing stops at the first positional argument, which is
// returned with everything after it, unparsed, in pos (the flags before a
// subcommand); there -version and --version return errVersion.
func parseArgs(fs *flag.FlagSet, args []string, stopAtArg bool) (pos, cmd []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return pos, args[i+1:], nil
		}
		if len(a) < 2 || a[0] != '-' {
			if stopAtArg {
				return append(pos, args[i:]...), nil, nil
			}
			pos = append(pos, a)
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		name, value, hasValue := strings.Cut(name, "=")
		switch name {
		case "h", "help":
			return nil, nil, errHelp
		case "version":
			if stopAtArg && fs.Lookup(name) == nil {
				return nil, nil, errVersion // before the subcommand
			}
		case "":
			return nil, nil, fmt.Errorf("bad flag syntax %q", a)
		}
		if credentialFlags[name] {
			return nil, nil, credentialFlagError(name) // never echo the value
		}
		f := fs.Lookup(name)
		if f == nil {
			if len(pos) > 1 {
				return nil, nil, fmt.Errorf("unknown flag -%s: put -- before CMD (only -- ends shepherd's flags)", name)
			}
			return nil, nil, fmt.Errorf("unknown flag -%s", name)
		}
		if !hasValue {
			if isBool(f) {
				value = "true"
			} else {
				if i+1 >= len(args) {
					return nil, nil, fmt.Errorf("flag -%s needs a value", name)
				}
				i++
				value = args[i]
			}
		}
		if err := fs.Set(name, value); err != nil {
			if isDuration(f) {
				if _, nerr := strconv.ParseFloat(value, 64); nerr == nil {
					return nil, nil, fmt.Errorf("-%s %s: missing unit (e.g. %ss)", name, value, value)
				}
				return nil, nil, fmt.Errorf("-%s %q: want a duration with a unit, e.g. 300ms, 30s, 1m30s", name, value)
			}
			return nil, nil, fmt.Errorf("flag -%s: invalid value %q", name, value)
		}
	}
	return pos, nil, nil
}

// sub is one subcommand's flags and help text.
type sub struct {
	name     string
	synopsis string   // "shepherd lock [flags] PATH -- CMD [ARG...]"
	about    string   // what it does, a paragraph or more
	examples []string // command lines
	notes    string   // printed after the flags
	fs       *flag.FlagSet
}

func newSub(name, synopsis, about string, examples ...string) *sub {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &sub{name: name, synopsis: synopsis, about: about, examples: examples, fs: fs}
}

// help prints the subcommand's usage, every flag and the examples.
func (s *sub) help(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", s.synopsis, strings.TrimSpace(s.about))
	flags := 0
	s.fs.VisitAll(func(*flag.Flag) { flags++ })
	if flags > 0 {
		fmt.Fprint(w, "\nFlags:\n")
		s.fs.SetOutput(w)
		s.fs.PrintDefaults()
		s.fs.SetOutput(io.Discard)
	}
	if s.notes != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(s.notes))
	}
	fmt.Fprintf(w, "\nExample%s:\n", plural(len(s.examples)))
	for _, e := range s.examples {
		fmt.Fprintf(w, "  %s\n", e)
	}
}

// parse parses args; on -h/--help it prints the help to stdout and returns
// errHelp.
func (s *sub) parse(args []string, stdout io.Writer) (pos, cmd []string, err error) {
	pos, cmd, err = parseArgs(s.fs, args, false)
	if errors.Is(err, errHelp) {
		s.help(stdout)
		return nil, nil, errHelp
	}
	if err != nil {
		return nil, nil, usagef("%s: %v", s.name, err)
	}
	return pos, cmd, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// options are the flags the subcommands share.
type options struct {
	zk             string
	namespace      string
	sessionTimeout time.Duration
	connectWait    time.Duration
	verbose        bool
	tls            bool
	tlsCA          string
	tlsCert        string
	tlsKey         string
	authFile       string

	acl          aclPreset
	timeout      time.Duration
	grace        time.Duration
	pidns        bool
	onDisconnect session.DisconnectPolicy
	metrics      string // -metrics ADDR
	tickLines    bool   // print a schedule's takeovers and ticks
}

// defaultOptions are the flags' defaults.
func defaultOptions() options {
	return options{zk: envOr("SHEPHERD_ZK", "127.0.0.1:2181"), sessionTimeout: 10 * time.Second,
		tlsCA: os.Getenv(envTLSCA), tlsCert: os.Getenv(envTLSCert), tlsKey: os.Getenv(envTLSKey),
		connectWait: 15 * time.Second, grace: 10 * time.Second, pidns: true,
		onDisconnect: session.StopOnDisconnect}
}

// registerConn defines the connection flags on fs, with o's current values
// (the defaults, or what was given before the subcommand) as defaults.
func (o *options) registerConn(fs *flag.FlagSet) {
	fs.StringVar(&o.zk, "zk", o.zk, "ZooKeeper connect string `host:port,...[/chroot]` (env SHEPHERD_ZK)")
	fs.StringVar(&o.namespace, "namespace", o.namespace, "path `prefix` for PATH, under the connect string's chroot (e.g. /myapp)")
	fs.DurationVar(&o.sessionTimeout, "session-timeout", o.sessionTimeout, "ZooKeeper session timeout (the server must grant it: at least its\n"+
		"minSessionTimeout, by default 2 ticks; exit 2 if not)")
	fs.DurationVar(&o.connectWait, "connect-timeout", o.connectWait, "give up connecting to ZooKeeper after this long (exit 3; sooner when\n"+
		"every server has refused the connection for 2s: nothing listens there)")
	fs.BoolVar(&o.verbose, "v", o.verbose, "log the session's events to stderr")
	fs.BoolVar(&o.tls, "tls", o.tls, "talk TLS to ZooKeeper (its secureClientPort), verifying the servers\n"+
		"against the system's CAs unless -tls-ca (-tls-ca, -tls-cert and\n"+
		"-tls-key imply -tls)")
	fs.StringVar(&o.tlsCA, "tls-ca", o.tlsCA, "verify the servers against the CA certificates in `FILE`\n"+
		"(PEM; env "+envTLSCA+")")
	fs.StringVar(&o.tlsCert, "tls-cert", o.tlsCert, "present the client certificate in `FILE` (PEM; with -tls-key:\n"+
		"mutual TLS); re-read at each reconnect, so that a rotated certificate\n"+
		"is used (env "+envTLSCert+")")
	fs.StringVar(&o.tlsKey, "tls-key", o.tlsKey, "the client certificate's private key, in `FILE` (PEM; env\n"+
		envTLSKey+")")
	fs.StringVar(&o.authFile, "auth-file", o.authFile, "authenticate with the credentials in `FILE`, a line scheme:credentials\n"+
		"(e.g. digest:alice:secret) that only you may read (chmod 600); or set\n"+
		envAuth+" to that line. Never on the command line: ps shows it")
}

// registerHold defines the flags of the subcommands that hold something
// while CMD runs.
func (o *options) registerHold(fs *flag.FlagSet) {
	fs.Var(&o.acl, "acl", o.acl.help())
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "give up acquiring after this long, exit 4 (0: wait forever)")
	fs.DurationVar(&o.grace, "grace", o.grace, "when CMD must stop: time between SIGTERM and SIGKILL to its processes\n"+
		"(after a hold loss, at most a sixth of the session timeout)")
	fs.StringVar(&o.metrics, "metrics", o.metrics, "serve /metrics (Prometheus; hold metrics labelled by path), /readyz (200 while\n"+
		"holding or leading, not paused), /healthz and /livez (500 when wedged) on `ADDR`")
	fs.BoolVar(&o.pidns, "pidns", o.pidns, "run CMD in a new PID namespace where the kernel allows it\n"+
		"(false: always use the subreaper fallback; see 'shepherd help')")
	fs.Var((*policyFlag)(&o.onDisconnect), "on-disconnect", "what a lost connection to ZooKeeper does to CMD (`stop|pause`): stop it\n"+
		"as on a hold loss (exit 5), or pause: freeze its processes while the session\n"+
		"may live, thaw them if it comes back, kill them if it is lost (see 'shepherd help')")
}

// policyFlag is -on-disconnect: stop or pause.
type policyFlag session.DisconnectPolicy

func (p *policyFlag) String() string {
	if p == nil || *p == 0 {
		return ""
	}
	return session.DisconnectPolicy(*p).String()
}

func (p *policyFlag) Set(s string) error {
	switch s {
	case "stop":
		*p = policyFlag(session.StopOnDisconnect)
	case "pause":
		*p = policyFlag(session.PauseOnDisconnect)
	default:
		return errors.New("want stop or pause")
	}
	return nil
}

// check validates the shared flags; the error names the flag.
func (o *options) check(name string) error {
	for _, d := range []struct {
		flag   string
		v      time.Duration
		zeroOK string // what 0 means, if it is allowed
	}{
		{"session-timeout", o.sessionTimeout, ""},
		{"connect-timeout", o.connectWait, ""},
		{"timeout", o.timeout, "wait forever"},
		{"grace", o.grace, "SIGKILL at once"},
	} {
		switch {
		case d.zeroOK == "" && d.v <= 0:
			return usagef("%s: -%s %v: must be positive", name, d.flag, d.v)
		case d.v < 0:
			return usagef("%s: -%s %v: must not be negative (0: %s)", name, d.flag, d.v, d.zeroOK)
		}
	}
	return nil
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// checkConnectString refuses what session.ParseConnectString lets pass but
// is surely a typo: an empty server between commas ("a:2181,,b:2182"), and
// a chroot given more than once or before the last server
// ("h:2181/a,h:2181/b": the chroot would be "/a,h:2181/b").
func checkConnectString(s string) error {
	hosts, chroot, _ := strings.Cut(s, "/")
	list := strings.Split(hosts, ",")
	for i, h := range list {
		if strings.TrimSpace(h) == "" && len(list) > 1 {
			return fmt.Errorf("server %d is empty (two commas in a row, or one at an end)", i+1)
		}
	}
	if strings.Contains(chroot, ",") {
		return fmt.Errorf("a chroot (/path) comes once, after the last server: %q", "/"+chroot)
	}
	return nil
}

// noteTimeout says, without -v, that the server granted a shorter session
// timeout than -session-timeout asked for (its maxSessionTimeout, by
// default 20 ticks): holds then end sooner after a lost connection than
// the flag says.
func noteTimeout(w io.Writer, o *options, granted time.Duration) {
	if granted > 0 && granted < o.sessionTimeout {
		fmt.Fprintf(w, "shepherd: -session-timeout %v: ZooKeeper at %s granted %v (its maxSessionTimeout)\n", o.sessionTimeout, o.zk, granted)
	}
}

// prefixed is err with another message: the CLI's words for a library
// error whose message repeats what the CLI says first.
type prefixed struct {
	msg string
	err error
}

func (e prefixed) Error() string { return e.msg }
func (e prefixed) Unwrap() error { return e.err }

// unprefixed is err's message without the operation prefixes the layers
// added ("revoke NODE: ", "delete: "): the CLI names the operation once.
func unprefixed(err error) string {
	m := err.Error()
	for {
		switch {
		case strings.HasPrefix(m, "revoke "):
			_, rest, ok := strings.Cut(m, ": ")
			if !ok {
				return m
			}
			m = rest
		case strings.HasPrefix(m, "delete: "):
			m = strings.TrimPrefix(m, "delete: ")
		default:
			return m
		}
	}
}

// sigName names a signal as kill -l does ("SIGINT"), not as the C library
// describes it ("interrupt": "interrupted by interrupt").
func sigName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return fmt.Sprintf("signal %d", int(sig))
}
