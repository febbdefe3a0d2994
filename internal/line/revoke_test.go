package line_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/admin"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
)

// An operator's revocation (admin/revoke.go, and the holder's side in
// hold/revoke.go), against a real server, on a lock, a lease and a
// leadership, each with a second client waiting.

// revocable is what every recipe's hold offers for a revocation.
type revocable interface {
	Lost() <-chan struct{}
	Context() context.Context
	RevokeRequested() <-chan struct{}
}

// contest is one recipe's hold, its node, and a second client's grant.
type contest struct {
	held    revocable
	node    string
	release func(context.Context) error
	// granted receives, at the second client's grant, whether the holder's
	// Lost was closed by then.
	granted <-chan bool
	// line holds the contenders' nodes, queued of them once the second
	// client waits in line.
	line   string
	queued int
}

type contestFn func(t *testing.T, ctx context.Context, path string, policy session.DisconnectPolicy) contest

func contests() map[string]contestFn {
	return map[string]contestFn{
		"mutex": func(t *testing.T, ctx context.Context, path string, policy session.DisconnectPolicy) contest {
			a, err := mutex.New(testutil.Open(t, zk.Servers()), path, mutex.WithDisconnectPolicy(policy))
			require.NoError(t, err)
			require.NoError(t, a.Lock(ctx))
			h := a.Hold()
			b, err := mutex.New(testutil.Open(t, zk.Servers()), path)
			require.NoError(t, err)
			got := make(chan bool, 1)
			go func() {
				if b.Lock(ctx) == nil {
					got <- testutil.IsClosed(h.Lost())
					_ = b.Unlock(context.Background())
				}
			}()
			return contest{held: a.Hold(), node: h.Node(), release: a.Unlock, granted: got, line: path, queued: 2}
		},
		"semaphore": func(t *testing.T, ctx context.Context, path string, policy session.DisconnectPolicy) contest {
			a, err := semaphore.New(testutil.Open(t, zk.Servers()), path, 1, semaphore.WithDisconnectPolicy(policy))
			require.NoError(t, err)
			l, err := a.Acquire(ctx)
			require.NoError(t, err)
			b, err := semaphore.New(testutil.Open(t, zk.Servers()), path, 1)
			require.NoError(t, err)
			got := make(chan bool, 1)
			go func() {
				if lb, err := b.Acquire(ctx); err == nil {
					got <- testutil.IsClosed(l.Lost())
					_ = lb.Release(context.Background())
				}
			}()
			return contest{held: l, node: l.Nodes()[0], release: l.Release, granted: got, line: path + "/locks", queued: 1}
		},
		"election": func(t *testing.T, ctx context.Context, path string, policy session.DisconnectPolicy) contest {
			a, err := election.New(testutil.Open(t, zk.Servers()), path, "a", election.WithDisconnectPolicy(policy))
			require.NoError(t, err)
			l, err := a.Campaign(ctx)
			require.NoError(t, err)
			b, err := election.New(testutil.Open(t, zk.Servers()), path, "b")
			require.NoError(t, err)
			got := make(chan bool, 1)
			go func() {
				if lb, err := b.Campaign(ctx); err == nil {
					got <- testutil.IsClosed(l.Lost())
					_ = lb.Resign(context.Background())
				}
			}()
			return contest{held: l, node: l.Hold().Node(), release: l.Resign, granted: got, line: path, queued: 2}
		},
	}
}

// waitQueued waits until the second client waits in line.
func (c contest) waitQueued(t *testing.T) {
	t.Helper()
	op := operator(t)
	require.Eventually(t, func() bool { return len(testutil.Children(t, op, c.line)) == c.queued }, 10*time.Second,
		5*time.Millisecond, "the waiter in line")
}

// operator is a session of its own, as `shepherd revoke` has.
func operator(t *testing.T) *session.Session { return testutil.Open(t, zk.Servers()) }

// TestRevokeForced: the holder is told (Lost, cause ErrRevoked) and deletes
// its node itself, and the waiter is granted only after the holder was
// told, under either disconnect policy.
func TestRevokeForced(t *testing.T) {
	t.Parallel()
	for name, start := range contests() {
		for _, policy := range []session.DisconnectPolicy{session.StopOnDisconnect, session.PauseOnDisconnect} {
			t.Run(name+"/"+policy.String(), func(t *testing.T) {
				ctx := testutil.Ctx(t, 30*time.Second)
				c := start(t, ctx, testutil.UniquePath(t, "revoke"), policy)
				c.waitQueued(t)
				began := time.Now()
				byHolder, err := admin.Revoke(ctx, operator(t), admin.Grant{Node: c.node}, 10*time.Second)
				require.NoError(t, err)
				require.True(t, byHolder, "the holder did not delete its node itself")
				select {
				case toldFirst := <-c.granted:
					require.True(t, toldFirst, "the waiter was granted before the holder was told")
				case <-ctx.Done():
					t.Fatal("the waiter was never granted")
				}
				t.Logf("revoked and handed over in %v", time.Since(began))
				require.True(t, testutil.IsClosed(c.held.Lost()))
				cause := context.Cause(c.held.Context())
				require.ErrorIs(t, cause, line.ErrRevoked)
				require.ErrorIs(t, cause, line.ErrLost)
				err = c.release(ctx) // the election's Resign of a lost leadership is no error
				if name != "election" {
					require.ErrorIs(t, err, line.ErrLost, "a release after the revocation")
				}
			})
		}
	}
}

