package schedule

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
)

// TestInspect: Inspect needs no candidate: nothing at the path is no
// schedule; a running one shows its leader, its record and the next tick
// due at epoch + (N+1) intervals; after the candidate leaves, no leader.
func TestInspect(t *testing.T) {
	ctx := context.Background()
	path := uniquePath(t)
	sess := testutil.Open(t, zkc.Servers())
	_, ok, err := Inspect(ctx, sess, path)
	require.NoError(t, err)
	require.False(t, ok, "nothing there")

	b := newBook()
	every := 150 * time.Millisecond
	c := start(t, sess, path, "a", every, b.job("a", nil), withHooks(b.hooks("a")), WithCatchUp(noSkip))
	b.waitTick(t, 2, 10*time.Second)
	st, ok, err := Inspect(ctx, sess, path)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, every, st.Every)
	require.Equal(t, "a", st.Leader.ID)
	require.Equal(t, c.s.Leadership().Term(), st.Leader.Term)
	require.GreaterOrEqual(t, st.Record.N, int64(2))
	require.Equal(t, st.Record.N+1, st.NextN)
	require.Equal(t, time.UnixMilli(st.Record.Epoch).Add(time.Duration(st.NextN)*every).UTC(), st.NextDue)
	require.NoError(t, c.stop(t))
	st, ok, err = Inspect(ctx, sess, path)
	require.NoError(t, err)
	require.True(t, ok)
	require.Zero(t, st.Leader.Term, "no leader after the candidate left")
	require.Equal(t, stateFinished, st.Record.State)
}
