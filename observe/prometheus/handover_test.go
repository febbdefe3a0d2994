package prometheus_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	promobs "github.com/shepherdzk/shepherd/observe/prometheus"
	"github.com/shepherdzk/shepherd/session"
)

// TestHandoverMetrics: a leader's handovers are counted by reason and
// outcome, and timed: one made, one to no candidate.
func TestHandoverMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	obs, err := promobs.New(reg)
	require.NoError(t, err)
	path := uniquePath(t)
	ctx := testutil.Ctx(t, 30*time.Second)
	// Sessions of 10 s: nothing here is about a loss, and a make test
	// lost the 2 s session of the leader (busy beside the chaos matrix)
	// before its handover ("not the leader (term 5 has ended)").
	a, err := election.New(open(t, zk.Servers(), session.WithObserver(obs), session.WithSessionTimeout(10*time.Second)), path, "a")
	require.NoError(t, err)
	l, err := a.Campaign(ctx)
	require.NoError(t, err)
	require.ErrorIs(t, l.HandOver(ctx, "b"), election.ErrNoCandidate)
	b, err := election.New(open(t, zk.Servers(), session.WithSessionTimeout(10*time.Second)), path, "b")
	require.NoError(t, err)
	won := make(chan error, 1)
	go func() { _, err := b.Campaign(ctx); won <- err }()
	require.Eventually(t, func() bool {
		ps, err := a.Participants(ctx)
		return err == nil && len(ps) == 2
	}, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, l.HandOver(ctx, "b"))
	require.NoError(t, <-won)
	// The observer is told on a goroutine of its own: wait for it.
	require.Eventually(t, func() bool {
		return metric(t, reg, "shepherd_handovers_total",
			map[string]string{"path": path, "reason": "directed", "outcome": "handed_over"}) == 1 &&
			metric(t, reg, "shepherd_handovers_total",
				map[string]string{"path": path, "reason": "directed", "outcome": "no_candidate"}) == 1 &&
			metric(t, reg, "shepherd_handover_seconds", map[string]string{"path": path}) == 2
	}, 10*time.Second, 5*time.Millisecond, "a handover made and one to no candidate, counted and timed")
	require.NoError(t, b.Resign(context.Background()))
}
