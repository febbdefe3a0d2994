package bench_test

import (
	"context"
	"errors"
	"math"
	"os"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/bench"
	"github.com/shepherdzk/shepherd/bench/internal/gopeers"
	"github.com/shepherdzk/shepherd/zktest"
)

// TestPeers runs W1 and W2 for a few cycles on every peer, one peer at a time
// against one server, and checks what the suite relies on: every cycle
// completes, the in-process exclusion checker sees no violation, and the
// server-side request counts parse into plausible per-operation numbers.
// The Go peers need only ZooKeeper; Curator and Kazoo are skipped, with the
// reason, when Java/Curator or Kazoo is not installed.
func TestPeers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and subprocess peers")
	}
	r := newRunner(t)
	if n := r.Meter().PerRead(); n < 0 || n > 1 {
		t.Fatalf("one mntr read costs %d packets on a standalone server; want 0 or 1", n)
	}

	peers := []struct {
		name string
		peer func(t *testing.T) bench.Peer
		// Requests per W1 cycle: create + getChildren + delete; Kazoo's Lock
		// also lists the children once per acquire to look for a node of
		// its own left by an earlier try.
		w1 float64
	}{
		{"raw", func(*testing.T) bench.Peer { return gopeers.Peer(gopeers.Raw()) }, 3},
		{"go-zk", func(*testing.T) bench.Peer { return gopeers.Peer(gopeers.GoZookeeper()) }, 3},
		{"curator", subprocess(bench.NewCurator), 3},
		{"kazoo", subprocess(bench.NewKazoo), 4},
	}
	for _, pc := range peers {
		t.Run(pc.name, func(t *testing.T) {
			p := pc.peer(t)
			w1 := spec(bench.W1, 1, 40)
			rec := run(t, r, p, w1)
			if got := rec.Metrics[bench.MRequestsPerOp]; math.Abs(got-pc.w1) > 0.15 {
				t.Errorf("W1: %.3f requests per cycle (%d packets / %d cycles); want %.0f", got, rec.Packets, rec.Ops, pc.w1)
			}
			if rec.Metrics[bench.MOpsPerS] <= 0 || rec.Metrics[bench.MLatencyP50] <= 0 {
				t.Errorf("W1: no throughput or latency in %v", rec.Metrics)
			}

			w2 := spec(bench.W2, 4, 60)
			rec = run(t, r, p, w2)
			if v, ok := rec.Metrics[bench.MViolations]; !ok || v != 0 {
				t.Errorf("W2: violations = %v (reported: %t); want 0", v, ok)
			}
			// A contended acquisition: create, getChildren, a watch on the
			// predecessor, getChildren again when woken, delete: 5, fewer for
			// an acquisition that did not wait, one more for Kazoo.
			if got := rec.Metrics[bench.MRequestsPerOp]; got < 3 || got > 6.3 {
				t.Errorf("W2: %.3f requests per acquisition (%d packets / %d); want 3..6", got, rec.Packets, rec.Ops)
			}
			if got := rec.Metrics[bench.MNotifsPerOp]; got > 1.05 {
				t.Errorf("W2: %.3f watch notifications per acquisition; a fair lock fires at most 1", got)
			}
		})
	}
}

func spec(w string, sessions, cycles int) bench.Spec {
	s := bench.Params(true)[w]
	s.Sessions, s.Cycles = sessions, cycles
	s.Seconds = 20 // count-bound: every cycle must complete
	s.GraceS = 10
	return s
}

func run(t *testing.T, r *bench.Runner, p bench.Peer, s bench.Spec) bench.Record {
	t.Helper()
	start := time.Now()
	rec := r.RunOne(t.Context(), p, s, 1)
	t.Logf("%s %s: %d ops in %v, %d packets, %d notifications, metrics %v",
		s.Workload, p.Name(), rec.Ops, time.Since(start).Round(time.Millisecond), rec.Packets, rec.Notifications, rec.Metrics)
	if rec.Error != "" {
		t.Fatalf("%s: %s", s.Workload, rec.Error)
	}
	if rec.Ops != s.Cycles {
		t.Fatalf("%s: %d operations; want all %d", s.Workload, rec.Ops, s.Cycles)
	}
	return rec
}

// TestW6 crashes one leader per peer that can tell its leader it lost
// (shepherd in process; Curator and Kazoo through the fault endpoint the
// runner gives subprocess peers) and checks that a new leader came and that
// the old one was told first.
func TestW6(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and subprocess peers")
	}
	r := newRunner(t)
	for _, pc := range []struct {
		name string
		peer func(t *testing.T) bench.Peer
	}{
		{"shepherd", func(*testing.T) bench.Peer { return gopeers.Peer(gopeers.Shepherd()) }},
		{"curator", subprocess(bench.NewCurator)},
		{"kazoo", subprocess(bench.NewKazoo)},
	} {
		t.Run(pc.name, func(t *testing.T) {
			p := pc.peer(t)
			s := spec(bench.W6, 3, 1)
			rec := run(t, r, p, s)
			if got := rec.Metrics[bench.MLossFirst]; got != 1 {
				t.Errorf("old leader told first in %.2f of the crashes; want all", got)
			}
			if got := rec.Metrics[bench.MLatencyP50]; got < 1e6*s.SessionTimeout().Seconds()*0.5 {
				t.Errorf("a new leader %.0f µs after the crash: sooner than the session could expire", got)
			}
		})
	}
}

// TestTLS runs W1 for the Go peers on a TLS-only server: the runner hands
// the cluster's client configuration to the peers through the spec (the
// server has no plaintext port, so a run that did not use it would fail).
func TestTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper")
	}
	c := zktest.Start(t, 1, zktest.WithTLS(zktest.TLSConfig{}))
	r, err := bench.NewRunner(t.Context(), c, bench.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range []gopeers.Library{gopeers.Shepherd(), gopeers.GoZookeeper()} {
		t.Run(lib.Name, func(t *testing.T) {
			rec := run(t, r, gopeers.Peer(lib), spec(bench.W1, 1, 40))
			if rec.Spec.TLS == nil {
				t.Error("the spec carried no TLS configuration")
			}
			if rec.Metrics[bench.MOpsPerS] <= 0 || rec.Metrics[bench.MLatencyP50] <= 0 {
				t.Errorf("W1 over TLS: no throughput or latency in %v", rec.Metrics)
			}
		})
	}
}

// newRunner starts a standalone server for the test and a runner on it.
func newRunner(t *testing.T) *bench.Runner {
	t.Helper()
	r, err := bench.NewRunner(t.Context(), zktest.Start(t, 1), bench.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// subprocess starts a Java or Python peer for a subtest (skipped, with the
// reason, when its language or library is not installed), closed with it;
// its stderr is logged when the subtest fails.
func subprocess(mk func(context.Context, string) (*bench.Subprocess, error)) func(t *testing.T) bench.Peer {
	return func(t *testing.T) bench.Peer {
		p, err := mk(t.Context(), t.TempDir())
		if errors.Is(err, bench.ErrUnavailable) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := p.Close(); err != nil {
				t.Error(err)
			}
			if t.Failed() {
				b, _ := os.ReadFile(p.LogPath())
				t.Logf("%s's stderr:\n%s", p.Name(), b)
			}
		})
		return p
	}
}
