package election_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/recipe"
)

// TestSequenceExhausted: an election path whose sequence counter is stuck at
// 2^31−1. The leader (…45) and the candidate behind it (…46) are unaffected;
// every later candidate (…47, then …47 again) fails closed with
// ErrSequenceExhausted naming the path, leaves nothing behind, and is never
// elected beside the leader.
func TestSequenceExhausted(t *testing.T) {
	path := "/exhausted/election"
	c := testutil.ExhaustedCounter(t, path)
	ctx := testutil.Ctx(t, 60*time.Second)
	s1 := open(t, c.Servers())
	line := func() []string { return testutil.Children(t, s1, path) }

	e1, err := election.New(s1, path, "one")
	require.NoError(t, err)
	_, err = e1.Campaign(ctx) // …45
	require.NoError(t, err)
	s2 := open(t, c.Servers())
	e2, err := election.New(s2, path, "two")
	require.NoError(t, err)
	elected := make(chan error, 1)
	go func() {
		_, err := e2.Campaign(ctx) // …46
		elected <- err
	}()
	require.Eventually(t, func() bool { return len(line()) >= 2 }, 10*time.Second, 5*time.Millisecond,
		"the second candidate did not join the line")

	for i := 0; i < 3; i++ { // …47, …47, …47
		s3 := open(t, c.Servers())
		e3, err := election.New(s3, path, "three")
		require.NoError(t, err)
		_, err = e3.Campaign(testutil.Ctx(t, 5*time.Second))
		require.ErrorIs(t, err, recipe.ErrSequenceExhausted, "candidate %d", i)
		require.ErrorIs(t, err, election.ErrSequenceExhausted)
		require.Contains(t, err.Error(), path)
		require.False(t, e3.IsLeader())
		require.Len(t, line(), 2, "candidate %d left its node behind: %v", i, line())
	}
	require.True(t, e1.IsLeader())
	require.False(t, e2.IsLeader())

	// The candidate ahead of the exhausted numbers takes over as usual.
	require.NoError(t, e1.Resign(ctx))
	require.NoError(t, <-elected)
	require.True(t, e2.IsLeader())
	require.True(t, strings.HasSuffix(line()[0], "latch-2147483646"), line())
	require.NoError(t, e2.Resign(ctx))
}
