package semaphore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/semaphore"
)

func TestBadInput(t *testing.T) {
	s := open(t, zk.Servers())
	for _, p := range []string{"", "x", "/", "/a/", "/zookeeper/s", "/a//b"} {
		_, err := semaphore.New(s, p, 1)
		require.ErrorIs(t, err, semaphore.ErrInvalidPath, "path %q", p)
	}
	for _, n := range []int{0, -1, semaphore.MaxLeasesLimit + 1} {
		_, err := semaphore.New(s, "/a", n)
		require.ErrorIs(t, err, semaphore.ErrInvalidArgument, "maxLeases %d", n)
	}
	_, err := semaphore.New(nil, "/a", 1)
	require.ErrorIs(t, err, semaphore.ErrInvalidArgument)
	_, err = semaphore.New(s, "/a", 1, semaphore.WithData(make([]byte, recipe.MaxDataLen+1)))
	require.ErrorIs(t, err, semaphore.ErrInvalidArgument)

	path := uniquePath(t)
	sem, err := semaphore.New(s, path, 2)
	require.NoError(t, err)
	ctx := ctxT(t, 10*time.Second)
	for _, n := range []int{0, -3, 3} {
		_, err = sem.AcquireN(ctx, n)
		require.ErrorIs(t, err, semaphore.ErrInvalidArgument, "n = %d", n)
	}
	require.Empty(t, children(t, s, path), "bad calls leave nothing behind")
	require.ErrorIs(t, sem.SetMaxLeases(ctx, 0), semaphore.ErrInvalidArgument)

	s2 := open(t, zk.Servers())
	sem2, _ := semaphore.New(s2, path, 2)
	s2.Close()
	_, err = sem2.Acquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrClosed)
}

func TestAcquireReleaseToken(t *testing.T) {
	s := open(t, zk.Servers())
	path := uniquePath(t)
	sem, _ := semaphore.New(s, path, 2, semaphore.WithData([]byte("me")))
	ctx := ctxT(t, 10*time.Second)
	a, err := sem.Acquire(ctx)
	require.NoError(t, err)
	b, err := sem.Acquire(ctx)
	require.NoError(t, err)
	_, err = sem.TryAcquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrNoLease)
	ta, err := a.Token(ctx)
	require.NoError(t, err)
	tb, err := b.Token(ctx)
	require.NoError(t, err)
	require.Greater(t, tb, ta)
	require.NoError(t, a.Hold().Validate(ctx))
	require.NoError(t, a.Release(ctx))
	require.NoError(t, a.Release(ctx), "Release is idempotent")
	<-a.Context().Done() // a released lease's context ends; Lost stays open
	select {
	case <-a.Lost():
		t.Fatal("Release closed Lost: a release is no loss")
	default:
	}
	c, err := sem.TryAcquire(ctx)
	require.NoError(t, err)
	require.NoError(t, b.Release(ctx))
	require.NoError(t, c.Release(ctx))
	require.Eventually(t, func() bool {
		return len(children(t, s, path+"/leases")) == 0 && len(children(t, s, path+"/locks")) == 0
	}, 5*time.Second, 5*time.Millisecond)
}

