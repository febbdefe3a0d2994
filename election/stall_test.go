package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// TestCtxDeadlineUnderStall: every blocking call of a fair election returns
// within its ctx's deadline (plus testutil.StallSlack) while its connection
// is stalled, before the call or while the candidate waits in line.
func TestCtxDeadlineUnderStall(t *testing.T) {
	const d = 300 * time.Millisecond
	path := uniquePath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	px, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { px.Close() })
	s := open(t, px.Addrs(), session.WithSessionTimeout(6*time.Second))
	other := open(t, zk.Servers())
	leader, err := election.New(other, path, "leader")
	require.NoError(t, err)
	campaign := func(e *election.Election) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := e.Campaign(ctx)
			if err == nil {
				_ = e.Resign(ctx)
			}
			return err
		}
	}

	t.Run("Campaign", func(t *testing.T) {
		e, _ := election.New(s, path, "me")
		require.Error(t, testutil.Stalled(t, s, px, d, campaign(e)))
	})
	t.Run("Campaign/waiting", func(t *testing.T) {
		_, err := leader.Campaign(ctx)
		require.NoError(t, err)
		defer func() { require.NoError(t, leader.Resign(ctx)) }()
		e, _ := election.New(s, path, "me")
		watching := testutil.WatchCount(t, zk, 0)
		err = testutil.StalledWhileWaiting(t, s, px, d, campaign(e), func() bool {
			ps, err := leader.Participants(ctx)
			return err == nil && len(ps) == 2 && testutil.WatchCount(t, zk, 0) > watching
		})
		require.ErrorIs(t, err, context.Canceled)
		require.Eventually(t, func() bool {
			ps, err := leader.Participants(ctx)
			return err == nil && len(ps) == 1
		}, 10*time.Second, 5*time.Millisecond, "the candidate's node is left behind")
	})
	t.Run("NonFair/Campaign", func(t *testing.T) {
		e, _ := election.New(s, path+"-nf", "me", election.NonFair())
		require.Error(t, testutil.Stalled(t, s, px, d, campaign(e)))
	})
	t.Run("NonFair/Campaign/waiting", func(t *testing.T) {
		l, _ := election.New(other, path+"-nf", "leader", election.NonFair())
		_, err := l.Campaign(ctx)
		require.NoError(t, err)
		defer func() { require.NoError(t, l.Resign(ctx)) }()
		e, _ := election.New(s, path+"-nf", "me", election.NonFair())
		watching := testutil.WatchCount(t, zk, 0)
		err = testutil.StalledWhileWaiting(t, s, px, d, campaign(e), func() bool {
			return testutil.WatchCount(t, zk, 0) > watching
		})
		require.ErrorIs(t, err, context.Canceled)
	})
	t.Run("Leader", func(t *testing.T) {
		e, _ := election.New(s, path, "me")
		require.Error(t, testutil.Stalled(t, s, px, d, func(ctx context.Context) error {
			_, err := e.Leader(ctx)
			return err
		}))
	})
	t.Run("Participants", func(t *testing.T) {
		e, _ := election.New(s, path, "me")
		require.Error(t, testutil.Stalled(t, s, px, d, func(ctx context.Context) error {
			_, err := e.Participants(ctx)
			return err
		}))
	})
	t.Run("Validate", func(t *testing.T) {
		e, _ := election.New(s, path, "me")
		_, err := e.Campaign(ctx)
		require.NoError(t, err)
		require.Error(t, testutil.Stalled(t, s, px, d, e.Validate))
		_ = e.Resign(ctx)
	})
}
