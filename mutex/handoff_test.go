package mutex_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// waiter is a Lock running in the background: got is closed once it
// returns (err then holds its error), at the time in at.
type waiter struct {
	m   *mutex.Mutex
	got chan struct{}
	err error
	at  time.Time
}

func lockInBackground(ctx context.Context, m *mutex.Mutex) *waiter {
	w := &waiter{m: m, got: make(chan struct{})}
	go func() {
		w.err = m.Lock(ctx)
		w.at = time.Now()
		close(w.got)
	}()
	return w
}

// granted reports whether w's Lock has returned.
func (w *waiter) granted() bool {
	select {
	case <-w.got:
		return true
	default:
		return false
	}
}

// queue starts a Lock on m in the background and waits until it watches
// its predecessor (the server holds one more watch).
func queue(t *testing.T, ctx context.Context, m *mutex.Mutex) *waiter {
	t.Helper()
	w := lockInBackground(ctx, m)
	// In line: its session watches its predecessor (the server's watch
	// count would also count another hold's own-node watch).
	testutil.AwaitWatching(t, zk, 0, m.Session(), nil)
	return w
}

// handOver: h takes the lock, a and b queue behind it, and h hands it to a
// (which waited, so marks in its release); b's Lock is returned, waiting.
func handOver(t *testing.T, ctx context.Context, h, a, b *mutex.Mutex) *waiter {
	t.Helper()
	require.NoError(t, h.Lock(ctx))
	wa := queue(t, ctx, a)
	wb := queue(t, ctx, b)
	require.NoError(t, h.Unlock(ctx))
	<-wa.got
	require.NoError(t, wa.err)
	return wb
}

// foreign creates a contender's node the way Curator's InterProcessMutex
// does (protected, EPHEMERAL_SEQUENTIAL, lock-), in session s: it never
// marks itself.
func foreign(t *testing.T, s *session.Session, path string) string {
	t.Helper()
	ep, err := s.Wait(ctxT(t, 5*time.Second))
	require.NoError(t, err)
	p, err := ep.Conn().Create(path+"/"+line.ProtectedPrefix(line.NewGUID(), recipe.KindLock), nil,
		gozk.FlagEphemeral|gozk.FlagSequence, gozk.WorldACL(gozk.PermAll))
	require.NoError(t, err)
	return p
}

// TestWaitedHolderExpires: a holder that waited, then lost its session (it
// never releases, so never marks: a lock's holder marks its node in its
// release, line.AwaitOptions.MarkOnRelease): the waiter behind it is
// granted once the server removes the node, and not before.
func TestWaitedHolderExpires(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 60*time.Second)
	h, err := mutex.New(open(t, zk.Servers()), path)
	require.NoError(t, err)
	sa, pa := testutil.Proxied(t, zk, 4*time.Second)
	a, err := mutex.New(sa, path)
	require.NoError(t, err)
	bs := open(t, zk.Servers())
	b, err := mutex.New(bs, path)
	require.NoError(t, err)

	wb := handOver(t, ctx, h, a, b)
	node := a.Node()
	require.Never(t, wb.granted, 100*time.Millisecond, 5*time.Millisecond, "granted while the holder holds")
	require.Equal(t, int32(0), testutil.Version(t, bs, node), "the holder marked its node before its release")

	ep, err := sa.Wait(ctx)
	require.NoError(t, err)
	expired := time.Now()
	require.NoError(t, pa.ExpireSession(ctx, ep.SessionID()))
	<-wb.got
	require.NoError(t, wb.err)
	require.True(t, wb.at.After(expired), "granted before the holder's session ended")
	require.Equal(t, int32(-1), testutil.Version(t, bs, node), "granted while the expired holder's node is there")
	require.NoError(t, b.Unlock(ctx))
}

