package bench_test

import (
	"context"
	"strings"
	"testing"

	"github.com/shepherdzk/shepherd/bench"
	"github.com/shepherdzk/shepherd/zktest"
)

// namedPeer runs every workload at once, doing nothing: what Run does with
// the order of peers and runs is what TestPasses checks.
type namedPeer string

func (p namedPeer) Name() string         { return string(p) }
func (p namedPeer) Supports(string) bool { return true }
func (p namedPeer) Close() error         { return nil }
func (p namedPeer) Prepare(context.Context, bench.Spec) (bench.Run, error) {
	return nothing{}, nil
}

type nothing struct{}

func (nothing) Go(context.Context) (bench.Result, error) {
	return bench.Result{Ops: 1, ElapsedS: 1, Metrics: map[string]float64{bench.MOpsPerS: 1}}, nil
}
func (nothing) Close(context.Context) error { return nil }

// TestPasses: a workload with Passes runs that many times on every peer in
// each repetition, each pass starting one peer later than the one before
// (and each repetition one later again), every run on a path of its own; a
// workload without runs once.
func TestPasses(t *testing.T) {
	r, err := bench.NewRunner(t.Context(), zktest.Start(t, 1), bench.Config{
		Repeat: 2, Workloads: []string{bench.W1, bench.W2}, Passes: map[string]int{bench.W2: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := r.Run(t.Context(), []bench.Peer{namedPeer("a"), namedPeer("b"), namedPeer("c")})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	paths := map[string]bool{}
	for _, rec := range recs {
		if rec.Error != "" {
			t.Fatalf("rep %d %s %s: %s", rec.Rep, rec.Workload, rec.Peer, rec.Error)
		}
		order = append(order, rec.Workload+rec.Peer)
		paths[rec.Spec.Path] = true
	}
	want := "W1a W1b W1c W2a W2b W2c W2b W2c W2a W2c W2a W2b " + // repetition 1
		"W1b W1c W1a W2b W2c W2a W2c W2a W2b W2a W2b W2c" // repetition 2
	if got := strings.Join(order, " "); got != want {
		t.Errorf("runs in the order\n%s\nwant\n%s", got, want)
	}
	if len(paths) != len(recs) {
		t.Errorf("%d runs on %d paths; want a path each", len(recs), len(paths))
	}
}
