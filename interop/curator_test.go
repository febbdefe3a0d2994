package interop_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
)

// curatorJars is the class path of Debian's Curator (and slf4j-nop, which
// silences its logging, when installed).
func curatorJars(t *testing.T) string {
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
	return cp
}

// javaBuild compiles java/CuratorPeer.java once for the package's tests.
type javaBuild struct {
	once sync.Once
	dir  string
	err  error
	out  []byte
}

var curatorPeerClasses javaBuild // removed by TestMain

func (b *javaBuild) classes(t *testing.T, cp string) string {
	t.Helper()
	b.once.Do(func() {
		javac, err := exec.LookPath("javac")
		if err != nil {
			b.err = err
			return
		}
		if b.dir, b.err = os.MkdirTemp("", "curatorpeer"); b.err != nil {
			return
		}
		b.out, b.err = exec.Command(javac, "-nowarn", "-cp", cp, "-d", b.dir, filepath.Join("java", "CuratorPeer.java")).CombinedOutput()
	})
	require.NoError(t, b.err, "javac (apt-get install default-jdk-headless): %s", b.out)
	return b.dir
}

// curatorPeer runs java/CuratorPeer.java, which speaks kazoo_peer.py's
// protocol: each client a Curator client of its own (its own session, its
// own connect string, so a proxy per session), System.nanoTime being
// CLOCK_MONOTONIC on Linux.
var curatorPeer = peer{name: "Curator", prefix: "j",
	cmd: func(t *testing.T, ctx context.Context, mode, path string, connects []string, d, hold time.Duration) *exec.Cmd {
		cp := curatorJars(t)
		dir := curatorPeerClasses.classes(t, cp)
		// A small JVM: several run beside each other on two cores.
		return exec.CommandContext(ctx, "java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx96m", "-cp", dir+":"+cp,
			"CuratorPeer", mode, path, strings.Join(connects, ";"), strconv.FormatFloat(d.Seconds(), 'f', 3, 64),
			strconv.FormatInt(hold.Milliseconds(), 10), strconv.FormatFloat(peerTimeout.Seconds(), 'f', 1, 64))
	}}

// TestCuratorMutex: Curator's InterProcessMutex and shepherd's fair mutex
// (default, Curator names) share a path: one holder at a time across both,
// under faults on both sides.
func TestCuratorMutex(t *testing.T) {
	peerPair(t, curatorPeer, "mutex", 5*time.Millisecond, 1, func(s *session.Session, path string, _ int) (shepherdSide, error) {
		m, err := mutex.New(s, path)
		if err != nil {
			return shepherdSide{}, err
		}
		return shepherdSide{acquire: m.Lock, release: m.Unlock, lost: func() <-chan struct{} { return m.Hold().Lost() }}, nil
	})
}

// TestCuratorLeaderLatch: Curator's LeaderLatch and shepherd's fair election
// share a path: one leader at a time across both, under faults.
func TestCuratorLeaderLatch(t *testing.T) {
	peerPair(t, curatorPeer, "latch", 5*time.Millisecond, 1, func(s *session.Session, path string, i int) (shepherdSide, error) {
		e, err := election.New(s, path, "go-"+strconv.Itoa(i))
		if err != nil {
			return shepherdSide{}, err
		}
		return heldSide(e.Campaign, (*election.Leadership).Resign), nil
	})
}

// TestCuratorReadWriteLock: Curator's InterProcessReadWriteLock (A:j-1
// reads, A:j-0 and B:j-0 write) and shepherd's read-write lock (go-1 writes,
// go-0 and go-2 read) share a path: a writer excludes everyone, readers
// share, across both, under faults.
func TestCuratorReadWriteLock(t *testing.T) {
	tl := peerPair(t, curatorPeer, "rw", 5*time.Millisecond, 1, func(s *session.Session, path string, i int) (shepherdSide, error) {
		rw, err := mutex.NewRW(s, path)
		if err != nil {
			return shepherdSide{}, err
		}
		if i%2 == 1 {
			return shepherdSide{acquire: rw.Lock, release: rw.Unlock, lost: func() <-chan struct{} { return rw.Writer().Hold().Lost() }}, nil
		}
		return shepherdSide{acquire: rw.RLock, release: rw.RUnlock, read: true,
			lost: func() <-chan struct{} { return rw.Reader().Hold().Lost() }}, nil
	})
	goReads, curatorReads := tl.readGrants()
	t.Logf("read grants: shepherd %d, Curator %d", goReads, curatorReads)
	require.Positive(t, goReads, "shepherd readers ran")
	require.Positive(t, curatorReads, "Curator readers ran")
}

