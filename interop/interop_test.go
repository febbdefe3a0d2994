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
	"go.uber.org/goleak"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

var zk *zktest.Cluster

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c, err := zktest.StartCluster(ctx, 1)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	zk = c
	code := m.Run()
	c.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var pathN atomic.Int64

func uniquePath(t *testing.T) string { return fmt.Sprintf("/interop/%s-%d", t.Name(), pathN.Add(1)) }

func open(t *testing.T) *session.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := session.Open(ctx, zk.Servers())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close(); <-s.Done() })
	return s
}

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

// TestCuratorMutex: Curator's InterProcessMutex and shepherd's fair mutex on
// one path exclude each other.
func TestCuratorMutex(t *testing.T) {
	path := uniquePath(t)
	h := &holder{path: path}
	_, lines := curator(t, "mutex", path, 3, 20)
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i := range 3 {
		s := open(t)
		m, err := mutex.New(s, path)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			for range 20 {
				if err := m.Lock(ctx); err != nil {
					errs <- err
					return
				}
				err := h.hold(s, fmt.Sprint("go-", i), 3*time.Millisecond)
				if uerr := m.Unlock(ctx); err == nil {
					err = uerr
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
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i := range 2 {
		s := open(t)
		e, err := election.New(s, path, fmt.Sprint("go-", i))
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			for range 8 {
				if _, err := e.Campaign(ctx); err != nil {
					errs <- err
					return
				}
				err := h.hold(s, fmt.Sprint("go-", i), 30*time.Millisecond)
				if rerr := e.Resign(ctx); err == nil {
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
	acq, viol := javaResult(t, lines)
	t.Logf("curator: %d terms, %d violations; shepherd: %d terms, %d violations", acq, viol, h.grants.Load(), h.violations.Load())
	require.Zero(t, viol)
	require.Zero(t, h.violations.Load())
	require.Equal(t, 16, acq)
	require.EqualValues(t, 16, h.grants.Load())
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
	errs := make(chan error, 6)
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
					time.Sleep(3 * time.Millisecond)
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
		s := open(t)
		m, err := mutex.New(s, path)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			for range 20 {
				if err := m.Lock(ctx); err != nil {
					errs <- err
					return
				}
				err := h.hold(s, fmt.Sprint("go-", i), 3*time.Millisecond)
				if uerr := m.Unlock(ctx); err == nil {
					err = uerr
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
	require.Zero(t, h.violations.Load())
	require.EqualValues(t, 120, h.grants.Load())
	names, _, err := ep.Conn().Children(admin.Path(path))
	require.NoError(t, err)
	require.Empty(t, names, "no nodes left behind")
}
