package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/session"
)

// TestYieldToPreferred: a leader with a preferred-leader window yields to
// a candidate of higher priority once it has been in line for the window
// (and not to one of equal priority); the yield is reported.
func TestYieldToPreferred(t *testing.T) {
	const window = 300 * time.Millisecond
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			path := uniquePath(t)
			g := newLedger()
			obs := &testutil.Recorder{}
			run(t, g, open(t, zk.Servers(), session.WithObserver(obs)), path, "a",
				with(m.opts, election.WithPriority(1), election.WithPreferredLeader(window))...)
			require.Equal(t, "a", g.wait(t, 10*time.Second))
			run(t, g, open(t, zk.Servers()), path, "same", with(m.opts, election.WithPriority(1))...)
			g.none(t, 2*window) // not better: no yield to it
			joined := time.Now()
			b := run(t, g, open(t, zk.Servers()), path, "b", with(m.opts, election.WithPriority(2))...)
			require.Equal(t, "b", g.wait(t, 10*time.Second))
			require.GreaterOrEqual(t, time.Since(joined), window, "yielded before the window")
			require.Eventually(t, func() bool { return len(obs.Events(observe.HandedOver, "")) == 1 }, 10*time.Second, 5*time.Millisecond)
			ev := obs.Events(observe.HandedOver, "")[0]
			require.Equal(t, "yield", ev.Reason)
			require.Equal(t, "handed_over", ev.Outcome)
			require.Equal(t, "b", ev.Successor)
			waitIn(t, b.e, 3)
			g.none(t, 2*window) // b has no one better: it stays
			g.check(t)
		})
	}
}

// TestYieldFlap: candidates of higher priority join and leave, some within
// the window, some after it. Every leader yields at most at the bounded
// rate: two yields are at least a window apart, and each went to a
// candidate that had been in line for the window.
func TestYieldFlap(t *testing.T) {
	const window = 250 * time.Millisecond
	path := uniquePath(t)
	g := newLedger()
	obs := &testutil.Recorder{}
	opts := func(p int) []election.Option {
		return []election.Option{election.WithPriority(p), election.WithPreferredLeader(window)}
	}
	base := run(t, g, open(t, zk.Servers(), session.WithObserver(obs)), path, "base", opts(1)...)
	require.Equal(t, "base", g.wait(t, 10*time.Second))
	joined := map[string]time.Time{}
	// How long each flapping candidate stays: the flap, part of the
	// fault (not a synchronisation).
	stays := []time.Duration{60, 400, 30, 120, 600, 10, 300, 80, 450, 20}
	for i, stay := range stays {
		id := string(rune('p' + i))
		s := open(t, zk.Servers(), session.WithObserver(obs))
		joined[id] = time.Now()
		r := run(t, g, s, path, id, opts(2+i%2)...)
		time.Sleep(stay * time.Millisecond) // how long it stays: the flapping under test
		r.stop()
	}
	waitIn(t, base.e, 1)
	g.check(t)
	var yields []time.Time
	for _, ev := range obs.Events(observe.HandedOver, "") {
		if ev.Reason != "yield" || ev.Outcome != "handed_over" {
			continue
		}
		// When the yield began: the event is reported once it is over.
		began := ev.Time.Add(-ev.Took)
		if len(yields) > 0 {
			require.GreaterOrEqual(t, began.Sub(yields[len(yields)-1]), window, "two yields within a window")
		}
		require.GreaterOrEqual(t, began.Sub(joined[ev.Successor]), window, "a yield to %s, in line for less than the window", ev.Successor)
		yields = append(yields, began)
	}
	require.NotEmpty(t, yields, "no yield at all (the flap has candidates that stay longer than the window)")
	t.Logf("%d candidates flapped; %d yields; leaders %v", len(stays), len(yields), g.history())
}

