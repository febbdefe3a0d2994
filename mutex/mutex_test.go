package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/internal/holdtest"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/semaphore"
)

func TestBadInput(t *testing.T) {
	s := open(t, zk.Servers())
	for _, p := range []string{"", "x", "/", "/a/", "/a//b", "/zookeeper/x", "/a/../b", "/a\x00b"} {
		_, err := mutex.New(s, p)
		require.ErrorIs(t, err, mutex.ErrInvalidPath, "path %q", p)
		_, err = mutex.NewRW(s, p)
		require.ErrorIs(t, err, mutex.ErrInvalidPath, "path %q", p)
	}
	_, err := mutex.New(nil, "/a")
	require.ErrorIs(t, err, mutex.ErrInvalidArgument)
	_, err = mutex.New(s, "/a", mutex.WithData(make([]byte, recipe.MaxDataLen+1)))
	require.ErrorIs(t, err, mutex.ErrInvalidArgument)
	_, err = mutex.NewRW(s, "/a", mutex.NonFair())
	require.ErrorIs(t, err, mutex.ErrInvalidArgument)

	path := uniquePath(t)
	m, err := mutex.New(s, path)
	require.NoError(t, err)
	ctx := ctxT(t, 10*time.Second)
	require.ErrorIs(t, m.Unlock(ctx), mutex.ErrNotHeld)
	_, err = m.Token(ctx)
	require.ErrorIs(t, err, mutex.ErrNotHeld)
	require.ErrorIs(t, m.Validate(ctx), mutex.ErrNotHeld)
	_, err = m.Fenced(ctx)
	require.ErrorIs(t, err, mutex.ErrNotHeld)
	select {
	case <-m.Lost():
	default:
		t.Fatal("Lost of a lock not held must be closed")
	}
	// The rest of hold's rule for a value that holds nothing: the end's
	// signals have fired, a request to act never fires, a value is zero.
	require.True(t, testutil.IsClosed(m.Paused()), "Paused of a lock not held must be closed")
	require.Error(t, m.Context().Err(), "the Context of a lock not held has ended")
	require.Nil(t, m.RevokeRequested())
	require.ErrorIs(t, m.Gate(ctx), mutex.ErrNotHeld)
	require.Empty(t, m.Node())
	require.Nil(t, m.Hold())
	require.Empty(t, children(t, s, path), "bad calls leave nothing behind")

	// After Close.
	s2 := open(t, zk.Servers())
	m2, err := mutex.New(s2, path)
	require.NoError(t, err)
	s2.Close()
	require.ErrorIs(t, m2.Lock(ctx), mutex.ErrClosed)
	_, err = m2.TryLock(ctx)
	require.ErrorIs(t, err, mutex.ErrClosed)
}

func TestLockUnlockReentrantToken(t *testing.T) {
	s := open(t, zk.Servers())
	path := uniquePath(t)
	m, err := mutex.New(s, path, mutex.WithData([]byte("me")))
	require.NoError(t, err)
	ctx := ctxT(t, 10*time.Second)
	require.NoError(t, m.Lock(ctx))
	require.True(t, m.IsHeld())
	tok1, err := m.Token(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Lock(ctx)) // reentrant
	require.NoError(t, m.Validate(ctx))
	require.NoError(t, m.Unlock(ctx))
	require.True(t, m.IsHeld(), "held until the count reaches zero")
	select {
	case <-m.Lost():
		t.Fatal("Lost closed while held")
	default:
	}
	lost, hctx := m.Lost(), m.Context()
	require.NoError(t, m.Unlock(ctx))
	require.False(t, m.IsHeld())
	<-hctx.Done() // a released hold's context ends
	require.False(t, testutil.IsClosed(lost), "a release is no loss")
	require.ErrorIs(t, m.Unlock(ctx), mutex.ErrNotHeld)
	require.Empty(t, children(t, s, path))

	require.NoError(t, m.Lock(ctx))
	tok2, err := m.Token(ctx)
	require.NoError(t, err)
	require.Greater(t, tok2, tok1, "tokens grow with every grant")
	require.NoError(t, m.Unlock(ctx))
}

