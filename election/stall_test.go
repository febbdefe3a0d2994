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

// TestCtxDeadlineUnderStall: the election's own calls (Campaign and a
// leadership's are the contract's: TestHoldContract/*/CtxDeadlineUnderStall)
// return within their ctx's deadline (plus testutil.StallSlack) while the
// connection is stalled.
func TestCtxDeadlineUnderStall(t *testing.T) {
	const d = 300 * time.Millisecond
	path := uniquePath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	px, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { px.Close() })
	s := open(t, px.Addrs(), session.WithSessionTimeout(6*time.Second))

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
