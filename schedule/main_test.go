package schedule

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

var zkc *zktest.Cluster // the package's shared standalone server

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m, &zkc, 1))
}

// TestingServers is the shared server, for the package's examples.
func TestingServers() []string { return zkc.Servers() }

func uniquePath(t *testing.T) string { return testutil.UniquePath(t, "schedule-test") }

// run is one run of the job.
type run struct {
	id   string
	tick Tick
	at   time.Time // host monotonic, when the job started
}

// finish is one attempt to record a tick's end.
type finish struct {
	id  string
	rec Record
	err error
}

// book keeps what every candidate of a test did, on one clock.
type book struct {
	mu       sync.Mutex
	runs     []run
	finishes []finish
	started  chan run // every run, as it starts
}

func newBook() *book { return &book{started: make(chan run, 10000)} }

func (b *book) hooks(id string) hooks {
	return hooks{finished: func(r Record, err error) {
		b.mu.Lock()
		b.finishes = append(b.finishes, finish{id, r, err})
		b.mu.Unlock()
	}}
}

// job wraps fn (nil: return at once) so that each run is booked first.
func (b *book) job(id string, fn func(ctx context.Context, t Tick) error) func(ctx context.Context, t Tick) error {
	return func(ctx context.Context, t Tick) error {
		r := run{id, t, time.Now()}
		b.mu.Lock()
		b.runs = append(b.runs, r)
		b.mu.Unlock()
		b.started <- r
		if fn == nil {
			return nil
		}
		return fn(ctx, t)
	}
}

// waitTick waits until a run of tick n or later has started, and returns it.
func (b *book) waitTick(t *testing.T, n int64, d time.Duration) run {
	t.Helper()
	return b.waitRun(t, func(r run) bool { return r.tick.N >= n }, d)
}

// waitRun waits until a run for which ok holds has started, and returns it.
func (b *book) waitRun(t *testing.T, ok func(run) bool, d time.Duration) run {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case r := <-b.started:
			if ok(r) {
				return r
			}
		case <-deadline:
			t.Fatalf("no such run within %v; runs: %v", d, b.summary())
		}
	}
}

// counts is the number of runs of each tick.
func (b *book) counts() map[int64]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := map[int64]int{}
	for _, r := range b.runs {
		c[r.tick.N]++
	}
	return c
}

func (b *book) summary() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := ""
	for _, r := range b.runs {
		s += fmt.Sprintf(" %s:%d/%d", r.id, r.tick.N, r.tick.Attempt)
	}
	return s
}

// runsOf returns the runs (in order) of ticks >= from.
func (b *book) runsOf(from int64) []run {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []run
	for _, r := range b.runs {
		if r.tick.N >= from {
			out = append(out, r)
		}
	}
	return out
}

// checkFinishes fails the test if a tick's end was recorded twice; it
// returns each tick's end.
func (b *book) checkFinishes(t *testing.T) map[int64]finish {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	done := map[int64]finish{}
	for _, f := range b.finishes {
		if f.err != nil || f.rec.State != stateFinished { // an interruption (WithDrain) is no end
			continue
		}
		if prev, ok := done[f.rec.N]; ok {
			t.Errorf("tick %d finished twice: by %s (attempt %d) and %s (attempt %d)", f.rec.N,
				prev.id, prev.rec.Attempt, f.id, f.rec.Attempt)
		}
		done[f.rec.N] = f
	}
	return done
}

// exactlyOnce fails the test unless ticks from..to each ran exactly once.
func (b *book) exactlyOnce(t *testing.T, from, to int64) {
	t.Helper()
	c := b.counts()
	var bad []string
	for n := from; n <= to; n++ {
		if c[n] != 1 {
			bad = append(bad, fmt.Sprintf("tick %d ran %d times", n, c[n]))
		}
	}
	if len(bad) > 0 {
		keys := make([]int64, 0, len(c))
		for k := range c {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
		t.Fatalf("%v (ticks run: %v; runs:%s)", bad, keys, b.summary())
	}
}

// skippedTicks is the ticks the catch-up policy skipped at path, as rec saw
// them reported: ranges [from, to], in order.
func skippedTicks(rec *testutil.Recorder, path string) [][2]int64 {
	var out [][2]int64
	for _, ev := range rec.Events(observe.TicksSkipped, path) {
		out = append(out, [2]int64{ev.Tick - ev.Count + 1, ev.Tick})
	}
	return out
}

// cand runs one Schedule.Run in the background.
type cand struct {
	s      *Schedule
	sess   *session.Session
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, sess *session.Session, path, id string, every time.Duration,
	job func(ctx context.Context, t Tick) error, opts ...Option) *cand {
	t.Helper()
	s, err := New(sess, path, id, every, opts...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	c := &cand{s: s, sess: sess, cancel: cancel, done: make(chan error, 1)}
	go func() { c.done <- s.Run(ctx, job) }()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// stop cancels Run and waits for it (bounded).
func (c *cand) stop(t *testing.T) error {
	t.Helper()
	c.cancel()
	select {
	case err := <-c.done:
		c.done <- err // later stops return at once
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of its ctx's end")
		return nil
	}
}

// serverNow is the ZooKeeper server's clock now: the mtime of a write.
func serverNow(t *testing.T, sess *session.Session, path string) time.Time {
	t.Helper()
	ep, err := sess.Wait(testutil.Ctx(t, 10*time.Second))
	require.NoError(t, err)
	p := sess.Path(path + "-clock")
	st, err := ep.Conn().Set(p, nil, -1)
	if errors.Is(err, gozk.ErrNoNode) {
		_, err = ep.Conn().Create(p, nil, 0, sess.ACL())
		require.NoError(t, err)
		st, err = ep.Conn().Set(p, nil, -1)
	}
	require.NoError(t, err)
	return time.UnixMilli(st.Mtime)
}

// record reads the schedule's record and its node's ctime (the epoch).
func record(t *testing.T, s *Schedule) (Record, time.Time) {
	t.Helper()
	r, err := s.Record(testutil.Ctx(t, 10*time.Second))
	require.NoError(t, err)
	return r, time.UnixMilli(r.Epoch)
}

// skewed is a host clock off by d.
func skewed(d time.Duration) func() time.Time { return func() time.Time { return time.Now().Add(d) } }