func TestTryLock(t *testing.T) {
	for _, fair := range []bool{true, false} {
		t.Run(fmt.Sprint("fair=", fair), func(t *testing.T) {
			var opts []mutex.Option
			if !fair {
				opts = append(opts, mutex.NonFair())
			}
			a, b := open(t, zk.Servers()), open(t, zk.Servers())
			path := uniquePath(t)
			ma, err := mutex.New(a, path, opts...)
			require.NoError(t, err)
			mb, err := mutex.New(b, path, opts...)
			require.NoError(t, err)
			ctx := ctxT(t, 10*time.Second)
			ok, err := ma.TryLock(ctx)
			require.NoError(t, err)
			require.True(t, ok)
			ok, err = mb.TryLock(ctx)
			require.NoError(t, err)
			require.False(t, ok)
			require.NoError(t, ma.Unlock(ctx))
			ok, err = mb.TryLock(ctx)
			require.NoError(t, err)
			require.True(t, ok)
			require.NoError(t, mb.Unlock(ctx))
			if fair {
				require.Empty(t, children(t, a, path), "a failed TryLock leaves no node")
			}
		})
	}
}

// TestExclusion: 12 sessions contend; an in-process checker sees no overlap,
// and every session gets the lock.
func TestExclusion(t *testing.T) {
	for _, fair := range []bool{true, false} {
		t.Run(fmt.Sprint("fair=", fair), func(t *testing.T) {
			var opts []mutex.Option
			if !fair {
				opts = append(opts, mutex.NonFair())
			}
			path := uniquePath(t)
			var x holdtest.Exclusion
			ctx := ctxT(t, 60*time.Second)
			var wg sync.WaitGroup
			const n, rounds = 12, 8
			errs := make(chan error, n)
			for i := range n {
				s := open(t, zk.Servers())
				m, err := mutex.New(s, path, opts...)
				require.NoError(t, err)
				id := fmt.Sprint("c", i)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range rounds {
						if err := m.Lock(ctx); err != nil {
							errs <- err
							return
						}
						x.Granted(id, m.Lost())
						time.Sleep(time.Millisecond) // the work done under the lock
						x.Released(id)
						if err := m.Unlock(ctx); err != nil {
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
			x.Check(t)
			require.Equal(t, n*rounds, x.Grants())
		})
	}
}

// TestFIFO: waiters are granted in the order they joined the line.
func TestFIFO(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	holder := open(t, zk.Servers())
	h, err := mutex.New(holder, path)
	require.NoError(t, err)
	require.NoError(t, h.Lock(ctx))
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	const n = 6
	for i := range n {
		s := open(t, zk.Servers())
		m, err := mutex.New(s, path)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Lock(ctx); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			_ = m.Unlock(ctx)
		}()
		// Wait until waiter i is in line before starting the next.
		require.Eventually(t, func() bool { return len(children(t, holder, path)) == i+2 },
			10*time.Second, 5*time.Millisecond)
	}
	require.NoError(t, h.Unlock(ctx))
	wg.Wait()
	require.Equal(t, []int{0, 1, 2, 3, 4, 5}, order)
}

// TestCancelLeavesNoNode: a waiter whose ctx ends removes its node.
func TestCancelLeavesNoNode(t *testing.T) {
	path := uniquePath(t)
	a, b := open(t, zk.Servers()), open(t, zk.Servers())
	ma, _ := mutex.New(a, path)
	mb, _ := mutex.New(b, path)
	ctx := ctxT(t, 10*time.Second)
	require.NoError(t, ma.Lock(ctx))
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err := mb.Lock(wctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Eventually(t, func() bool { return len(children(t, a, path)) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, ma.Unlock(ctx))
	require.Eventually(t, func() bool { return len(children(t, a, path)) == 0 }, 5*time.Second, 5*time.Millisecond)
}

// TestHerdFree: with 20 waiters in line, each release fires one watch
// notification (counted by the server).
func TestHerdFree(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 60*time.Second)
	const n = 20
	ms := make([]*mutex.Mutex, n+1)
	for i := range ms {
		m, err := mutex.New(open(t, zk.Servers()), path)
		require.NoError(t, err)
		ms[i] = m
	}
	require.NoError(t, ms[0].Lock(ctx))
	got := make(chan int, n)
	release := make([]chan struct{}, n+1)
	for i := 1; i <= n; i++ {
		release[i] = make(chan struct{})
		go func() {
			if err := ms[i].Lock(ctx); err != nil {
				t.Error(err)
				return
			}
			got <- i
			<-release[i]
			_ = ms[i].Unlock(ctx)
		}()
	}
	require.Eventually(t, func() bool { return len(children(t, ms[0].Session(), path)) == n+1 }, 10*time.Second, 5*time.Millisecond)
	// Every waiter has its watch in place before counting (each session's
	// own: the holder's own-node watch moves the server's count too).
	for _, m := range ms[1:] {
		testutil.AwaitWatching(t, zk, 0, m.Session(), nil)
	}
	before := notifications(t)
	require.NoError(t, ms[0].Unlock(ctx))
	for k := 1; k <= n; k++ {
		i := <-got
		if k < n {
			close(release[i])
		} else {
			defer close(release[i])
		}
	}
	after := notifications(t)
	perRelease := float64(after-before) / float64(n)
	t.Logf("%d releases fired %d notifications (%.2f per release)", n, after-before, perRelease)
	// Each release notifies the one waiter behind it (its deletion), and
	// each holder that waited marks its node in its release, which notifies
	// that waiter once more (line.AwaitOptions.MarkOnRelease): n
	// deletions, at most n-1 marks, each heard by that one waiter. A herd
	// would be O(n) per release. Each holder also hears its own release (its
	// own node's watch, hold/ownwatch.go): n more.
	require.GreaterOrEqual(t, after-before, int64(n), "every release is heard")
	require.LessOrEqual(t, after-before, int64(3*n-1), "at most three notifications per handoff")
}

// TestWrongKind: a semaphore's path is not a mutex's.
func TestWrongKind(t *testing.T) {
	s := open(t, zk.Servers())
	path := uniquePath(t)
	ep, err := s.Wait(ctxT(t, 5*time.Second))
	require.NoError(t, err)
	require.NoError(t, line.EnsurePath(s, ep, s.Path(path)+"/leases"))
	m, _ := mutex.New(s, path)
	err = m.Lock(ctxT(t, 5*time.Second))
	require.ErrorIs(t, err, mutex.ErrWrongKind)
	require.Equal(t, []string{"leases"}, children(t, s, path), "nothing left behind")
}

// TestReadWrite: readers share; a writer excludes; a waiting writer holds off
// later readers (no starvation); a writer can downgrade.
func TestReadWrite(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	rw := make([]*mutex.RWMutex, 4)
	for i := range rw {
		l, err := mutex.NewRW(open(t, zk.Servers()), path)
		require.NoError(t, err)
		rw[i] = l
	}
	require.NoError(t, rw[0].RLock(ctx))
	require.NoError(t, rw[1].RLock(ctx)) // readers share
	ok, err := rw[2].TryLock(ctx)
	require.NoError(t, err)
	require.False(t, ok, "a writer waits for readers")
	wGot := make(chan error, 1)
	go func() { wGot <- rw[2].Lock(ctx) }()
	require.Eventually(t, func() bool { return len(children(t, rw[0].Reader().Session(), path)) == 3 }, 5*time.Second, 5*time.Millisecond)
	// A reader arriving after the waiting writer waits for it.
	rGot := make(chan error, 1)
	go func() { rGot <- rw[3].RLock(ctx) }()
	select {
	case <-rGot:
		t.Fatal("a late reader jumped the waiting writer")
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, rw[0].RUnlock(ctx))
	require.NoError(t, rw[1].RUnlock(ctx))
	require.NoError(t, <-wGot)
	select {
	case <-rGot:
		t.Fatal("reader granted while the writer holds")
	case <-time.After(200 * time.Millisecond):
	}
	// Downgrade: the writer takes the read lock too.
	require.NoError(t, rw[2].RLock(ctx))
	require.NoError(t, rw[2].Unlock(ctx))
	require.NoError(t, <-rGot) // readers share with the downgraded one
	require.NoError(t, rw[2].RUnlock(ctx))
	require.NoError(t, rw[3].RUnlock(ctx))
	require.Eventually(t, func() bool { return len(children(t, rw[0].Reader().Session(), path)) == 0 }, 5*time.Second, 5*time.Millisecond)
}

// TestFenced: a fenced write lands while held; it is refused after release,
// and refused by the server when the hold's node is gone even though the
// local signal has not fired.
func TestFenced(t *testing.T) {
	for _, fair := range []bool{true, false} {
		t.Run(fmt.Sprint("fair=", fair), func(t *testing.T) {
			var opts []mutex.Option
			if !fair {
				opts = append(opts, mutex.NonFair())
			}
			s, s2 := open(t, zk.Servers()), open(t, zk.Servers())
			path := uniquePath(t)
			ctx := ctxT(t, 10*time.Second)
			m, _ := mutex.New(s, path, opts...)
			other, _ := mutex.New(s2, path, opts...)
			require.NoError(t, m.Lock(ctx))
			res := s.Path(path) + "-resource"
			ep, err := s.Wait(ctx)
			require.NoError(t, err)
			_, err = ep.Conn().Create(res, nil, 0, s.ACL())
			require.NoError(t, err)
			_, err = m.Fenced(ctx, fence.Raw(&gozk.SetDataRequest{Path: res, Data: []byte("1"), Version: -1}))
			require.NoError(t, err)
			h := m.Hold()
			require.NoError(t, m.Unlock(ctx))
			require.NoError(t, other.Lock(ctx))
			_, err = h.Fenced(ctx, fence.Raw(&gozk.SetDataRequest{Path: res, Data: []byte("2"), Version: -1}))
			require.ErrorIs(t, err, mutex.ErrLost)
			require.NoError(t, other.Unlock(ctx))

			// The node removed behind the holder's back (as the server does
			// with an expired session) while no signal reached it: the
			// server refuses the write.
			require.NoError(t, m.Lock(ctx))
			ep2, err := s2.Wait(ctx)
			require.NoError(t, err)
			require.NoError(t, ep2.Conn().Delete(m.Node(), -1))
			if !fair {
				require.NoError(t, other.Lock(ctx)) // bumps the fence
				defer other.Unlock(ctx)
			}
			_, err = m.Fenced(ctx, fence.Raw(&gozk.SetDataRequest{Path: res, Data: []byte("3"), Version: -1}))
			require.ErrorIs(t, err, mutex.ErrLost)
			require.ErrorIs(t, m.Validate(ctx), mutex.ErrLost)
			data, _, err := ep.Conn().Get(res)
			require.NoError(t, err)
			require.Equal(t, "1", string(data))
			_ = m.Unlock(ctx)
		})
	}
}

func TestErrorsMatch(t *testing.T) {
	require.True(t, errors.Is(fmt.Errorf("x: %w", mutex.ErrLost), recipe.ErrLost))
	require.True(t, strings.Contains(mutex.ErrNotHeld.Error(), "not held"))
}

// An invalid option (data over the limit, a nil option) is an error from New
// and NewRW, never a panic, and leaves nothing in ZooKeeper.
func TestBadOption(t *testing.T) {
	s := open(t, zk.Servers())
	path := uniquePath(t)
	for name, opt := range map[string]mutex.Option{
		"data too large": mutex.WithData(make([]byte, recipe.MaxDataLen+1)),
		"nil option":     nil,
	} {
		m, err := mutex.New(s, path, opt)
		require.ErrorIs(t, err, mutex.ErrInvalidArgument, name)
		require.Nil(t, m, name)
		rw, err := mutex.NewRW(s, path, mutex.WithData([]byte("ok")), opt)
		require.ErrorIs(t, err, mutex.ErrInvalidArgument, name)
		require.Nil(t, rw, name)
	}
	ep, err := s.Wait(ctxT(t, 5*time.Second))
	require.NoError(t, err)
	ok, _, err := ep.Conn().Exists(path)
	require.NoError(t, err)
	require.False(t, ok, "a refused New created %s", path)
}

// A fair and a non-fair lock on one path would both be held at once (the
// line does not see the race's node if it listed first, nor the race the
// line): the second to come refuses the path with ErrWrongKind, whichever
// came first.
func TestFairAndNonFairOnOnePathRefuse(t *testing.T) {
	for _, first := range []string{"fair", "non-fair"} {
		t.Run(first+" first", func(t *testing.T) {
			path := uniquePath(t)
			ctx := ctxT(t, 10*time.Second)
			fair, err := mutex.New(open(t, zk.Servers()), path)
			require.NoError(t, err)
			nonFair, err := mutex.New(open(t, zk.Servers()), path, mutex.NonFair())
			require.NoError(t, err)
			a, b := fair, nonFair
			if first != "fair" {
				a, b = nonFair, fair
			}
			require.NoError(t, a.Lock(ctx))
			ok, err := b.TryLock(ctx)
			require.ErrorIs(t, err, mutex.ErrWrongKind)
			require.ErrorContains(t, err, path, "the error names the path")
			require.False(t, ok)
			require.False(t, b.IsHeld())
			require.ErrorIs(t, b.Lock(ctx), mutex.ErrWrongKind)
			require.NoError(t, a.Unlock(ctx))
		})
	}
}

// TestNonFairRefusesBeforeWriting: a non-fair lock refuses another recipe's
// path before it writes there (each of its grants writes its stamp in the
// path's data): a semaphore's limit record and a fair lock's empty path are
// left as they were, and their clients go on.
func TestNonFairRefusesBeforeWriting(t *testing.T) {
	ctx := ctxT(t, 20*time.Second)
	s := open(t, zk.Servers())
	data := func(p string) string {
		ep, err := s.Wait(ctx)
		require.NoError(t, err)
		d, _, err := ep.Conn().Get(s.Path(p))
		require.NoError(t, err)
		return string(d)
	}

	semPath := uniquePath(t)
	sem, err := semaphore.New(open(t, zk.Servers()), semPath, 2)
	require.NoError(t, err)
	lease, err := sem.Acquire(ctx)
	require.NoError(t, err)
	record := data(semPath)
	require.Contains(t, record, "maxLeases=2")
	nf, err := mutex.New(s, semPath, mutex.NonFair())
	require.NoError(t, err)
	require.ErrorIs(t, nf.Lock(ctx), mutex.ErrWrongKind)
	require.Equal(t, record, data(semPath), "the semaphore's record was overwritten")
	require.NotContains(t, children(t, s, semPath), mutex.NonFairNode, "nothing left behind")
	other, err := semaphore.New(open(t, zk.Servers()), semPath, 2)
	require.NoError(t, err)
	l2, err := other.Acquire(ctx)
	require.NoError(t, err, "the semaphore's clients go on")
	require.NoError(t, l2.Release(ctx))
	require.NoError(t, lease.Release(ctx))

	fairPath := uniquePath(t)
	fair, err := mutex.New(open(t, zk.Servers()), fairPath)
	require.NoError(t, err)
	require.NoError(t, fair.Lock(ctx))
	nf2, err := mutex.New(s, fairPath, mutex.NonFair())
	require.NoError(t, err)
	require.ErrorIs(t, nf2.Lock(ctx), mutex.ErrWrongKind)
	require.Empty(t, data(fairPath), "the fair lock's path was written")
	require.NoError(t, fair.Unlock(ctx))
}

// TestNonFairFenceChecksTheNode: the non-fair lock's fence also checks that
// the lock's node exists: a write after the node is gone is refused even
// when no one has been granted the lock since.
func TestNonFairFenceChecksTheNode(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	s := open(t, zk.Servers())
	m, err := mutex.New(s, path, mutex.NonFair())
	require.NoError(t, err)
	require.NoError(t, m.Lock(ctx))
	admin := open(t, zk.Servers())
	aep, err := admin.Wait(ctx)
	require.NoError(t, err)
	res := admin.Path(path) + "-resource"
	_, err = aep.Conn().Create(res, []byte("0"), 0, admin.ACL())
	require.NoError(t, err)
	// The node removed behind the holder's back (as the server does with an
	// expired session), and no grant since.
	require.NoError(t, aep.Conn().Delete(m.Node(), -1))
	_, err = m.Fenced(ctx, fence.Raw(&gozk.SetDataRequest{Path: res, Data: []byte("1"), Version: -1}))
	require.ErrorIs(t, err, mutex.ErrLost)
	data, _, err := aep.Conn().Get(res)
	require.NoError(t, err)
	require.Equal(t, "0", string(data))
	_ = m.Unlock(ctx)
}
