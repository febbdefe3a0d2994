package interop_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/admin"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
)

// kazooPython is a python3 that can import kazoo (Debian's python3-kazoo
// lives in /usr/bin/python3's path; a pyenv python3 earlier on PATH cannot
// see it).
func kazooPython(t *testing.T) string {
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import kazoo").Run() == nil {
			return p
		}
	}
	t.Fatal("no python3 can import kazoo: run make setup-bench (apt-get install python3-kazoo)")
	return ""
}

// kazooPeer runs python/kazoo_peer.py.
var kazooPeer = peer{name: "Kazoo", prefix: "py",
	cmd: func(t *testing.T, ctx context.Context, mode, path string, connects []string, d, hold time.Duration) *exec.Cmd {
		return exec.CommandContext(ctx, kazooPython(t), filepath.Join("python", "kazoo_peer.py"), mode, path, strings.Join(connects, ";"),
			fmt.Sprintf("%.3f", d.Seconds()), fmt.Sprint(hold.Milliseconds()), fmt.Sprintf("%.1f", peerTimeout.Seconds()))
	}}

// startKazoo starts a Kazoo peer (see startPeer).
func startKazoo(t *testing.T, tl *timeline, label, mode, path string, connects []string, d, hold time.Duration) *peerProc {
	t.Helper()
	return startPeer(t, kazooPeer, tl, label, mode, path, connects, d, hold)
}

// kazooPair runs shepherd clients (mk) against two Kazoo processes in mode on
// one path for the interop duration, under faults, and checks one holder at a
// time on one clock.
func kazooPair(t *testing.T, mode string, hold time.Duration, mk func(s *session.Session, path string, i int) (shepherdSide, error)) {
	peerPair(t, kazooPeer, mode, hold, 1, mk)
}

// TestKazooLock: Kazoo's Lock (default constructor) and shepherd's mutex
// with Kazoo names share a path: one holder at a time across both, under
// faults on both sides.
func TestKazooLock(t *testing.T) {
	kazooPair(t, "lock", 5*time.Millisecond, func(s *session.Session, path string, _ int) (shepherdSide, error) {
		m, err := mutex.New(s, path, mutex.WithNaming(recipe.KazooNaming))
		if err != nil {
			return shepherdSide{}, err
		}
		return shepherdSide{acquire: m.Lock, release: m.Unlock, lost: func() <-chan struct{} { return m.Hold().Lost() }}, nil
	})
}

// TestKazooElection: Kazoo's Election and shepherd's fair election with
// Kazoo names share a path: one leader at a time across both, under faults.
func TestKazooElection(t *testing.T) {
	kazooPair(t, "election", 5*time.Millisecond, func(s *session.Session, path string, i int) (shepherdSide, error) {
		e, err := election.New(s, path, fmt.Sprint("go-", i), election.WithNaming(recipe.KazooNaming))
		if err != nil {
			return shepherdSide{}, err
		}
		return heldSide(e.Campaign, (*election.Leadership).Resign), nil
	})
}

// TestKazooReadWriteLock: Kazoo's WriteLock and shepherd's read-write lock
// with Kazoo names (readers and writers) share a path: a writer excludes
// everyone, readers share, across both, under faults. (Kazoo 2.8's ReadLock
// deadlocks with a writer queued behind it, with Kazoo alone: see
// python/kazoo_peer.py; it is not run.)
func TestKazooReadWriteLock(t *testing.T) {
	kazooPair(t, "wlock", 5*time.Millisecond, func(s *session.Session, path string, i int) (shepherdSide, error) {
		rw, err := mutex.NewRW(s, path, mutex.WithNaming(recipe.KazooNaming))
		if err != nil {
			return shepherdSide{}, err
		}
		if i%2 == 1 { // go-0 and go-2 read, go-1 writes
			return shepherdSide{acquire: rw.Lock, release: rw.Unlock, lost: func() <-chan struct{} { return rw.Writer().Hold().Lost() }}, nil
		}
		return shepherdSide{acquire: rw.RLock, release: rw.RUnlock, read: true,
			lost: func() <-chan struct{} { return rw.Reader().Hold().Lost() }}, nil
	})
}

// kazooHolds starts a Kazoo process whose one client takes mode at path and
// holds it for the test, and waits until it holds.
func kazooHolds(t *testing.T, mode, path string) *peerProc {
	t.Helper()
	tl := &timeline{}
	p := startKazoo(t, tl, "K", mode, path, []string{strings.Join(zk.Servers(), ",")}, time.Minute, time.Minute)
	require.Eventually(t, func() bool { return p.grants.Load() == 1 }, 30*time.Second, 10*time.Millisecond)
	t.Cleanup(func() { p.kill(tl) })
	return p
}