// TestMarkRacesCancel: the waiter behind a holder gives up (its node goes,
// unmarked); the one behind it must not take that deletion for a grant: it
// looks at the line again, finds the holder, and is granted only once the
// holder releases. Repeated with the give-up racing the previous holder's
// release (so racing its mark), with exclusion checked on one clock.
func TestMarkRacesCancel(t *testing.T) {
	for round := range 8 {
		path := uniquePath(t)
		ctx := ctxT(t, 30*time.Second)
		ms := make([]*mutex.Mutex, 4) // holder, a (marks), b (gives up), c
		for i := range ms {
			m, err := mutex.New(open(t, zk.Servers()), path)
			require.NoError(t, err)
			ms[i] = m
		}
		h, a, b, c := ms[0], ms[1], ms[2], ms[3]
		require.NoError(t, h.Lock(ctx))
		wa := queue(t, ctx, a)
		bctx, cancelB := context.WithCancel(ctx)
		wb := queue(t, bctx, b)
		wc := queue(t, ctx, c)
		var holders atomic.Int32
		if round%2 == 0 {
			// b gives up while a holds.
			require.NoError(t, h.Unlock(ctx))
			<-wa.got
			require.NoError(t, wa.err)
			cancelB()
		} else {
			// b gives up as the holder releases (and marks).
			go cancelB()
			require.NoError(t, h.Unlock(ctx))
			<-wa.got
			require.NoError(t, wa.err)
		}
		holders.Add(1)
		<-wb.got
		require.ErrorIs(t, wb.err, context.Canceled)
		// a holds a while (the work being simulated): c must not be
		// granted meanwhile.
		require.Never(t, wc.granted, 150*time.Millisecond, 5*time.Millisecond, "round %d: c granted while a holds", round)
		holders.Add(-1)
		released := time.Now()
		require.NoError(t, a.Unlock(ctx))
		<-wc.got
		require.NoError(t, wc.err)
		require.Zero(t, holders.Load())
		require.True(t, wc.at.After(released), "round %d: c granted before a released", round)
		require.NoError(t, c.Unlock(ctx))
	}
}

// TestForeignNodeFallsBack: a foreign contender's node (Curator's, which
// never marks) between a holder and a waiter: when it goes, the
// waiter must look at the line again (the holder still holds), and is
// granted only once the holder releases.
func TestForeignNodeFallsBack(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	h, err := mutex.New(open(t, zk.Servers()), path)
	require.NoError(t, err)
	a, err := mutex.New(open(t, zk.Servers()), path)
	require.NoError(t, err)
	b, err := mutex.New(open(t, zk.Servers()), path)
	require.NoError(t, err)
	fs := open(t, zk.Servers())

	require.NoError(t, h.Lock(ctx))
	wa := queue(t, ctx, a)
	f := foreign(t, fs, path)
	wb := queue(t, ctx, b)
	require.NoError(t, h.Unlock(ctx))
	<-wa.got
	require.NoError(t, wa.err)

	ep, err := fs.Wait(ctx)
	require.NoError(t, err)
	require.NoError(t, ep.Conn().Delete(f, -1)) // the foreign contender gives up
	// a holds a while (the work being simulated).
	require.Never(t, wb.granted, 200*time.Millisecond, 5*time.Millisecond, "granted on an unmarked node's deletion while a holds")
	released := time.Now()
	require.NoError(t, a.Unlock(ctx))
	<-wb.got
	require.NoError(t, wb.err)
	require.True(t, wb.at.After(released))
	require.NoError(t, b.Unlock(ctx))
}

// TestReadersNeverMark: readers share, so a reader's node says nothing of
// who is ahead of it: readers never mark, and a writer behind two readers
// is granted only once both have released, whichever goes first.
func TestReadersNeverMark(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	rws := make([]*mutex.RWMutex, 4) // writer, reader 1, reader 2, writer 2
	for i := range rws {
		rw, err := mutex.NewRW(open(t, zk.Servers()), path)
		require.NoError(t, err)
		rws[i] = rw
	}
	w1, r1, r2, w2 := rws[0], rws[1], rws[2], rws[3]
	require.NoError(t, w1.Lock(ctx))
	var got1, got2 = make(chan error, 1), make(chan error, 1)
	go func() { got1 <- r1.RLock(ctx) }()
	testutil.AwaitWatching(t, zk, 0, r1.Reader().Session(), nil)
	go func() { got2 <- r2.RLock(ctx) }()
	testutil.AwaitWatching(t, zk, 0, r2.Reader().Session(), nil)
	ww := queue(t, ctx, w2.Writer())
	require.NoError(t, w1.Unlock(ctx))
	require.NoError(t, <-got1)
	require.NoError(t, <-got2)
	require.Equal(t, int32(0), testutil.Version(t, r1.Reader().Session(), r1.Reader().Node()), "a reader marked its node")
	require.Equal(t, int32(0), testutil.Version(t, r2.Reader().Session(), r2.Reader().Node()), "a reader marked its node")

	require.NoError(t, r2.RUnlock(ctx)) // the reader the writer watches
	// r1 reads a while (the work being simulated).
	require.Never(t, ww.granted, 200*time.Millisecond, 5*time.Millisecond, "writer granted while a reader holds")
	released := time.Now()
	require.NoError(t, r1.RUnlock(ctx))
	<-ww.got
	require.NoError(t, ww.err)
	require.True(t, ww.at.After(released))
	require.NoError(t, w2.Unlock(ctx))
}