// TestHandOverOnStop: Run's candidates hand over when their ctx ends: to
// the best candidate, not the next in line; and, with a wait, to a better
// one that joins during it, leading meanwhile.
func TestHandOverOnStop(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			path := uniquePath(t)
			g := newLedger()
			a := run(t, g, open(t, zk.Servers()), path, "a", with(m.opts, election.HandOverOnStop(0))...)
			require.Equal(t, "a", g.wait(t, 10*time.Second))
			run(t, g, open(t, zk.Servers()), path, "b", m.opts...)
			c := run(t, g, open(t, zk.Servers()), path, "c", with(m.opts, election.WithPriority(1),
				election.HandOverOnStop(20*time.Second))...)
			waitIn(t, a.e, 3)
			a.stop()
			require.Equal(t, "c", g.wait(t, 10*time.Second), "the best, not the next in line")
			// c waits for a better candidate before it lets go, and leads
			// meanwhile.
			stopped := make(chan struct{})
			go func() { c.stop(); close(stopped) }()
			g.none(t, 300*time.Millisecond)
			require.True(t, c.e.IsLeader(), "it leads while it waits")
			run(t, g, open(t, zk.Servers()), path, "d", with(m.opts, election.WithPriority(2))...)
			require.Equal(t, "d", g.wait(t, 10*time.Second))
			select {
			case <-stopped:
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return after its handover")
			}
			g.check(t)
			require.Equal(t, []string{"a", "c", "d"}, g.history())
		})
	}
}

// TestProclaim: a leader's proclaimed value reaches followers without
// re-election: Observe, Leader and the OnLeader of candidates in line
// (right behind the leader, and further back); the term does not change.
func TestProclaim(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			path := uniquePath(t)
			ctx := testutil.Ctx(t, 30*time.Second)
			a, err := election.New(open(t, zk.Servers()), path, "a", with(m.opts, election.WithPriority(3))...)
			require.NoError(t, err)
			l, err := a.Campaign(ctx)
			require.NoError(t, err)
			seen := map[string]chan election.Leader{}
			for _, id := range []string{"b", "c"} {
				e, err := election.New(open(t, zk.Servers()), path, id, m.opts...)
				require.NoError(t, err)
				ch := make(chan election.Leader, 10)
				seen[id] = ch
				rctx, cancel := context.WithCancel(ctx)
				done := make(chan struct{})
				go func() {
					defer close(done)
					_ = e.Run(rctx, election.Callbacks{OnElected: func(ctx context.Context, _ election.Term) { <-ctx.Done() },
						OnLeader: func(l election.Leader) { ch <- l }})
				}()
				t.Cleanup(func() { cancel(); <-done })
				require.Equal(t, "a", recv(t, ch).ID)
			}
			obs, err := election.Observe(ctx, open(t, zk.Servers()), path)
			require.NoError(t, err)
			require.Equal(t, "", recv(t, obs).Value)
			require.NoError(t, l.Proclaim(ctx, "http://10.0.0.1:8080"))
			for id, ch := range seen {
				got := recv(t, ch)
				require.Equal(t, "http://10.0.0.1:8080", got.Value, "%s's OnLeader", id)
				require.Equal(t, l.Term(), got.Term)
				require.Equal(t, 3, got.Priority)
			}
			got := recv(t, obs)
			require.Equal(t, "http://10.0.0.1:8080", got.Value)
			require.Equal(t, l.Term(), got.Term)
			cur, err := a.Leader(ctx)
			require.NoError(t, err)
			require.Equal(t, "http://10.0.0.1:8080", cur.Value)
			require.NoError(t, l.Validate(ctx), "still leading, same term")
			require.NoError(t, l.Resign(ctx))
			require.ErrorIs(t, l.Proclaim(ctx, "x"), election.ErrLost)
		})
	}
}

// TestProclaimBeforeCurator: a fair leader whose next candidate is a
// Curator participant does not write its node (the latch would miss its
// deletion).
func TestProclaimBeforeCurator(t *testing.T) {
	path := uniquePath(t)
	ctx := testutil.Ctx(t, 30*time.Second)
	a, err := election.New(open(t, zk.Servers()), path, "a")
	require.NoError(t, err)
	l, err := a.Campaign(ctx)
	require.NoError(t, err)
	foreignLatch(t, path, "curator-1")
	require.ErrorIs(t, l.Proclaim(ctx, "v"), election.ErrForeignRecipe)
	require.NoError(t, l.Resign(ctx))
}

// recv receives from ch, failing after 10 s.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing received within 10s")
		var zero T
		return zero
	}
}
