// Package pgtest starts a real PostgreSQL server for tests, as zktest starts
// ZooKeeper: Debian's binaries (package "postgresql",
// /usr/lib/postgresql/<version>/bin, the newest version there), a cluster
// made by initdb in a temporary directory (tmpfs where there is one), the
// server on a free loopback port (127.0.0.1) with its unix socket in that
// directory, trust authentication for the superuser "postgres", fsync off
// (the data is thrown away). It never uses a server already running on the
// machine.
//
// initdb and postgres refuse to run as root: as root, both run as the
// "postgres" user (which Debian's package creates), in a directory that
// user owns; as anyone else, as that user.
//
// Without the binaries Start returns an error matching ErrNotInstalled, and
// tests skip with its message. The server is stopped by Close (SIGINT, a
// fast shutdown; SIGKILL if it has not ended within 10 s), and, on Linux,
// killed when the test binary dies.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// ErrNotInstalled: no PostgreSQL binaries were found.
var ErrNotInstalled = errors.New("pgtest: PostgreSQL is not installed (Debian: apt-get install postgresql; scripts/setup.sh does)")

// stopWait is how long Close waits for a fast shutdown before SIGKILL.
const stopWait = 10 * time.Second

// User is the superuser of the test cluster (trust authentication).
const User = "postgres"

// Server is a running PostgreSQL server. Its methods are safe for
// concurrent use.
type Server struct {
	bin                string
	dir, data, logPath string
	port               int
	cmd                *exec.Cmd
	exited             chan struct{} // closed when cmd has been waited for
	closeOnce          sync.Once
	closeErr           error
}

// BinDir returns the directory of the PostgreSQL binaries Start runs
// (initdb, postgres): PGTEST_BINDIR if set, else the newest version's of
// Debian's layout. Without them the error matches ErrNotInstalled.
func BinDir() (string, error) {
	if d := os.Getenv("PGTEST_BINDIR"); d != "" {
		if !hasServer(d) {
			return "", fmt.Errorf("%w (PGTEST_BINDIR=%s has no initdb and postgres)", ErrNotInstalled, d)
		}
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(a) - version(b) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if hasServer(dirs[i]) {
			return dirs[i], nil
		}
	}
	return "", ErrNotInstalled
}

func hasServer(dir string) bool {
	return isFile(filepath.Join(dir, "initdb")) && isFile(filepath.Join(dir, "postgres"))
}

// version is the major version in /usr/lib/postgresql/<version>/bin.
func version(bin string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return n
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// Start makes a new cluster and starts its server, waiting until it accepts
// connections or ctx ends. The caller must Close it.
func Start(ctx context.Context) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := makeDir(cred)
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, data: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "postgres.log")}
	if err := s.initdb(ctx, bin, cred); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// A port drawn free may be taken before the server binds it: draw again.
	for try := 1; ; try++ {
		err = s.start(ctx, bin, cred)
		if err == nil {
			return s, nil
		}
		if try == 5 || ctx.Err() != nil || !strings.Contains(s.Log(), "could not bind") {
			s.Close()
			return nil, err
		}
	}
}

// credential is whom the server runs as: nil (the caller) unless the
// caller is root, then Debian's "postgres" user.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(User)
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, PostgreSQL needs the %q user to run as: %w", User, err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// makeDir makes the cluster's directory, on tmpfs where there is one that
// every user may enter, owned by the user the server runs as. As root, the
// temporary directory must be one the postgres user can reach (a TMPDIR
// under /root is not): else /tmp.
func makeDir(cred *syscall.Credential) (string, error) {
	base := os.TempDir()
	if cred != nil && !reachable(base) {
		base = "/tmp"
	}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && st.Mode().Perm()&0o003 == 0o003 {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "pgtest-")
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("pgtest: %w", err)
		}
	}
	return dir, nil
}

// reachable reports whether every user may enter dir and its parents.
func reachable(dir string) bool {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// env is the environment of initdb and postgres: nothing of the caller's
// (a PGDATA or PGPORT of the caller's must not leak in).
func env() []string { return []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "TZ=UTC"} }

func (s *Server) initdb(ctx context.Context, bin string, cred *syscall.Credential) error {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", s.data, "-U", User, "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	cmd.Env, cmd.Dir = env(), s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	return nil
}

// start starts the server on a free port and waits until it is ready.
func (s *Server) start(ctx context.Context, bin string, cred *syscall.Credential) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", s.data, "-h", "127.0.0.1", "-p", strconv.Itoa(port),
		"-k", s.dir, "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=100",
		"-c", "logging_collector=off")
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env(), s.dir, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	exited := make(chan struct{})
	if err := spawn(cmd, exited); err != nil {
		logf.Close()
		return fmt.Errorf("pgtest: starting postgres: %w", err)
	}
	go func() {
		<-exited
		logf.Close()
	}()
	s.port, s.cmd, s.exited = port, cmd, exited
	return s.waitReady(ctx)
}

