package election_test

// What the tests of priorities and handovers (issue 38) share: a ledger of
// leaderships on one clock, candidates under Run, and an observer of
// handover events.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/session"
)

// ledger records every leadership on one clock: who, its term, when it
// began and when its ctx was cancelled; a leadership that begins while
// another's ctx is live is a violation (two leaders).
type ledger struct {
	mu         sync.Mutex
	cur        context.Context
	curID      string
	order      []string
	terms      []election.Term
	began      []time.Time
	ended      []time.Time // zero while live
	violations []string
	elected    chan string
}

func newLedger() *ledger { return &ledger{elected: make(chan string, 1000)} }

func (g *ledger) onElected(id string, ctx context.Context, term election.Term) {
	now := time.Now()
	g.mu.Lock()
	if g.cur != nil && g.cur.Err() == nil {
		g.violations = append(g.violations, fmt.Sprintf("%s elected (term %v) while %s still leads", id, term, g.curID))
	}
	i := len(g.order)
	g.cur, g.curID = ctx, id
	g.order = append(g.order, id)
	g.terms = append(g.terms, term)
	g.began = append(g.began, now)
	g.ended = append(g.ended, time.Time{})
	g.mu.Unlock()
	context.AfterFunc(ctx, func() {
		g.mu.Lock()
		g.ended[i] = time.Now()
		g.mu.Unlock()
	})
	g.elected <- id
}

// wait returns the next candidate elected, failing after d.
func (g *ledger) wait(t *testing.T, d time.Duration) string {
	t.Helper()
	select {
	case id := <-g.elected:
		return id
	case <-time.After(d):
		g.mu.Lock()
		defer g.mu.Unlock()
		t.Fatalf("no leader elected within %v (so far: %v)", d, g.order)
		return ""
	}
}

// none checks that no one more is elected within d (a bound on what did
// not happen: the test's own length).
func (g *ledger) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case id := <-g.elected:
		t.Fatalf("%s elected, unexpected", id)
	case <-time.After(d):
	}
}

// check fails on a violation, or terms that do not grow.
func (g *ledger) check(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	require.Empty(t, g.violations)
	for i := 1; i < len(g.terms); i++ {
		require.Greater(t, g.terms[i], g.terms[i-1], "terms must grow: %v", g.order)
	}
}

// history returns who was elected, in order.
func (g *ledger) history() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.order)
}

// gap is the time from the end of leadership i-1 to the start of i.
func (g *ledger) gap(i int) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.began[i].Sub(g.ended[i-1])
}

// runner is one candidate under Run.
type runner struct {
	id     string
	e      *election.Election
	sess   *session.Session
	cancel context.CancelFunc
	done   chan error
}

// run starts a candidate under Run that leads until its ctx ends, telling
// g, and returns once its node is in line: candidates started one after
// another stand in the line in that order (tests name a candidate's
// predecessor by it). It is stopped when the test ends.
func run(t *testing.T, g *ledger, sess *session.Session, path, id string, opts ...election.Option) *runner {
	t.Helper()
	e, err := election.New(sess, path, id, opts...)
	require.NoError(t, err)
	before := inLine(e, id)
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{id: id, e: e, sess: sess, cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- e.Run(ctx, election.Callbacks{
			OnElected: func(ctx context.Context, term election.Term) {
				g.onElected(id, ctx, term)
				<-ctx.Done()
			},
		})
	}()
	t.Cleanup(r.stop)
	require.Eventually(t, func() bool { return inLine(e, id) > before }, 20*time.Second, 5*time.Millisecond,
		"candidate %s never stood in line", id)
	return r
}

// inLine counts the participants named id (none while the election's path
// is missing).
func inLine(e *election.Election, id string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ps, err := e.Participants(ctx)
	if err != nil {
		return 0
	}
	n := 0
	for _, p := range ps {
		if p.ID == id {
			n++
		}
	}
	return n
}

// stop ends Run (a handover on stop, with HandOverOnStop) and waits.
func (r *runner) stop() {
	r.cancel()
	err := <-r.done
	r.done <- err // later stops return at once
}

// waitIn waits until n candidates take part (Participants, from e).
func waitIn(t *testing.T, e *election.Election, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ps, err := e.Participants(ctx)
		return err == nil && len(ps) == n
	}, 20*time.Second, 5*time.Millisecond, "%d candidates never took part", n)
}

// modes are the election's two layouts, for subtests.
var modes = []struct {
	name string
	opts []election.Option
}{
	{"fair", nil},
	{"nonfair", []election.Option{election.NonFair()}},
}

// with is opts and more, in a new slice.
func with(opts []election.Option, more ...election.Option) []election.Option {
	return append(slices.Clone(opts), more...)
}