// TestDeletionWatchOnlyBehindShepherd: a waiter behind a shepherd node that
// has not marked yet watches it twice (GetW, and ChildrenW, which only the
// node's deletion fires and a mark does not spend: line.Line.watch); a
// waiter behind a foreign node (which never marks) only once. Counted by the
// server: the first Lock's checks of the path (3), create and listing (2),
// then 2 or 1 watches.
func TestDeletionWatchOnlyBehindShepherd(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	h, err := mutex.New(open(t, zk.Servers()), path)
	require.NoError(t, err)
	sa, sb := open(t, zk.Servers()), open(t, zk.Servers())
	a, err := mutex.New(sa, path)
	require.NoError(t, err)
	b, err := mutex.New(sb, path)
	require.NoError(t, err)
	require.NoError(t, h.Lock(ctx))

	ra := testutil.Requests(t, zk, sa)
	wa := lockInBackground(ctx, a)
	// +3: a value's first Lock reads its parent's data (a part of another
	// recipe's layout is refused: line.RefusePart) and the path's kind
	// (line.PathCheck).
	require.Equal(t, int64(3+4), testutil.Settled(t, ra, 3+4),
		"behind a shepherd node: (parent: get; kind: get, list), create, list, GetW, ChildrenW")

	// Curator's own guid (a dashed UUID): foreign() makes shepherd's.
	fs := open(t, zk.Servers())
	fep, err := fs.Wait(ctx)
	require.NoError(t, err)
	f, err := fep.Conn().Create(path+"/"+line.ProtectedPrefix("8d1f3c2a-7b4e-4c9d-ae5f-0123456789ab", recipe.KindLock), nil,
		gozk.FlagEphemeral|gozk.FlagSequence, gozk.WorldACL(gozk.PermAll))
	require.NoError(t, err)
	rb := testutil.Requests(t, zk, sb)
	wb := lockInBackground(ctx, b)
	require.Equal(t, int64(3+3), testutil.Settled(t, rb, 3+3), "behind a foreign node %s: (parent: get; kind: get, list), create, list, GetW", f)
	require.Equal(t, int64(0), testutil.Quiet(t, rb), "behind a foreign node: a second watch")

	require.NoError(t, h.Unlock(ctx))
	<-wa.got
	require.NoError(t, wa.err)
	require.NoError(t, a.Unlock(ctx))
	require.False(t, wb.granted(), "granted while the foreign node is in line")
}

// TestReleaseWithoutWrite: the mark goes in the release's multi (set, then
// delete); on a node its holder may not write (an ACL without WRITE), the
// server refuses the whole multi, and the release deletes the node without
// the mark: it is released, and the waiter behind it, which lists the line,
// is granted.
func TestReleaseWithoutWrite(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	noWrite := session.WithACL(gozk.WorldACL(gozk.PermRead | gozk.PermCreate | gozk.PermDelete | gozk.PermAdmin))
	ms := make([]*mutex.Mutex, 3) // holder, a (waits, then releases), b
	for i := range ms {
		m, err := mutex.New(testutil.Open(t, zk.Servers(), noWrite), path)
		require.NoError(t, err)
		ms[i] = m
	}
	h, a, b := ms[0], ms[1], ms[2]
	wb := handOver(t, ctx, h, a, b)
	node := a.Node()
	require.NoError(t, a.Unlock(ctx), "a release whose mark is refused")
	<-wb.got
	require.NoError(t, wb.err)
	require.Equal(t, int32(-1), testutil.Version(t, b.Session(), node), "a's node is still there")
	require.NoError(t, b.Unlock(ctx))
	require.Empty(t, children(t, b.Session(), path))
}
