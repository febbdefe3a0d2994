package bench_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/bench"
)

// fakeEnsemble records what a rolling restart does; server `leader` leads
// until it is restarted, then the next one does.
type fakeEnsemble struct {
	size, leader int
	log          []string
}

func (f *fakeEnsemble) Size() int { return f.size }
func (f *fakeEnsemble) Stop(i int) error {
	f.log = append(f.log, fmt.Sprintf("stop %d", i))
	if i == f.leader {
		f.leader = (i + 1) % f.size
	}
	return nil
}
func (f *fakeEnsemble) Restart(_ context.Context, i int) error {
	f.log = append(f.log, fmt.Sprintf("start %d", i))
	return nil
}
func (f *fakeEnsemble) WaitServing(context.Context) error   { return nil }
func (f *fakeEnsemble) Leader(context.Context) (int, error) { return f.leader, nil }

// TestRollingRestart: in each round the followers first, then the server
// that led when the round began; the count and the deadline bound it.
func TestRollingRestart(t *testing.T) {
	f := &fakeEnsemble{size: 3, leader: 1}
	n, err := bench.RollingRestart(t.Context(), f, 5, time.Millisecond, time.Now().Add(time.Minute))
	if err != nil || n != 5 {
		t.Fatalf("RollingRestart = %d, %v; want 5, nil", n, err)
	}
	// Round 1: leader 1, so 0, 2, then 1 (2 leads after). Round 2: 0, 1 ...
	want := []string{"stop 0", "start 0", "stop 2", "start 2", "stop 1", "start 1", "stop 0", "start 0", "stop 1", "start 1"}
	if !slices.Equal(f.log, want) {
		t.Errorf("restarts:\n got %v\nwant %v", f.log, want)
	}
	if n, _ := bench.RollingRestart(t.Context(), &fakeEnsemble{size: 3}, 3, time.Millisecond, time.Now().Add(-time.Second)); n != 0 {
		t.Errorf("past the deadline: %d restarts; want 0", n)
	}
	if _, err := bench.RollingRestart(t.Context(), &fakeEnsemble{size: 1}, 3, time.Millisecond, time.Now().Add(time.Minute)); err == nil {
		t.Errorf("a standalone server: no error")
	}
}
