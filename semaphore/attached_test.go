package semaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/admin"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
)

// TestSlotClaimEndsWithItsLease: a lease taken WithSlots whose lease node
// is deleted from outside is lost, and its slot claim goes too, while its
// session lives: at the loss (the holder need not release), after a
// release, and after a forced revocation of a holder paused by a partition
// (deleted by the operator after the grace; the holder's session comes
// back). With maxLeases 2 and the other lease held elsewhere, a third
// client then takes the free lease and a slot. Issue 36 (2): on b9d4272 the
// claim stayed as long as the holder's session lived ("semaphore: no free
// slot (5 passes over slots 0..1)").
func TestSlotClaimEndsWithItsLease(t *testing.T) {
	for _, how := range []string{"lost", "lost-then-released", "revoked-while-paused"} {
		t.Run(how, func(t *testing.T) {
			ctx := testutil.Ctx(t, 60*time.Second)
			path := uniquePath(t)
			sa, p := testutil.Proxied(t, zk, 8*time.Second, session.WithDisconnectPolicy(session.PauseOnDisconnect))
			a, err := semaphore.New(sa, path, 2, semaphore.WithSlots())
			require.NoError(t, err)
			la, err := a.Acquire(ctx)
			require.NoError(t, err)
			b, err := semaphore.New(open(t, zk.Servers()), path, 2, semaphore.WithSlots())
			require.NoError(t, err)
			lb, err := b.Acquire(ctx)
			require.NoError(t, err)
			t.Cleanup(func() { _ = lb.Release(context.Background()) })
			op := open(t, zk.Servers())

			switch how {
			case "lost", "lost-then-released":
				ep, err := op.Wait(ctx)
				require.NoError(t, err)
				require.NoError(t, ep.Conn().Delete(la.Nodes()[0], -1))
				waitLost(t, la.Lost())
				if how == "lost-then-released" {
					require.ErrorIs(t, la.Release(ctx), semaphore.ErrLost)
				}
			case "revoked-while-paused":
				p.Stall()
				require.Eventually(t, func() bool { return la.Hold().IsPaused() }, 10*time.Second, 5*time.Millisecond)
				byHolder, err := admin.Revoke(ctx, op, admin.Grant{Node: la.Nodes()[0]}, 500*time.Millisecond)
				require.NoError(t, err)
				require.False(t, byHolder, "a paused holder cannot delete its node")
				p.Heal()
				waitLost(t, la.Lost())
			}
			require.Eventually(t, func() bool {
				return len(testutil.Children(t, op, op.Path(path)+"/slots")) == 1
			}, 10*time.Second, 5*time.Millisecond, "the lost lease's claim is still there: %v",
				testutil.Children(t, op, op.Path(path)+"/slots"))
			c, err := semaphore.New(open(t, zk.Servers()), path, 2, semaphore.WithSlots())
			require.NoError(t, err)
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			lc, err := c.Acquire(cctx)
			require.NoError(t, err, "the free lease")
			require.NotEqual(t, lb.Slot(), lc.Slot())
			require.NoError(t, lc.Release(ctx))
		})
	}
}

func waitLost(t *testing.T, lost <-chan struct{}) {
	t.Helper()
	select {
	case <-lost:
	case <-time.After(20 * time.Second):
		t.Fatal("the lease was never lost")
	}
}

// TestSlotOfRevokedStalledHolder: an operator's forced revocation of a
// holder whose connection has stalled (its process stopped, say) deletes
// its lease node while its session lives on, so its slot claim stays,
// owned by that session, naming a lease node that is gone: a dead claim.
// The next lease, granted, waits for that claim to go and then takes its
// slot: when the stalled holder is back (it deletes what its lost lease
// attached) or when its session ends. The claim is never deleted by
// another session (a claim made again under the same name would have the
// version the old holder read). Before, the next Acquire failed with
// ErrNoSlot ("no free slot (5 passes over slots 0..0)") until the stalled
// session expired.
func TestSlotOfRevokedStalledHolder(t *testing.T) {
	for _, how := range []string{"holder-back", "session-ends"} {
		t.Run(how, func(t *testing.T) {
			ctx := testutil.Ctx(t, 60*time.Second)
			path := uniquePath(t)
			timeout := 20 * time.Second // outlives the steps below
			if how == "session-ends" {
				timeout = 3 * time.Second
			}
			sa, p := testutil.Proxied(t, zk, timeout)
			a, err := semaphore.New(sa, path, 1, semaphore.WithSlots())
			require.NoError(t, err)
			la, err := a.Acquire(ctx)
			require.NoError(t, err)
			require.Equal(t, 0, la.Slot())
			op := open(t, zk.Servers())
			claims := op.Path(path) + "/slots"

			p.Stall()
			byHolder, err := admin.Revoke(ctx, op, admin.Grant{Node: la.Nodes()[0]}, 200*time.Millisecond)
			require.NoError(t, err)
			require.False(t, byHolder, "a stalled holder cannot delete its node")
			require.Equal(t, []string{"0"}, testutil.Children(t, op, claims), "the stalled holder's claim is there")

			c, err := semaphore.New(open(t, zk.Servers()), path, 1, semaphore.WithSlots())
			require.NoError(t, err)
			type acquired struct {
				l   *semaphore.Lease
				err error
			}
			got := make(chan acquired, 1)
			go func() {
				l, err := c.Acquire(ctx)
				got <- acquired{l, err}
			}()
			if how == "holder-back" {
				// The lease is granted (the revoked one's node is gone) and
				// its slot is the dead claim's: it waits (the old code
				// failed at once), until the holder is back.
				require.Eventually(t, func() bool { return len(testutil.Children(t, op, op.Path(path)+"/leases")) == 1 },
					10*time.Second, 5*time.Millisecond, "the next lease granted")
				select {
				case r := <-got:
					t.Fatalf("the next Acquire returned (%v) while the dead claim was there", r.err)
				case <-time.After(200 * time.Millisecond):
				}
				p.Heal()
			}
			var r acquired
			select {
			case r = <-got:
			case <-time.After(30 * time.Second):
				t.Fatal("the next Acquire never returned")
			}
			require.NoError(t, r.err, "the free lease, and its slot")
			require.Equal(t, 0, r.l.Slot())
			p.Heal()
			waitLost(t, la.Lost())
			require.ErrorIs(t, la.Release(ctx), semaphore.ErrLost)
			ep, err := op.Wait(ctx)
			require.NoError(t, err)
			_, st, err := ep.Conn().Get(claims + "/0")
			require.NoError(t, err)
			require.Equal(t, r.l.Hold().SessionID(), st.EphemeralOwner, "slot 0's claim is the new lease's")
			require.NoError(t, r.l.Release(ctx))
		})
	}
}
