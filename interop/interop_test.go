package interop_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

var zk *zktest.Cluster

func TestMain(m *testing.M) { os.Exit(testutil.Main(m, &zk, 1)) }

func uniquePath(t *testing.T) string { return testutil.UniquePath(t, "interop") }

func open(t *testing.T) *session.Session { return testutil.Open(t, zk.Servers()) }

// holder checks exclusion across libraries: each holder creates the
// ephemeral node path-holder while it holds, which fails if anyone else does.
type holder struct {
	path       string
	grants     atomic.Int64
	violations atomic.Int64
}

func (h *holder) hold(s *session.Session, id string, d time.Duration) error {
	ep, err := s.Wait(context.Background())
	if err != nil {
		return err
	}
	h.grants.Add(1)
	_, err = ep.Conn().Create(h.path+"-holder", []byte(id), gozk.FlagEphemeral, gozk.WorldACL(gozk.PermAll))
	if errors.Is(err, gozk.ErrNodeExists) {
		h.violations.Add(1)
		return nil
	} else if err != nil {
		return err
	}
	time.Sleep(d) // the work done under the lock
	return ep.Conn().Delete(h.path+"-holder", -1)
}

// read is hold for a reader: it marks itself with path-reader-<id> while it
// reads, and checks that no writer's path-holder exists at its start and end.
func (h *holder) read(s *session.Session, id string, d time.Duration) error {
	ep, err := s.Wait(context.Background())
	if err != nil {
		return err
	}
	mark := h.path + "-reader-" + id
	if _, err := ep.Conn().Create(mark, nil, gozk.FlagEphemeral, gozk.WorldACL(gozk.PermAll)); err != nil {
		return err
	}
	for k := 0; k < 2; k++ {
		if ok, _, err := ep.Conn().Exists(h.path + "-holder"); err != nil {
			return err
		} else if ok {
			h.violations.Add(1)
		}
		if k == 0 {
			time.Sleep(d) // the work done under the read lock
		}
	}
	return ep.Conn().Delete(mark, -1)
}

// curator compiles and starts the Java driver; it returns the process's
// output lines and waits until it is connected.
func curator(t *testing.T, mode, path string, clients, rounds int) (*exec.Cmd, <-chan string) {
	t.Helper()
	cp := strings.Join([]string{"/usr/share/java/curator-recipes.jar", "/usr/share/java/curator-framework.jar",
		"/usr/share/java/curator-client.jar"}, ":")
	for _, j := range strings.Split(cp, ":") {
		if _, err := os.Stat(j); err != nil {
			t.Fatalf("%s missing: run make setup-bench (apt-get install libcurator-recipes-java)", j)
		}
	}
	if _, err := os.Stat("/usr/share/java/slf4j-nop.jar"); err == nil {
		cp += ":/usr/share/java/slf4j-nop.jar"
	}
	javac, err := exec.LookPath("javac")
	require.NoError(t, err, "javac is needed (apt-get install default-jdk-headless)")
	dir := t.TempDir()
	out, err := exec.Command(javac, "-nowarn", "-cp", cp, "-d", dir, filepath.Join("java", "Interop.java")).CombinedOutput()
	require.NoError(t, err, "javac: %s", out)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, "java", "-cp", dir+":"+cp, "Interop", mode, zk.ConnectString(), path,
		fmt.Sprint(clients), fmt.Sprint(rounds))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	lines := make(chan string, 1000)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	select {
	case l := <-lines:
		require.Equal(t, "READY", l)
	case <-time.After(60 * time.Second):
		t.Fatal("the Curator driver did not connect")
	}
	return cmd, lines
}

// javaResult reads the driver's lines to its DONE line.
func javaResult(t *testing.T, lines <-chan string) (acq, viol int) {
	t.Helper()
	timeout := time.After(100 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the Curator driver ended without DONE")
			if strings.HasPrefix(l, "ERROR") || strings.HasPrefix(l, "VIOLATION") {
				t.Error("curator: " + l)
			}
			if strings.HasPrefix(l, "DONE") {
				_, err := fmt.Sscanf(l, "DONE acquisitions=%d violations=%d", &acq, &viol)
				require.NoError(t, err)
				return acq, viol
			}
		case <-timeout:
			t.Fatal("the Curator driver did not finish")
		}
	}
}