// spawn starts cmd, and waits for it, from a goroutine locked to its OS
// thread: Linux's Pdeathsig fires when the thread that forked a child
// exits, so that thread must live as long as the server, and the server
// dies with the test binary. exited is closed when cmd has ended.
func spawn(cmd *exec.Cmd, exited chan<- struct{}) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		err := cmd.Start()
		errc <- err
		if err == nil {
			_ = cmd.Wait()
			close(exited)
		}
	}()
	return <-errc
}

// freePort is a loopback port free at the moment of the call.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitReady waits until postmaster.pid says "ready" (as pg_ctl waits), the
// server exits, or ctx ends.
func (s *Server) waitReady(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(filepath.Join(s.data, "postmaster.pid")); err == nil {
			if lines := strings.Split(string(b), "\n"); len(lines) > 7 && strings.TrimSpace(lines[7]) == "ready" {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("pgtest: postgres exited before it was ready:\n%s", s.LogTail(20))
		case <-ctx.Done():
			return fmt.Errorf("pgtest: postgres not ready: %w\n%s", ctx.Err(), s.LogTail(20))
		case <-tick.C:
		}
	}
}

var dbN atomic.Int64

// NewDatabase creates an empty database (with psql) and returns its name,
// unique to the server: a test of its own.
func (s *Server) NewDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("db%d", dbN.Add(1))
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", "CREATE DATABASE "+name)
	cmd.Env = append(env(), s.Env("postgres")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("pgtest: creating database %s: %w\n%s", name, err, out)
	}
	return name, nil
}

// Port is the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// SocketDir is the directory of the server's unix socket.
func (s *Server) SocketDir() string { return s.dir }

// DSN is a connection URL for database db (e.g. "postgres") as User, over
// TCP, as pgx and lib/pq take it.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", User, s.port, db)
}

// Env is libpq's environment for database db (PGHOST, PGPORT, PGUSER,
// PGDATABASE), for psql and other clients run by a test.
func (s *Server) Env(db string) []string {
	return []string{"PGHOST=127.0.0.1", "PGPORT=" + strconv.Itoa(s.port), "PGUSER=" + User, "PGDATABASE=" + db,
		"PGSSLMODE=disable"}
}

// Log is the server's output so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logPath)
	return string(b)
}

// LogTail is the last n lines of the server's output.
func (s *Server) LogTail(n int) string {
	lines := strings.Split(strings.TrimRight(s.Log(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Close stops the server (a fast shutdown, SIGKILL after 10 s) and removes
// its directory. It is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if s.cmd != nil {
			_ = s.cmd.Process.Signal(syscall.SIGINT)
			t := time.NewTimer(stopWait)
			select {
			case <-s.exited:
			case <-t.C:
				_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
				<-s.exited
			}
			t.Stop()
		}
		if err := os.RemoveAll(s.dir); err != nil {
			s.closeErr = fmt.Errorf("pgtest: %w", err)
		}
	})
	return s.closeErr
}

// StartT starts a server for one test and closes it when the test ends. It
// skips tb when PostgreSQL is not installed, and fails it on any other
// error; a failed test's log shows the server's last lines.
func StartT(tb testing.TB) *Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx)
	if errors.Is(err, ErrNotInstalled) {
		tb.Skip(err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("pgtest: server log tail:\n%s", s.LogTail(20))
		}
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

// Lazy is a server started by the first test that needs it, shared by the
// package's tests, and closed by TestMain (Close): a package whose tests
// that need PostgreSQL do not run (-run, -short) never starts one.
type Lazy struct {
	once sync.Once
	s    *Server
	err  error
}

// Get returns the server, starting it on the first call. It skips tb when
// PostgreSQL is not installed, and fails it when the server did not start.
func (l *Lazy) Get(tb testing.TB) *Server {
	tb.Helper()
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		l.s, l.err = Start(ctx)
	})
	if errors.Is(l.err, ErrNotInstalled) {
		tb.Skip(l.err)
	}
	if l.err != nil {
		tb.Fatal(l.err)
	}
	return l.s
}

// Database returns a new database of the server for tb (see Get).
func (l *Lazy) Database(tb testing.TB) (s *Server, name string) {
	tb.Helper()
	s = l.Get(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name, err := s.NewDatabase(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return s, name
}

// Close closes the server if one was started.
func (l *Lazy) Close() error {
	l.once.Do(func() {}) // none starts after Close
	if l.s == nil {
		return nil
	}
	return l.s.Close()
}