// TestBound: 16 sessions contend with maxLeases 1, 3 and 5; a checker proves
// the limit is never exceeded and every acquirer gets its leases.
func TestBound(t *testing.T) {
	for _, max := range []int{1, 3, 5} {
		t.Run(fmt.Sprint("max=", max), func(t *testing.T) {
			path := uniquePath(t)
			b := newBound(max)
			ctx := ctxT(t, 90*time.Second)
			const n, rounds = 16, 4
			var wg sync.WaitGroup
			errs := make(chan error, n)
			got := make([]int, n)
			for i := range n {
				sem, err := semaphore.New(open(t, zk.Servers()), path, max)
				require.NoError(t, err)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range rounds {
						l, err := sem.Acquire(ctx)
						if err != nil {
							errs <- err
							return
						}
						b.granted(fmt.Sprint("c", i), l)
						got[i]++
						time.Sleep(15 * time.Millisecond) // the work under the lease
						b.released(l)
						if err := l.Release(ctx); err != nil {
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
			b.check(t)
			for i := range n {
				require.Equal(t, rounds, got[i], "client %d", i)
			}
			t.Logf("max %d: %d grants, peak %d in use", max, b.grants, b.peak)

			// The limit is reachable: max clients hold a lease each at
			// once. (How many the contended rounds above held at once
			// depends on the machine's pace, so it is logged, not
			// asserted.)
			rb := newBound(max)
			var leases []*semaphore.Lease
			for range max {
				sem, err := semaphore.New(open(t, zk.Servers()), path, max)
				require.NoError(t, err)
				l, err := sem.Acquire(ctx)
				require.NoError(t, err)
				rb.granted(fmt.Sprint("r", len(leases)), l)
				leases = append(leases, l)
			}
			require.Equal(t, max, rb.peak, "max leases held at once")
			for _, l := range leases {
				rb.released(l)
				require.NoError(t, l.Release(ctx))
			}
			rb.check(t)
		})
	}
}

// TestFIFO: waiters are served in the order they joined.
func TestFIFO(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	hs := open(t, zk.Servers())
	holder, _ := semaphore.New(hs, path, 1)
	l, err := holder.Acquire(ctx)
	require.NoError(t, err)
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range 6 {
		sem, _ := semaphore.New(open(t, zk.Servers()), path, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := sem.Acquire(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			_ = l.Release(ctx)
		}()
		require.Eventually(t, func() bool { return len(children(t, hs, path+"/locks")) == i+1 },
			10*time.Second, 5*time.Millisecond)
	}
	require.NoError(t, l.Release(ctx))
	wg.Wait()
	require.Equal(t, []int{0, 1, 2, 3, 4, 5}, order)
}

// TestAcquireN: all n or none, in FIFO order: a waiter for 1 behind a waiter
// for 2 does not jump it even when 1 is free.
func TestAcquireN(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	s := open(t, zk.Servers())
	a, _ := semaphore.New(s, path, 3)
	b, _ := semaphore.New(open(t, zk.Servers()), path, 3)
	c, _ := semaphore.New(open(t, zk.Servers()), path, 3)
	la, err := a.AcquireN(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, 2, la.Count())
	bGot := make(chan *semaphore.Lease, 1)
	go func() {
		l, err := b.AcquireN(ctx, 2)
		if err != nil {
			t.Error(err)
		}
		bGot <- l
	}()
	require.Eventually(t, func() bool { return len(children(t, s, path+"/locks")) == 1 }, 5*time.Second, 5*time.Millisecond)
	cGot := make(chan *semaphore.Lease, 1)
	go func() {
		l, err := c.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		cGot <- l
	}()
	require.Eventually(t, func() bool { return len(children(t, s, path+"/locks")) == 2 }, 5*time.Second, 5*time.Millisecond)
	select {
	case <-cGot:
		t.Fatal("a waiter for 1 jumped a waiter for 2")
	case <-bGot:
		t.Fatal("2 granted with 1 free")
	case <-time.After(200 * time.Millisecond):
	}
	require.Len(t, children(t, s, path+"/leases"), 2, "no partial grant")
	require.NoError(t, la.Release(ctx))
	lb, lc := <-bGot, <-cGot
	require.Equal(t, 2, lb.Count())
	require.Len(t, children(t, s, path+"/leases"), 3)
	require.NoError(t, lb.Release(ctx))
	require.NoError(t, lc.Release(ctx))
}

// TestMismatchAndKinds: a client with another limit takes nothing; a
// mutex's path is not a semaphore's and the reverse.
func TestMismatchAndKinds(t *testing.T) {
	s := open(t, zk.Servers())
	ctx := ctxT(t, 10*time.Second)
	path := uniquePath(t)
	sem3, _ := semaphore.New(s, path, 3)
	l, err := sem3.Acquire(ctx)
	require.NoError(t, err)
	sem2, _ := semaphore.New(open(t, zk.Servers()), path, 2)
	_, err = sem2.Acquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrMaxLeasesMismatch)
	require.Len(t, children(t, s, path+"/leases"), 1)
	require.Empty(t, children(t, s, path+"/locks"), "the mismatched client left nothing")

	// An explicit, versioned change of the limit.
	require.NoError(t, sem3.SetMaxLeases(ctx, 2))
	_, err = sem3.Acquire(ctx) // sem3 now uses 2; 1 held, so one more fits
	require.NoError(t, err)
	other3, _ := semaphore.New(open(t, zk.Servers()), path, 3)
	_, err = other3.Acquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrMaxLeasesMismatch)
	stale, _ := semaphore.New(open(t, zk.Servers()), path, 3)
	require.ErrorIs(t, stale.SetMaxLeases(ctx, 4), semaphore.ErrMaxLeasesMismatch)
	require.NoError(t, l.Release(ctx))

	// A mutex's path as a semaphore, and the reverse.
	mpath := uniquePath(t)
	m, _ := mutex.New(s, mpath)
	require.NoError(t, m.Lock(ctx))
	semOnMutex, _ := semaphore.New(s, mpath, 2)
	_, err = semOnMutex.Acquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrWrongKind)
	require.NoError(t, m.Unlock(ctx))
	nf, _ := mutex.New(s, uniquePath(t), mutex.NonFair())
	require.NoError(t, nf.Lock(ctx))
	semOnNF, _ := semaphore.New(s, nf.Path(), 2)
	_, err = semOnNF.Acquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrWrongKind)
	require.NoError(t, nf.Unlock(ctx))
	mOnSem, _ := mutex.New(s, path)
	require.ErrorIs(t, mOnSem.Lock(ctx), mutex.ErrWrongKind)
}