// hold is one acquire/release pair of a shepherd recipe.
type hold struct {
	acquire, release func(context.Context) error
	read             bool // a read lock: checked by holder.read
}

// shepherdClients runs n shepherd clients, each in a session of its own, for
// rounds acquisitions each, holding for d (checked by h), and waits for them.
func shepherdClients(t *testing.T, h *holder, n, rounds int, d time.Duration, mk func(s *session.Session, i int) (hold, error)) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		s := open(t)
		c, err := mk(s, i)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			for range rounds {
				if err := c.acquire(ctx); err != nil {
					errs <- err
					return
				}
				var err error
				if c.read {
					err = h.read(s, fmt.Sprint("go-", i), d)
				} else {
					err = h.hold(s, fmt.Sprint("go-", i), d)
				}
				if rerr := c.release(ctx); err == nil {
					err = rerr
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func shepherdMutex(path string) func(*session.Session, int) (hold, error) {
	return func(s *session.Session, _ int) (hold, error) {
		m, err := mutex.New(s, path)
		if err != nil {
			return hold{}, err
		}
		return hold{acquire: m.Lock, release: m.Unlock}, nil
	}
}

// TestCuratorMutex: Curator's InterProcessMutex and shepherd's fair mutex on
// one path exclude each other.
func TestCuratorMutex(t *testing.T) {
	path := uniquePath(t)
	h := &holder{path: path}
	_, lines := curator(t, "mutex", path, 3, 20)
	shepherdClients(t, h, 3, 20, 3*time.Millisecond, shepherdMutex(path))
	acq, viol := javaResult(t, lines)
	t.Logf("curator: %d acquisitions, %d violations; shepherd: %d acquisitions, %d violations", acq, viol, h.grants.Load(), h.violations.Load())
	require.Zero(t, viol)
	require.Zero(t, h.violations.Load())
	require.Equal(t, 60, acq)
	require.EqualValues(t, 60, h.grants.Load())
}

// TestCuratorLeaderLatch: Curator's LeaderLatch and shepherd's fair election
// on one path never have two leaders, and leadership moves between them.
func TestCuratorLeaderLatch(t *testing.T) {
	path := uniquePath(t)
	h := &holder{path: path}
	_, lines := curator(t, "latch", path, 2, 8)
	shepherdClients(t, h, 2, 8, 30*time.Millisecond, func(s *session.Session, i int) (hold, error) {
		e, err := election.New(s, path, fmt.Sprint("go-", i))
		if err != nil {
			return hold{}, err
		}
		return hold{acquire: func(ctx context.Context) error { _, err := e.Campaign(ctx); return err }, release: e.Resign}, nil
	})
	acq, viol := javaResult(t, lines)
	t.Logf("curator: %d terms, %d violations; shepherd: %d terms, %d violations", acq, viol, h.grants.Load(), h.violations.Load())
	require.Zero(t, viol)
	require.Zero(t, h.violations.Load())
	require.Equal(t, 16, acq)
	require.EqualValues(t, 16, h.grants.Load())
}

// TestCuratorReadWriteLock: Curator's InterProcessReadWriteLock (its write
// lock) and shepherd's read-write lock (readers and writers, Curator names:
// _c_<guid>-__READ__<seq>, -__WRIT__) on one path: a writer excludes
// everyone. Readers mark themselves with path-reader-<id> while they read;
// every writer (Java and Go) checks there is none, every reader that no
// writer's path-holder exists at its start and end.
func TestCuratorReadWriteLock(t *testing.T) {
	path := uniquePath(t)
	h := &holder{path: path}
	_, lines := curator(t, "rwwrite", path, 2, 20)
	var reads atomic.Int64
	shepherdClients(t, h, 3, 20, 3*time.Millisecond, func(s *session.Session, i int) (hold, error) {
		rw, err := mutex.NewRW(s, path)
		if err != nil {
			return hold{}, err
		}
		if i == 1 {
			return hold{acquire: rw.Lock, release: func(ctx context.Context) error {
				// The writer's check, made before its release.
				if n := readers(t, s, path); n > 0 {
					h.violations.Add(1)
				}
				return rw.Unlock(ctx)
			}}, nil
		}
		return hold{acquire: func(ctx context.Context) error {
			if err := rw.RLock(ctx); err != nil {
				return err
			}
			reads.Add(1)
			return nil
		}, release: rw.RUnlock, read: true}, nil
	})
	acq, viol := javaResult(t, lines)
	t.Logf("curator: %d write acquisitions, %d violations; shepherd: %d writes, %d reads, %d violations", acq, viol,
		h.grants.Load(), reads.Load(), h.violations.Load())
	require.Zero(t, viol)
	require.Zero(t, h.violations.Load())
	require.Equal(t, 40, acq)
	require.EqualValues(t, 40, reads.Load())
	require.EqualValues(t, 20, h.grants.Load())
}

// TestCuratorSemaphore: Curator's InterProcessSemaphoreV2 and shepherd's
// semaphore, both with maxLeases 3, on one path: at most 3 leases across
// both. Each holder marks itself with path-lease-<id> and counts the marks.
func TestCuratorSemaphore(t *testing.T) {
	path := uniquePath(t)
	_, lines := curator(t, "semaphore", path, 3, 20)
	var grants, violations atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i := range 3 {
		s := open(t)
		sem, err := semaphore.New(s, path, 3)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			errs <- func() error {
				for range 20 {
					l, err := sem.Acquire(ctx)
					if err != nil {
						return err
					}
					grants.Add(1)
					ep, err := s.Wait(ctx)
					if err != nil {
						return err
					}
					mark := fmt.Sprintf("%s-lease-go-%d", path, i)
					if _, err := ep.Conn().Create(mark, nil, gozk.FlagEphemeral, gozk.WorldACL(gozk.PermAll)); err != nil {
						return err
					}
					if n := marks(t, s, path, "-lease-"); n > 3 {
						violations.Add(1)
					}
					time.Sleep(5 * time.Millisecond) // the work done under the lease
					if err := ep.Conn().Delete(mark, -1); err != nil {
						return err
					}
					if err := l.Release(ctx); err != nil {
						return err
					}
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	acq, viol := javaResult(t, lines)
	t.Logf("curator: %d leases, %d violations; shepherd: %d leases, %d violations", acq, viol, grants.Load(), violations.Load())
	require.Zero(t, viol)
	require.Zero(t, violations.Load())
	require.Equal(t, 60, acq)
	require.EqualValues(t, 60, grants.Load())
}

// readers counts the path-reader-* nodes beside path.
func readers(t *testing.T, s *session.Session, path string) int { return marks(t, s, path, "-reader-") }

// marks counts the nodes beside path named path<infix>*.
func marks(t *testing.T, s *session.Session, path, infix string) int {
	i := strings.LastIndex(path, "/")
	n := 0
	for _, c := range testutil.Children(t, s, path[:i]) {
		if strings.HasPrefix(c, path[i+1:]+infix) {
			n++
		}
	}
	return n
}

// TestGoZookeeperLock: go-zookeeper's zk.Lock and shepherd's fair mutex on
// one path exclude each other.
func TestGoZookeeperLock(t *testing.T) {
	path := uniquePath(t)
	h := &holder{path: path}
	admin := open(t)
	ep, err := admin.Wait(context.Background())
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i := range 3 {
		conn, _, err := gozk.Connect(zk.Servers(), 10*time.Second, gozk.WithLogInfo(false))
		require.NoError(t, err)
		t.Cleanup(conn.Close)
		l := gozk.NewLock(conn, path, gozk.WorldACL(gozk.PermAll))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if err := l.Lock(); err != nil {
					errs <- err
					return
				}
				h.grants.Add(1)
				_, err := conn.Create(path+"-holder", nil, gozk.FlagEphemeral, gozk.WorldACL(gozk.PermAll))
				if errors.Is(err, gozk.ErrNodeExists) {
					h.violations.Add(1)
				} else if err == nil {
					time.Sleep(3 * time.Millisecond) // the work done under the lock
					err = conn.Delete(path+"-holder", -1)
				}
				if uerr := l.Unlock(); err == nil {
					err = uerr
				}
				if err != nil {
					errs <- fmt.Errorf("zk.Lock %d: %w", i, err)
					return
				}
			}
		}()
	}
	shepherdClients(t, h, 3, 20, 3*time.Millisecond, shepherdMutex(path))
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Zero(t, h.violations.Load())
	require.EqualValues(t, 120, h.grants.Load())
	names, _, err := ep.Conn().Children(admin.Path(path))
	require.NoError(t, err)
	require.Empty(t, names, "no nodes left behind")
}
