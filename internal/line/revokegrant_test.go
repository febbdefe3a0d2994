package line_test

import (
	"context"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/admin"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/zktest"
)

// fixedName is a hold on a node whose name the next grant reuses (a
// non-fair lock's or election's), and a second client that takes it next.
type fixedName struct {
	node string
	lost <-chan struct{}
	// next is the second client's hold, once granted.
	next <-chan <-chan struct{}
}

func fixedNames() map[string]func(t *testing.T, ctx context.Context, path string) fixedName {
	return map[string]func(t *testing.T, ctx context.Context, path string) fixedName{
		"mutex-nonfair": func(t *testing.T, ctx context.Context, path string) fixedName {
			a, err := mutex.New(testutil.Open(t, zk.Servers()), path, mutex.NonFair())
			require.NoError(t, err)
			require.NoError(t, a.Lock(ctx))
			b, err := mutex.New(testutil.Open(t, zk.Servers()), path, mutex.NonFair())
			require.NoError(t, err)
			next := make(chan (<-chan struct{}), 1)
			go func() {
				if b.Lock(ctx) == nil {
					next <- b.Lost()
				}
			}()
			t.Cleanup(func() { _ = b.Unlock(context.Background()) })
			return fixedName{node: a.Hold().Node(), lost: a.Lost(), next: next}
		},
		"election-nonfair": func(t *testing.T, ctx context.Context, path string) fixedName {
			a, err := election.New(testutil.Open(t, zk.Servers()), path, "a", election.NonFair())
			require.NoError(t, err)
			l, err := a.Campaign(ctx)
			require.NoError(t, err)
			b, err := election.New(testutil.Open(t, zk.Servers()), path, "b", election.NonFair())
			require.NoError(t, err)
			next := make(chan (<-chan struct{}), 1)
			go func() {
				if lb, err := b.Campaign(ctx); err == nil {
					next <- lb.Lost()
					t.Cleanup(func() { _ = lb.Resign(context.Background()) })
				}
			}()
			return fixedName{node: l.Hold().Node(), lost: l.Lost(), next: next}
		},
	}
}

// TestRevokeActsOnOneGrant: a forced revocation acts on the grant its
// request was written to, never on a later grant of the same name. The
// holder hears the request, lets go and deletes its node; the next
// contender creates the node again at once; the operator's connection is
// stalled meanwhile, so it hears of the deletion only after the new node is
// there. Issue 36 (1): on b9d4272 Revoke found the new node, waited out its
// grace and deleted it (the new holder lost its hold, told by nobody), and
// reported byHolder=false.
func TestRevokeActsOnOneGrant(t *testing.T) {
	t.Parallel()
	for name, start := range fixedNames() {
		t.Run(name, func(t *testing.T) {
			ctx := testutil.Ctx(t, 30*time.Second)
			c := start(t, ctx, testutil.UniquePath(t, "revoke-grant"))
			p, err := zktest.NewProxy(zk.Servers()...)
			require.NoError(t, err)
			t.Cleanup(func() { p.Close() })
			op := testutil.Open(t, p.Addrs())
			type result struct {
				byHolder bool
				err      error
			}
			done := make(chan result, 1)
			go func() {
				byHolder, err := admin.Revoke(ctx, op, admin.Grant{Node: c.node}, 2*time.Second)
				done <- result{byHolder, err}
			}()
			waitClosed(t, c.lost, 10*time.Second, "the holder's loss")
			p.Stall() // the operator misses the deletion until the next grant
			var nextLost <-chan struct{}
			select {
			case nextLost = <-c.next:
			case <-ctx.Done():
				t.Fatal("the next contender was never granted")
			}
			p.Heal()
			var r result
			select {
			case r = <-done:
			case <-ctx.Done():
				t.Fatal("Revoke never returned")
			}
			require.NoError(t, r.err)
			require.True(t, r.byHolder, "the holder let go itself")
			select {
			case <-nextLost:
				t.Fatal("the revocation took the next holder's grant")
			case <-time.After(500 * time.Millisecond):
			}
		})
	}
}