// TestCancelLeavesNoNode: a waiter whose ctx ends leaves the line.
func TestCancelLeavesNoNode(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 10*time.Second)
	s := open(t, zk.Servers())
	a, _ := semaphore.New(s, path, 1)
	b, _ := semaphore.New(open(t, zk.Servers()), path, 1)
	l, err := a.Acquire(ctx)
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = b.Acquire(wctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Eventually(t, func() bool { return len(children(t, s, path+"/locks")) == 0 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, l.Release(ctx))
	_, err = b.TryAcquire(ctx)
	require.NoError(t, err)
}

// TestNotificationsPerRelease: with 12 waiters and maxLeases 2, a release
// wakes O(1) clients: the server fires at most 3 notifications per release.
func TestNotificationsPerRelease(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 60*time.Second)
	const max, waiters = 2, 12
	hs := open(t, zk.Servers())
	holder, _ := semaphore.New(hs, path, max)
	held := make([]*semaphore.Lease, max)
	for i := range held {
		l, err := holder.Acquire(ctx)
		require.NoError(t, err)
		held[i] = l
	}
	// The holder's own-node watches set (10 ms into each hold) before the
	// server's watches are counted.
	testutil.AwaitDataWatches(t, zk, 0, hs, max)
	watching := watches(t)
	got := make(chan *semaphore.Lease, waiters)
	for range waiters {
		sem, _ := semaphore.New(open(t, zk.Servers()), path, max)
		go func() {
			l, err := sem.Acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
	}
	require.Eventually(t, func() bool { return len(children(t, hs, path+"/locks")) == waiters }, 10*time.Second, 5*time.Millisecond)
	// Every waiter's watch in place (the head's on the leases, the others'
	// on their predecessors) before counting.
	require.Eventually(t, func() bool { return watches(t) >= watching+waiters }, 10*time.Second, 5*time.Millisecond)
	before := notifications(t)
	releases := 0
	for _, l := range held {
		require.NoError(t, l.Release(ctx))
		releases++
	}
	for range waiters {
		l := <-got
		require.NoError(t, l.Release(ctx))
		releases++
	}
	after := notifications(t)
	per := float64(after-before) / float64(releases)
	t.Logf("%d releases fired %d notifications (%.2f per release)", releases, after-before, per)
	// A release is heard by the head (its leases' children) and, when the
	// head goes, by the next in line (its deletion); a head that waited
	// marks its node in its take (line.AwaitOptions.MarkOnRelease), heard
	// once more; and the
	// releasing holder hears its own release (its lease's own-node watch,
	// hold/ownwatch.go).
	require.LessOrEqual(t, per, 4.0, "O(1) notifications per release")
}

// An invalid option (data over the limit, a nil option) is an error from New,
// never a panic, and leaves nothing in ZooKeeper.
func TestBadOption(t *testing.T) {
	s := open(t, zk.Servers())
	path := uniquePath(t)
	for name, opt := range map[string]semaphore.Option{
		"data too large": semaphore.WithData(make([]byte, recipe.MaxDataLen+1)),
		"nil option":     nil,
	} {
		sem, err := semaphore.New(s, path, 2, opt)
		require.ErrorIs(t, err, semaphore.ErrInvalidArgument, name)
		require.Nil(t, sem, name)
	}
	ep, err := s.Wait(ctxT(t, 5*time.Second))
	require.NoError(t, err)
	ok, _, err := ep.Conn().Exists(path)
	require.NoError(t, err)
	require.False(t, ok, "a refused New created %s", path)
}
