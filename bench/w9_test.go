package bench_test

import (
	"testing"

	"github.com/shepherdzk/shepherd/bench"
	"github.com/shepherdzk/shepherd/bench/internal/gopeers"
)

// TestW9: a rolling deploy (one deploy of 3 candidates, oldest first) on
// every peer of W9: by line order (shepherd, Curator's LeaderLatch, Kazoo's
// Election) leadership changes three times, twice to an old version; with
// priorities and a handover on stop (shepherd-priority) once, to the new
// version.
func TestW9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and subprocess peers")
	}
	r := newRunner(t)
	peers := []struct {
		name         string
		peer         func(t *testing.T) bench.Peer
		changes, old float64
	}{
		{"shepherd", func(*testing.T) bench.Peer { return gopeers.Peer(gopeers.Shepherd()) }, 3, 2},
		{"shepherd-priority", func(*testing.T) bench.Peer { return gopeers.Peer(gopeers.ShepherdPriority()) }, 1, 0},
		{"curator", subprocess(bench.NewCurator), 3, 2},
		{"kazoo", subprocess(bench.NewKazoo), 3, 2},
	}
	for _, pc := range peers {
		t.Run(pc.name, func(t *testing.T) {
			rec := run(t, r, pc.peer(t), spec(bench.W9, 3, 1))
			if got := rec.Metrics[bench.MLeaderChanges]; got != pc.changes {
				t.Errorf("%v leadership changes in a deploy; want %v", got, pc.changes)
			}
			if got := rec.Metrics[bench.MChangesToOld]; got != pc.old {
				t.Errorf("%v changes to an old version; want %v", got, pc.old)
			}
			if _, ok := rec.Metrics[bench.MLeaderlessMS]; !ok {
				t.Errorf("no leaderless time in %v", rec.Metrics)
			}
		})
	}
}
