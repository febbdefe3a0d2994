package admin

import (
	"context"
	"path"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/internal/wire/zkwire"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
)

// nextGrant is a non-fair lock's grant, held by a, whose node's name the
// next grant (b's, waiting) takes again.
type nextGrant struct {
	a, b  *mutex.Mutex
	node  string
	bHeld chan struct{} // closed once b holds
}

func takeNonFair(t *testing.T, ctx context.Context, p string) *nextGrant {
	t.Helper()
	a, err := mutex.New(testutil.Open(t, zkc.Servers()), p, mutex.NonFair())
	require.NoError(t, err)
	require.NoError(t, a.Lock(ctx))
	b, err := mutex.New(testutil.Open(t, zkc.Servers()), p, mutex.NonFair())
	require.NoError(t, err)
	g := &nextGrant{a: a, b: b, node: a.Hold().Node(), bHeld: make(chan struct{})}
	go func() {
		if b.Lock(ctx) == nil {
			close(g.bHeld)
		}
	}()
	t.Cleanup(func() { _ = b.Unlock(context.Background()) })
	return g
}

// handOn lets a go and waits until b holds the node a held, made again.
func (g *nextGrant) handOn(t *testing.T, ctx context.Context) {
	t.Helper()
	require.NoError(t, g.a.Unlock(ctx))
	select {
	case <-g.bHeld:
	case <-ctx.Done():
		t.Fatal("the next contender was never granted")
	}
	require.Equal(t, g.node, g.b.Hold().Node(), "the next grant has the same node name")
}

// An operator's request to a grant of a fixed name (AskRevoke) acts on that
// grant only, even when the next grant makes the node again between the
// request's read of the node (which pins the grant) and its write: the
// write is made under a check of the parent's version, read before the
// node, which each grant of a non-fair recipe writes. On fe420af the write
// was the node's version alone (0 for both grants): the next holder was
// asked to let go.
func TestAskRevokeSparesTheNextGrant(t *testing.T) {
	ctx := testutil.Ctx(t, 30*time.Second)
	g := takeNonFair(t, ctx, testutil.UniquePath(t, "admin-grant"))
	gate := testutil.NewFrameGate(func(op int32, p string) bool { return op == zkwire.OpSetData || op == zkwire.OpMulti })
	op := testutil.Open(t, zkc.Servers(), session.WithDialer(gate.Dial))
	t.Cleanup(gate.Release) // before the session's close, if the test failed first
	gate.Arm()
	done := make(chan error, 1)
	go func() { done <- AskRevoke(ctx, op, Grant{Node: g.node}) }()
	select {
	case <-gate.Held(): // the grant read and pinned; its write not sent
	case <-ctx.Done():
		t.Fatal("AskRevoke never wrote")
	}
	g.handOn(t, ctx)
	gate.Release()
	select {
	case err := <-done:
		require.NoError(t, err, "a grant that ended is no error")
	case <-ctx.Done():
		t.Fatal("AskRevoke never returned")
	}
	select {
	case <-g.b.Hold().RevokeRequested():
		t.Fatal("the next holder was asked to let go")
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, g.b.Hold().Validate(ctx), "the next holder still holds")
}

// The same for a forced revocation's delete (deleteGrant), when the next
// grant is made between its reads: the grant's node is read after its
// parent, so a later grant fails the parent's check, or the node's
// creation zxid. On fe420af the node was read first and the parent then:
// the parent read after the next grant passed the check, and the next
// holder's node (at the same version) was deleted.
func TestDeleteGrantSparesTheNextGrant(t *testing.T) {
	ctx := testutil.Ctx(t, 30*time.Second)
	g := takeNonFair(t, ctx, testutil.UniquePath(t, "admin-grant"))
	parent := path.Dir(g.node)
	var seen atomic.Int32 // the grant's reads so far: node and parent, in either order
	gate := testutil.NewFrameGate(func(op int32, p string) bool {
		read := op == zkwire.OpExists || op == zkwire.OpGetData
		return read && (p == g.node || p == parent) && seen.Add(1) == 2
	})
	op := testutil.Open(t, zkc.Servers(), session.WithDialer(gate.Dial))
	t.Cleanup(gate.Release) // before the session's close, if the test failed first
	tok, err := g.a.Hold().Token(ctx)
	require.NoError(t, err)
	gr := Grant{Node: g.node, Token: tok, SessionID: g.a.Hold().SessionID()}
	gate.Arm()
	type result struct {
		gone bool
		err  error
	}
	done := make(chan result, 1)
	go func() {
		gone, err := deleteGrant(ctx, op, &gr)
		done <- result{gone, err}
	}()
	select {
	case <-gate.Held(): // the first of the two reads answered, the second not sent
	case <-ctx.Done():
		t.Fatal("deleteGrant never read")
	}
	g.handOn(t, ctx)
	gate.Release()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("deleteGrant never returned")
	}
	require.NoError(t, r.err)
	require.True(t, r.gone, "the grant ended before the delete")
	select {
	case <-g.b.Lost():
		t.Fatal("the next holder's node was deleted")
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, g.b.Hold().Validate(ctx), "the next holder still holds")
}
