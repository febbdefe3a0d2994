package interop_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

var zk *zktest.Cluster

// pairsAtOnce is how many tests run in parallel unless -test.parallel says
// otherwise: the mixed pairs (Kazoo's and Curator's, each 25 s) spend their
// time waiting on holds, faults and timeouts (a pair takes a few CPU
// seconds), so running several at once, rather than GOMAXPROCS at a time,
// keeps the package's wall time near a few pairs'. Not all at once: twelve
// pairs put 36 race-built shepherd clients in this one process, and beside
// the rest of make test on a slower 2-core machine five pairs' shepherd
// sides were granted 34 to 40 times in 25 s (each side must reach 50; the
// peers, in processes of their own, had 85 to 95).
const pairsAtOnce = 4

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", fmt.Sprint(pairsAtOnce)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	code := testutil.Main(m, &zk, 1)
	if curatorPeerClasses.dir != "" {
		_ = os.RemoveAll(curatorPeerClasses.dir)
	}
	os.Exit(code)
}

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
