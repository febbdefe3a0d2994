package semaphore_test

import (
	"context"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
)

// TestHeadMarksInItsTake: a head of the line that waited marks its node in
// the multi-op that takes its leases and deletes the node
// (line.AwaitOptions.MarkOnRelease, line.Node.Consume), not at its
// grant: while it waits for a free lease its node is unwritten (version
// 0), and a data watch on it fires with the data change, not the deletion.
func TestHeadMarksInItsTake(t *testing.T) {
	node, ev := takeBehindTheHead(t)
	require.Equal(t, int32(0), node.version, "the head's node while it waits for a lease: no mark at its grant")
	require.Equal(t, gozk.EventNodeDataChanged, ev.Type, "the take marks the node it deletes")
}

// TestTakeWithoutWrite: a head whose mark the server refuses (an ACL without
// WRITE, which the delete does not need) takes its leases without it, and
// the next in line is granted after it.
func TestTakeWithoutWrite(t *testing.T) {
	noWrite := session.WithACL(gozk.WorldACL(gozk.PermRead | gozk.PermCreate | gozk.PermDelete | gozk.PermAdmin))
	node, ev := takeBehindTheHead(t, noWrite)
	require.Equal(t, int32(0), node.version)
	require.Equal(t, gozk.EventNodeDeleted, ev.Type, "the mark refused, the node deleted without it")
}

type watchedNode struct {
	path    string
	version int32
}

// takeBehindTheHead runs a semaphore of one lease: holder holds it, a, b and
// c wait in that order. Once a has the lease, b heads the line and waits
// for it; the test then watches b's node (its data), lets a go, and
// returns b's node as it was then and the watch's event. b and c are
// granted in turn, and the line is empty at the end.
func takeBehindTheHead(t *testing.T, opts ...session.Option) (watchedNode, gozk.Event) {
	t.Helper()
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	sems := make([]*semaphore.Semaphore, 4) // holder, a, b, c
	sess := make([]*session.Session, 4)
	for i := range sems {
		sess[i] = open(t, zk.Servers(), opts...)
		s, err := semaphore.New(sess[i], path, 1)
		require.NoError(t, err)
		sems[i] = s
	}
	held, err := sems[0].Acquire(ctx)
	require.NoError(t, err)
	got := make([]chan *semaphore.Lease, 4)
	for i := 1; i < 4; i++ {
		got[i] = make(chan *semaphore.Lease, 1)
		go func() {
			l, err := sems[i].Acquire(ctx)
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
			}
			got[i] <- l
		}()
		require.Eventually(t, func() bool { return len(children(t, sess[0], path+"/locks")) == i },
			10*time.Second, 2*time.Millisecond, "waiter %d in line", i)
	}
	require.NoError(t, held.Release(ctx))
	a := <-got[1]
	require.NotNil(t, a)
	// b heads the line now: once its requests stand still, it waits for
	// the lease a holds.
	bs := sess[2]
	testutil.Quiet(t, func() int64 { return testutil.LastXid(t, zk, 0, bs.SessionID()) })
	line := children(t, bs, path+"/locks")
	require.Len(t, line, 2, "b and c in line")
	watcher := open(t, zk.Servers())
	ep, err := watcher.Wait(ctx)
	require.NoError(t, err)
	node := watchedNode{path: path + "/locks/" + sortedFirst(line)}
	_, st, ch, err := ep.Conn().GetW(node.path)
	require.NoError(t, err)
	node.version = st.Version
	require.NoError(t, a.Release(ctx))
	b := <-got[2]
	require.NotNil(t, b)
	var ev gozk.Event
	select {
	case ev = <-ch:
	case <-ctx.Done():
		t.Fatal("no event on b's node")
	}
	require.NoError(t, b.Release(ctx))
	c := <-got[3]
	require.NotNil(t, c)
	require.NoError(t, c.Release(context.Background()))
	require.Empty(t, children(t, bs, path+"/locks"), "the line is empty")
	return node, ev
}

// sortedFirst is the first of a line's two names by sequence number (the
// last 10 characters).
func sortedFirst(line []string) string {
	if line[1][len(line[1])-10:] < line[0][len(line[0])-10:] {
		return line[1]
	}
	return line[0]
}