// TestRevokeAsk: the holder sees RevokeRequested, keeps the hold until it
// releases it, and AskRevoke returns at the release; a holder that does not
// release keeps it (AskRevoke gives up at its ctx, the request stays, and
// status shows it and the holder's data as it was).
func TestRevokeAsk(t *testing.T) {
	t.Parallel()
	for name, start := range contests() {
		t.Run(name, func(t *testing.T) {
			ctx := testutil.Ctx(t, 30*time.Second)
			path := testutil.UniquePath(t, "revoke-ask")
			c := start(t, ctx, path, session.StopOnDisconnect)
			op := operator(t)

			short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			err := admin.AskRevoke(short, op, admin.Grant{Node: c.node})
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded, "the holder never released")
			waitClosed(t, c.held.RevokeRequested(), 5*time.Second, "RevokeRequested")
			require.False(t, testutil.IsClosed(c.held.Lost()), "an ask ended the hold")
			require.NoError(t, c.held.Context().Err())
			select {
			case <-c.granted:
				t.Fatal("granted to the waiter while the holder holds")
			default:
			}
			snap, err := admin.Inspect(ctx, op, op.Path(path))
			require.NoError(t, err)
			require.Len(t, snap.Holders, 1)
			require.Equal(t, "ask", snap.Holders[0].Revoke)
			if name == "election" {
				require.Equal(t, "a", snap.Holders[0].Data, "the holder's data, without the request")
			}

			asked := make(chan error, 1)
			go func() { asked <- admin.AskRevoke(ctx, op, admin.Grant{Node: c.node}) }()
			require.NoError(t, c.release(ctx))
			require.NoError(t, <-asked)
			require.False(t, <-c.granted, "a release is no loss")
		})
	}
}

// TestRevokeNotHead: a reader behind another reader cannot be asked (the
// request would read as its mark to the writer behind it, which would then
// be granted at its release beside the first reader); forcing it deletes
// its node at once, its own watch tells it, and the writer is not granted
// while the first reader holds.
func TestRevokeNotHead(t *testing.T) {
	t.Parallel()
	ctx := testutil.Ctx(t, 30*time.Second)
	path := testutil.UniquePath(t, "revoke-readers")
	rw := func() *mutex.RWMutex {
		m, err := mutex.NewRW(testutil.Open(t, zk.Servers()), path)
		require.NoError(t, err)
		return m
	}
	r1, r2, w := rw(), rw(), rw()
	require.NoError(t, r1.RLock(ctx))
	require.NoError(t, r2.RLock(ctx))
	wrote := make(chan struct{})
	go func() {
		if w.Lock(ctx) == nil {
			close(wrote)
			_ = w.Unlock(context.Background())
		}
	}()
	readers := r1.Reader().Session()
	require.Eventually(t, func() bool { return len(testutil.Children(t, readers, path)) == 3 }, 10*time.Second,
		5*time.Millisecond, "the writer in line")
	node := r2.Reader().Hold().Node()
	op := operator(t)
	err := admin.AskRevoke(ctx, op, admin.Grant{Node: node})
	require.ErrorIs(t, err, admin.ErrNotHead)
	byHolder, err := admin.Revoke(ctx, op, admin.Grant{Node: node}, time.Second)
	require.NoError(t, err)
	require.False(t, byHolder, "not asked: deleted by the operator")
	waitClosed(t, r2.Reader().Hold().Lost(), 5*time.Second, "the second reader's loss")
	select {
	case <-wrote:
		t.Fatal("the writer was granted while the first reader holds")
	case <-time.After(200 * time.Millisecond):
	}
	require.NoError(t, r1.RUnlock(ctx))
	waitClosed(t, wrote, 5*time.Second, "the writer's grant")
}

// TestRevokeNobody: a node that is gone is no error; a holder's data that
// would read as a request is refused at the call.
func TestRevokeNobody(t *testing.T) {
	t.Parallel()
	ctx := testutil.Ctx(t, 10*time.Second)
	op := operator(t)
	node := testutil.UniquePath(t, "revoke-none") + "/_c_x-lock-0000000001"
	byHolder, err := admin.Revoke(ctx, op, admin.Grant{Node: node}, time.Second)
	require.NoError(t, err)
	require.False(t, byHolder)
	require.NoError(t, admin.AskRevoke(ctx, op, admin.Grant{Node: node}))
	_, err = mutex.New(op, testutil.UniquePath(t, "revoke-data"), mutex.WithData([]byte("x\x00shepherd:revoke=ask")))
	require.True(t, errors.Is(err, line.ErrInvalidArgument), "got %v", err)
}

// TestRevokeBadPath: a node path ZooKeeper would refuse, the root or a
// server node is refused at the call with line.ErrInvalidPath (was
// go-zookeeper's own error, and the root's delete was sent to the server).
func TestRevokeBadPath(t *testing.T) {
	s := testutil.Open(t, zk.Servers())
	ctx := testutil.Ctx(t, 10*time.Second)
	for _, node := range []string{"", "rel/x", "/", "/a/", "/a//b", "/zookeeper/quota"} {
		_, err := admin.Revoke(ctx, s, admin.Grant{Node: node}, time.Second)
		require.ErrorIs(t, err, line.ErrInvalidPath, "Revoke(%q)", node)
		require.ErrorIs(t, admin.AskRevoke(ctx, s, admin.Grant{Node: node}), line.ErrInvalidPath, "AskRevoke(%q)", node)
	}
}
