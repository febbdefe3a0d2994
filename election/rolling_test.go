package election_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/zktest"
)

// deploy replaces three candidates of version 1 by three of version 2,
// one at a time, as a rolling deploy does (each new one in line before an
// old one stops; the old leader first, the case where line order moves
// leadership most), and returns who led, in order. With priorities, the
// version is the priority and the old ones hand over when they stop.
func deploy(t *testing.T, servers []string, opts []election.Option, priorities bool) []string {
	path := uniquePath(t)
	g := newLedger()
	optsOf := func(version int) []election.Option {
		if !priorities {
			return opts
		}
		return with(opts, election.WithPriority(version), election.HandOverOnStop(200*time.Millisecond))
	}
	var old []*runner
	for _, id := range []string{"v1-a", "v1-b", "v1-c"} {
		old = append(old, run(t, g, open(t, servers), path, id, optsOf(1)...))
		if id == "v1-a" {
			require.Equal(t, "v1-a", g.wait(t, 10*time.Second))
		}
	}
	waitIn(t, old[0].e, 3)
	for i, o := range old {
		n := run(t, g, open(t, servers), path, fmt.Sprintf("v2-%c", 'a'+i), optsOf(2)...)
		waitIn(t, n.e, 4)
		o.stop()
		waitIn(t, n.e, 3)
	}
	g.check(t)
	return g.history()
}

// TestRollingDeploy: on a 3-node ensemble, a rolling deploy of three
// candidates (each replaced by a new version, one at a time) moves
// leadership exactly once, to the new version, with the version as
// priority and a handover when an old candidate stops; in both layouts.
// Without priorities (a plain resign) it moves by line order: logged.
func TestRollingDeploy(t *testing.T) {
	if testing.Short() {
		t.Skip("ensemble")
	}
	ens := zktest.Start(t, 3)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			led := deploy(t, ens.Servers(), m.opts, true)
			require.Len(t, led, 2, "leadership changed more than once: %v", led)
			require.True(t, strings.HasPrefix(led[1], "v2-"), "to an old version: %v", led)
			t.Logf("with priorities: %v", led)
		})
		t.Run(m.name+"/line-order", func(t *testing.T) {
			led := deploy(t, ens.Servers(), m.opts, false)
			require.GreaterOrEqual(t, len(led), 2)
			t.Logf("without priorities: %d changes: %v", len(led)-1, led)
		})
	}
}

// TestHandOverGap: the leaderless gap of a handover (from the old
// leader's Context's end to the new leader's OnElected) beside a resign's,
// on the same line of candidates: p50 and p99, logged (not asserted: a
// pace). A handover passes over two candidates each time, which step
// aside before the leader lets go.
func TestHandOverGap(t *testing.T) {
	const n = 30
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			path := uniquePath(t)
			g := newLedger()
			byID := map[string]*runner{}
			ids := []string{"a", "b", "c", "d"}
			for _, id := range ids {
				byID[id] = run(t, g, open(t, zk.Servers()), path, id, m.opts...)
				if id == "a" {
					require.Equal(t, "a", g.wait(t, 10*time.Second))
				}
			}
			waitIn(t, byID["a"].e, 4)
			ctx := testutil.Ctx(t, 2*time.Minute)
			var resign, handover []time.Duration
			leader := "a"
			for i := range 2 * n {
				var next string
				if i%2 == 0 {
					require.NoError(t, byID[leader].e.Resign(ctx))
					next = g.wait(t, 10*time.Second)
				} else {
					// The last in line (fair), or any other (non-fair).
					ps, err := byID[leader].e.Participants(ctx)
					require.NoError(t, err)
					next = ps[len(ps)-1].ID
					require.NoError(t, byID[leader].e.HandOver(ctx, next))
					require.Equal(t, next, g.wait(t, 10*time.Second))
				}
				gap := g.gap(len(g.history()) - 1)
				if i%2 == 0 {
					resign = append(resign, gap)
				} else {
					handover = append(handover, gap)
				}
				waitIn(t, byID[next].e, 4)
				leader = next
			}
			g.check(t)
			t.Logf("%s: leaderless gap, resign p50 %v p99 %v; handover (past the line) p50 %v p99 %v (%d each)",
				m.name, pct(resign, 50), pct(resign, 99), pct(handover, 50), pct(handover, 99), n)
		})
	}
}

// pct is the p-th percentile of ds (nearest rank).
func pct(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (p*len(s)+99)/100 - 1
	return s[max(i, 0)].Round(10 * time.Microsecond)
}