// TestKazooRefusals: shepherd with Curator names (the default) refuses a path
// where Kazoo's Lock or Election has nodes (Kazoo would never see shepherd's
// nodes), fast, leaving nothing behind; shepherd with Kazoo names refuses a
// path with Curator-named nodes.
func TestKazooRefusals(t *testing.T) {
	t.Parallel()
	s := open(t)
	for _, mode := range []string{"lock", "election"} {
		path := uniquePath(t)
		kazooHolds(t, mode, path)
		before := testutil.Children(t, s, path)
		require.Len(t, before, 1)
		ctx := testutil.Ctx(t, 10*time.Second)
		m, err := mutex.New(s, path)
		require.NoError(t, err)
		err = m.Lock(ctx)
		require.ErrorIs(t, err, recipe.ErrForeignRecipe, "a Curator-named mutex on Kazoo %s's path", mode)
		require.Contains(t, err.Error(), "kazoo __lock__")
		ok, err := m.TryLock(ctx)
		require.ErrorIs(t, err, recipe.ErrForeignRecipe)
		require.False(t, ok)
		e, err := election.New(s, path, "go")
		require.NoError(t, err)
		_, err = e.Campaign(ctx)
		require.ErrorIs(t, err, election.ErrForeignRecipe, "a Curator-named election on Kazoo %s's path", mode)
		rw, err := mutex.NewRW(s, path)
		require.NoError(t, err)
		require.ErrorIs(t, rw.RLock(ctx), recipe.ErrForeignRecipe)
		require.NoError(t, ctx.Err(), "refused fast")
		require.Equal(t, before, testutil.Children(t, s, path), "nothing left behind")

		// Inspect (and so shepherd status) names the Kazoo holder.
		snap, err := admin.Inspect(ctx, s, s.Path(path))
		require.NoError(t, err)
		require.Equal(t, "kazoo", snap.Names)
		require.Equal(t, "mutex", snap.Kind, "Kazoo names a Lock's and an Election's nodes alike")
		require.Len(t, snap.Holders, 1)
		require.Equal(t, "py-0", snap.Holders[0].Data)
		require.Equal(t, line.Library(recipe.KindKazooLock), snap.Holders[0].Library)
	}

	// Kazoo's Semaphore (max_leases as the path's data, leases as plain
	// children of the path) cannot share a path: a shepherd semaphore refuses
	// it, naming it.
	sp := uniquePath(t)
	kazooHolds(t, "semaphore", sp)
	before := testutil.Children(t, s, sp)
	sem, err := semaphore.New(s, sp, 3)
	require.NoError(t, err)
	ctx := testutil.Ctx(t, 10*time.Second)
	_, err = sem.Acquire(ctx)
	require.ErrorIs(t, err, recipe.ErrForeignRecipe)
	require.ErrorIs(t, err, semaphore.ErrWrongKind)
	require.Contains(t, err.Error(), "Kazoo Semaphore")
	require.NoError(t, ctx.Err(), "refused fast")
	require.Equal(t, before, testutil.Children(t, s, sp), "nothing left behind")

	// A Curator-named node (as InterProcessMutex names its own) on the
	// path: Kazoo-named shepherd recipes refuse it.
	path := uniquePath(t)
	ep, err := s.Wait(testutil.Ctx(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, line.EnsurePath(s, ep, s.Path(path)))
	_, err = ep.Conn().Create(s.Path(path)+"/"+line.ProtectedPrefix(line.NewGUID(), recipe.KindLock), nil,
		gozk.FlagEphemeral|gozk.FlagSequence, gozk.WorldACL(gozk.PermAll))
	require.NoError(t, err)
	before = testutil.Children(t, s, path)
	m, err := mutex.New(s, path, mutex.WithNaming(recipe.KazooNaming))
	require.NoError(t, err)
	err = m.Lock(ctx)
	require.ErrorIs(t, err, recipe.ErrForeignRecipe)
	require.Contains(t, err.Error(), "curator lock-")
	e, err := election.New(s, path, "go", election.WithNaming(recipe.KazooNaming))
	require.NoError(t, err)
	_, err = e.Campaign(ctx)
	require.ErrorIs(t, err, recipe.ErrForeignRecipe)
	// Curator's LeaderSelector is an InterProcessMutex: lock- nodes, which
	// a (Curator-named) election cannot tell from candidates: refused.
	e, err = election.New(s, path, "go")
	require.NoError(t, err)
	_, err = e.Campaign(ctx)
	require.ErrorIs(t, err, recipe.ErrForeignRecipe)
	require.Contains(t, err.Error(), "LeaderSelector")
	require.Equal(t, before, testutil.Children(t, s, path), "nothing left behind")

	// A Kazoo node added: both namings at one path, which Inspect shows.
	_, err = ep.Conn().Create(s.Path(path)+"/"+recipe.KazooNaming.Prefix(line.NewGUID(), recipe.KindKazooLock), nil,
		gozk.FlagEphemeral|gozk.FlagSequence, gozk.WorldACL(gozk.PermAll))
	require.NoError(t, err)
	snap, err := admin.Inspect(ctx, s, s.Path(path))
	require.NoError(t, err)
	require.Equal(t, "mixed", snap.Names)
}