// TestCuratorSemaphore: Curator's InterProcessSemaphoreV2 and shepherd's
// semaphore, both with maxLeases 3, share a path: at most 3 leases across
// both, under faults.
func TestCuratorSemaphore(t *testing.T) {
	peerPair(t, curatorPeer, "semaphore", 5*time.Millisecond, 3, func(s *session.Session, path string, _ int) (shepherdSide, error) {
		sem, err := semaphore.New(s, path, 3)
		if err != nil {
			return shepherdSide{}, err
		}
		return heldSide(sem.Acquire, (*semaphore.Lease).Release), nil
	})
}

// TestCuratorLeaderSelector: a real Curator LeaderSelector leads on a path
// (an InterProcessMutex underneath: lock- nodes); shepherd's election,
// which cannot tell those from candidates, refuses the path at once with
// ErrForeignRecipe naming LeaderSelector, as does shepherd's non-fair mutex
// (ErrWrongKind: a fair line's node), and leaves nothing behind.
func TestCuratorLeaderSelector(t *testing.T) {
	t.Parallel()
	s := open(t)
	path := uniquePath(t)
	tl := &timeline{}
	p := startPeer(t, curatorPeer, tl, "S", "selector", path, []string{strings.Join(zk.Servers(), ",")}, time.Minute, time.Minute)
	t.Cleanup(func() { p.kill(tl) })
	require.Eventually(t, func() bool { return p.grants.Load() == 1 }, 30*time.Second, 10*time.Millisecond, "the selector leads")
	before := testutil.Children(t, s, path)
	require.Len(t, before, 1)
	require.Contains(t, before[0], "-lock-")
	ctx := testutil.Ctx(t, 10*time.Second)
	for _, names := range []recipe.Naming{recipe.CuratorNaming, recipe.KazooNaming} {
		e, err := election.New(s, path, "go", election.WithNaming(names))
		require.NoError(t, err)
		_, err = e.Campaign(ctx)
		require.ErrorIs(t, err, recipe.ErrForeignRecipe)
		require.ErrorIs(t, err, election.ErrForeignRecipe)
		require.Contains(t, err.Error(), "LeaderSelector", "names what it found (%v)", names)
	}
	// shepherd's non-fair mutex refuses the path too: it holds only where
	// no fair line's node is (a Curator lock- node here).
	nf, err := mutex.New(s, path, mutex.NonFair())
	require.NoError(t, err)
	require.ErrorIs(t, nf.Lock(ctx), mutex.ErrWrongKind, "a non-fair lock beside a Curator holder")
	require.NoError(t, ctx.Err(), "refused fast")
	require.Equal(t, before, testutil.Children(t, s, path), "nothing left behind")
	require.True(t, tl.holding("S:j-0"), "the selector still leads")
}

// TestCuratorOverNonFair: what a fair peer sees of shepherd's non-fair mutex.
// shepherd's non-fair lock holds with its one node (nonfair-lock); a Curator
// InterProcessMutex on the same path does not know that name, counts only
// its own lock- nodes and takes the lock: two holders. Curator cannot
// refuse, so a non-fair path must never be shared (README); shepherd's own
// fair mutex refuses it.
func TestCuratorOverNonFair(t *testing.T) {
	t.Parallel()
	s := open(t)
	path := uniquePath(t)
	ctx := testutil.Ctx(t, 30*time.Second)
	nf, err := mutex.New(s, path, mutex.NonFair())
	require.NoError(t, err)
	require.NoError(t, nf.Lock(ctx))
	tl := &timeline{}
	tl.add("go-nf", 'G', mono())
	p := startPeer(t, curatorPeer, tl, "C", "mutex", path, []string{strings.Join(zk.Servers(), ",")}, 3*time.Second, 5*time.Millisecond)
	p.wait(t, time.Minute)
	require.NoError(t, nf.Unlock(ctx))
	tl.add("go-nf", 'R', mono())
	viol, _, curatorGrants := tl.check(t, t.Logf) // the overlaps are the finding, not a failure of this test
	t.Logf("a Curator InterProcessMutex beside shepherd's non-fair holder: %d Curator grants, %d of them while shepherd held", curatorGrants, viol)
	require.Positive(t, curatorGrants)
	require.Equal(t, curatorGrants, viol, "Curator ignores the non-fair node: every grant overlaps shepherd's hold")

	// shepherd's fair mutex refuses the non-fair path.
	require.NoError(t, nf.Lock(ctx))
	f, err := mutex.New(s, path)
	require.NoError(t, err)
	require.ErrorIs(t, f.Lock(ctx), mutex.ErrWrongKind)
	require.NoError(t, nf.Unlock(ctx))
}
