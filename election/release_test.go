package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// TestNonFairRetriedDeleteSparesNextLeader: a non-fair leader gives
// leadership up (Resign, or its Run ctx ends) while the server's answers to
// it are lost: its delete is applied, b is elected, and once a's connection
// is back a's retried delete must not remove b's node — c would then be
// elected while b still leads.
func TestNonFairRetriedDeleteSparesNextLeader(t *testing.T) {
	for _, how := range []string{"resign", "run-ends"} {
		t.Run(how, func(t *testing.T) {
			path := uniquePath(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			p, err := zktest.NewProxy(zk.Servers()...)
			require.NoError(t, err)
			t.Cleanup(func() { p.Close() })
			sa := open(t, p.Addrs(), session.WithSessionTimeout(6*time.Second))
			a, err := election.New(sa, path, "a", election.NonFair())
			require.NoError(t, err)
			gaveUp := make(chan struct{})
			switch how {
			case "resign":
				_, err = a.Campaign(ctx)
				require.NoError(t, err)
				p.MuteReplies()
				go func() {
					defer close(gaveUp)
					rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
					defer rcancel()
					_ = a.Resign(rctx) // its answer is lost: it may report ctx's end
				}()
			case "run-ends":
				elected := make(chan struct{})
				runCtx, stop := context.WithCancel(ctx)
				go func() {
					defer close(gaveUp)
					_ = a.Run(runCtx, election.Callbacks{OnElected: func(ctx context.Context, _ election.Term) {
						close(elected)
						<-ctx.Done()
					}})
				}()
				<-elected
				p.MuteReplies()
				stop()
			}
			b, err := election.New(open(t, zk.Servers()), path, "b", election.NonFair())
			require.NoError(t, err)
			_, err = b.Campaign(ctx) // a's delete was applied
			require.NoError(t, err)
			c, err := election.New(open(t, zk.Servers()), path, "c", election.NonFair())
			require.NoError(t, err)
			cctx, ccancel := context.WithCancel(ctx)
			cElected := make(chan error, 1)
			go func() { _, err := c.Campaign(cctx); cElected <- err }()
			defer func() { ccancel(); <-cElected }()

			sid := sa.SessionID()
			p.Heal()
			require.Eventually(t, func() bool { return sa.State() == session.Reconnected }, 10*time.Second, 5*time.Millisecond)
			require.Equal(t, sid, sa.SessionID(), "a's session survives")
			// a's retried delete goes out within milliseconds of the
			// reconnect: b must keep leading, and c must not be elected.
			require.Never(t, func() bool {
				select {
				case err := <-cElected:
					cElected <- err
					return err == nil
				default:
					return false
				}
			}, 2*time.Second, 10*time.Millisecond, "c elected while b leads: a's retried delete removed b's node")
			require.True(t, b.IsLeader())
			l, err := b.Leader(ctx)
			require.NoError(t, err)
			require.Equal(t, "b", l.ID)
			select {
			case <-gaveUp:
			case <-time.After(20 * time.Second):
				t.Fatal("a did not finish giving leadership up")
			}
			require.False(t, a.IsLeader())
			require.NoError(t, b.Resign(ctx))
			require.NoError(t, <-cElected)
			cElected <- nil
		})
	}
}

// TestNonFairOnLeaderReportsEachLeader: a non-fair candidate waiting in Run
// reports each new leader, although every leader's node has the same name.
func TestNonFairOnLeaderReportsEachLeader(t *testing.T) {
	path := uniquePath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := election.New(open(t, zk.Servers()), path, "a", election.NonFair())
	require.NoError(t, err)
	b, err := election.New(open(t, zk.Servers()), path, "b", election.NonFair())
	require.NoError(t, err)
	_, err = a.Campaign(ctx)
	require.NoError(t, err)
	seen := make(chan string, 10)
	runCtx, stop := context.WithCancel(ctx)
	c, err := election.New(open(t, zk.Servers()), path, "c", election.NonFair())
	require.NoError(t, err)
	ran := make(chan error, 1)
	go func() {
		ran <- c.Run(runCtx, election.Callbacks{
			OnElected: func(ctx context.Context, _ election.Term) { <-ctx.Done() },
			OnLeader:  func(l election.Leader) { seen <- l.ID },
		})
	}()
	defer func() { stop(); <-ran }()
	next := func() string {
		select {
		case id := <-seen:
			return id
		case <-time.After(10 * time.Second):
			t.Fatal("no leader reported")
			return ""
		}
	}
	require.Equal(t, "a", next())
	got := make(chan error, 1)
	go func() { _, err := b.Campaign(ctx); got <- err }()
	require.NoError(t, a.Resign(ctx))
	// b or c wins the race; either way c reports it.
	switch id := next(); id {
	case "b":
		require.NoError(t, <-got)
		require.NoError(t, b.Resign(ctx))
		require.Equal(t, "c", next())
	case "c":
		// OnLeader reports c as the race grants it; Run marks it leading
		// right after.
		require.Eventually(t, c.IsLeader, 10*time.Second, time.Millisecond)
	default:
		t.Fatalf("reported %q after a resigned", id)
	}
}
