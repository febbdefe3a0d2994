package election_test

import (
	"context"
	"errors"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/internal/wire/zkwire"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// TestHandOverSkipsTheLine: a leader hands over to a named candidate
// behind others (the line's last, in the fair layout): that one leads next,
// no other in between, with a higher term; three times in a row, in both
// layouts. The candidates passed over are still candidates.
func TestHandOverSkipsTheLine(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			path := uniquePath(t)
			g := newLedger()
			byID := map[string]*runner{}
			for _, id := range []string{"a", "b", "c", "d"} {
				byID[id] = run(t, g, open(t, zk.Servers()), path, id, m.opts...)
				if id == "a" {
					require.Equal(t, "a", g.wait(t, 10*time.Second))
				}
				waitIn(t, byID["a"].e, len(byID))
			}
			ctx := testutil.Ctx(t, time.Minute)
			leader := "a"
			for _, next := range []string{"d", "b", "c"} {
				require.NoError(t, byID[leader].e.HandOver(ctx, next), "%s to %s", leader, next)
				require.Equal(t, next, g.wait(t, 10*time.Second), "%s handed over to %s", leader, next)
				waitIn(t, byID[next].e, 4) // the old leader back in line
				leader = next
			}
			g.check(t)
			require.Equal(t, []string{"a", "d", "b", "c"}, g.history())
			ps, err := byID["c"].e.Participants(ctx)
			require.NoError(t, err)
			require.Len(t, ps, 4)
		})
	}
}

// TestHandOverBest: HandOver to "" picks the candidate of highest
// priority, wherever it stands; its attributes show in Participants and
// Leader.
func TestHandOverBest(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			path := uniquePath(t)
			g := newLedger()
			a := run(t, g, open(t, zk.Servers()), path, "a", with(m.opts, election.WithPriority(1))...)
			require.Equal(t, "a", g.wait(t, 10*time.Second))
			run(t, g, open(t, zk.Servers()), path, "b", with(m.opts, election.WithPriority(3))...)
			run(t, g, open(t, zk.Servers()), path, "c", with(m.opts, election.WithPriority(5),
				election.WithAttributes(map[string]string{"version": "2.0.0", "zone": "eu-1"}))...)
			run(t, g, open(t, zk.Servers()), path, "d", with(m.opts, election.WithPriority(2))...)
			waitIn(t, a.e, 4)
			ctx := testutil.Ctx(t, 30*time.Second)
			ps, err := a.e.Participants(ctx)
			require.NoError(t, err)
			prios := map[string]int{}
			for _, p := range ps {
				prios[p.ID] = p.Priority
				if p.ID == "c" {
					require.Equal(t, map[string]string{"version": "2.0.0", "zone": "eu-1"}, p.Attributes())
				}
			}
			require.Equal(t, map[string]int{"a": 1, "b": 3, "c": 5, "d": 2}, prios)
			require.NoError(t, a.e.HandOver(ctx, ""))
			require.Equal(t, "c", g.wait(t, 10*time.Second))
			l, err := a.e.Leader(ctx)
			require.NoError(t, err)
			require.Equal(t, "c", l.ID)
			require.Equal(t, 5, l.Priority)
			require.Equal(t, "2.0.0", l.Attributes()["version"])
			g.check(t)
		})
	}
}

// TestHandOverErrors: a handover to no one keeps leadership; one by a
// candidate that does not lead is refused; bad options fail New.
func TestHandOverErrors(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			path := uniquePath(t)
			g := newLedger()
			a := run(t, g, open(t, zk.Servers()), path, "a", m.opts...)
			require.Equal(t, "a", g.wait(t, 10*time.Second))
			ctx := testutil.Ctx(t, 30*time.Second)
			require.ErrorIs(t, a.e.HandOver(ctx, ""), election.ErrNoCandidate, "alone")
			b := run(t, g, open(t, zk.Servers()), path, "b", m.opts...)
			waitIn(t, a.e, 2)
			require.ErrorIs(t, a.e.HandOver(ctx, "nobody"), election.ErrNoCandidate)
			require.ErrorIs(t, a.e.HandOver(ctx, "a"), election.ErrNoCandidate, "to itself")
			require.ErrorIs(t, b.e.HandOver(ctx, "a"), election.ErrNotLeader)
			require.True(t, a.e.IsLeader(), "leadership kept")
			g.none(t, 100*time.Millisecond)
			pending, err := election.PendingHandOver(ctx, a.sess, path)
			require.NoError(t, err)
			require.Nil(t, pending)
			g.check(t)
		})
	}
	s := open(t, zk.Servers())
	for _, o := range []election.Option{election.WithHandOverTimeout(0), election.HandOverOnStop(-1),
		election.WithPreferredLeader(0), election.WithAttributes(map[string]string{"": "x"}),
		election.WithAttributes(map[string]string{"k": "\xff"})} {
		_, err := election.New(s, "/ok", "a", o)
		require.ErrorIs(t, err, election.ErrInvalidArgument)
	}
}

// TestHandOverCampaign: latch-style, Leadership.HandOver ends the
// leadership as a resign does (Context's cause ErrHandedOver, which is a
// release; Lost stays open; the candidate leaves the election), and the
// named candidate is elected.
func TestHandOverCampaign(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			path := uniquePath(t)
			ctx := testutil.Ctx(t, 30*time.Second)
			a, err := election.New(open(t, zk.Servers()), path, "a", m.opts...)
			require.NoError(t, err)
			l, err := a.Campaign(ctx)
			require.NoError(t, err)
			var bs []*election.Election
			won := make(chan string, 2)
			for _, id := range []string{"b", "c"} {
				e, err := election.New(open(t, zk.Servers()), path, id, m.opts...)
				require.NoError(t, err)
				bs = append(bs, e)
				go func() {
					if _, err := e.Campaign(ctx); err == nil {
						won <- id
					}
				}()
			}
			waitIn(t, a, 3)
			require.NoError(t, l.HandOver(ctx, "c"))
			require.Equal(t, "c", <-won)
			require.ErrorIs(t, context.Cause(l.Context()), election.ErrHandedOver)
			require.ErrorIs(t, context.Cause(l.Context()), recipe.ErrReleased)
			select {
			case <-l.Lost():
				t.Fatal("a handover is no loss")
			default:
			}
			require.False(t, a.IsLeader())
			waitIn(t, bs[1], 2) // a left the election; b waits
			for _, e := range bs {
				_ = e.Resign(ctx)
			}
		})
	}
}

// foreignLatch enters the line at path as Curator's LeaderLatch names its
// nodes (a dashed UUID: not shepherd's), with data, through a raw session,
// and returns its node's name.
func foreignLatch(t *testing.T, path, data string) string {
	t.Helper()
	s := open(t, zk.Servers())
	ep, err := s.Wait(testutil.Ctx(t, 10*time.Second))
	require.NoError(t, err)
	p, err := ep.Conn().Create(path+"/"+line.ProtectedPrefix("0f1e2d3c-4b5a-4697-8877-665544332211", line.KindLatch),
		[]byte(data), gozk.FlagEphemeral|gozk.FlagSequence, gozk.WorldACL(gozk.PermAll))
	require.NoError(t, err)
	return p[len(path)+1:]
}

// TestHandOverCurator: a Curator LeaderLatch participant (its node named
// as Curator names it) between the leader and the successor cannot be
// asked to step aside: the handover is refused, leadership kept, nothing
// left behind. Behind the successor, it changes nothing and its watch on
// its predecessor never sees a data change; as the successor, it leads
// (heads the line) once the shepherd candidates before it have stepped
// aside.
func TestHandOverCurator(t *testing.T) {
	ctx := testutil.Ctx(t, time.Minute)
	t.Run("between", func(t *testing.T) {
		path := uniquePath(t)
		g := newLedger()
		a := run(t, g, open(t, zk.Servers()), path, "a")
		require.Equal(t, "a", g.wait(t, 10*time.Second))
		foreignLatch(t, path, "curator-1")
		run(t, g, open(t, zk.Servers()), path, "d")
		waitIn(t, a.e, 3)
		err := a.e.HandOver(ctx, "d")
		require.ErrorIs(t, err, election.ErrHandOverRefused)
		require.Contains(t, err.Error(), "curator")
		require.True(t, a.e.IsLeader())
		pending, err := election.PendingHandOver(ctx, a.sess, path)
		require.NoError(t, err)
		require.Nil(t, pending)
		g.none(t, 100*time.Millisecond)
	})
	t.Run("behind", func(t *testing.T) {
		path := uniquePath(t)
		g := newLedger()
		a := run(t, g, open(t, zk.Servers()), path, "a")
		require.Equal(t, "a", g.wait(t, 10*time.Second))
		run(t, g, open(t, zk.Servers()), path, "b")
		d := run(t, g, open(t, zk.Servers()), path, "d")
		waitIn(t, a.e, 3)
		f := foreignLatch(t, path, "curator-1")
		waitIn(t, a.e, 4)
		// As Curator's latch waits: a data watch on its predecessor, d.
		w := open(t, zk.Servers())
		ep, err := w.Wait(ctx)
		require.NoError(t, err)
		ps, err := d.e.Participants(ctx)
		require.NoError(t, err)
		require.Equal(t, path+"/"+f, ps[3].Node)
		require.Equal(t, "d", ps[2].ID, "the latch's predecessor")
		_, _, watch, err := ep.Conn().GetW(ps[2].Node)
		require.NoError(t, err)
		require.NoError(t, a.e.HandOver(ctx, "d"))
		require.Equal(t, "d", g.wait(t, 10*time.Second))
		d.stop() // its deletion wakes the latch
		select {
		case ev := <-watch:
			require.Equal(t, gozk.EventNodeDeleted, ev.Type, "the latch's predecessor only ever goes")
		case <-time.After(10 * time.Second):
			t.Fatal("the latch never heard of its predecessor")
		}
	})
	t.Run("successor", func(t *testing.T) {
		path := uniquePath(t)
		g := newLedger()
		a := run(t, g, open(t, zk.Servers()), path, "a")
		require.Equal(t, "a", g.wait(t, 10*time.Second))
		run(t, g, open(t, zk.Servers()), path, "b")
		waitIn(t, a.e, 2)
		foreignLatch(t, path, "curator-1")
		waitIn(t, a.e, 3)
		require.NoError(t, a.e.HandOver(ctx, "curator-1"))
		l, err := a.e.Leader(ctx)
		require.NoError(t, err)
		require.Equal(t, "curator-1", l.ID)
		g.none(t, 100*time.Millisecond) // b stepped aside: not elected
	})
}

// TestHandOverWayBound: a candidate between the leader and the successor
// that does not step aside (here a node named as shepherd names its own,
// of no shepherd process: an older shepherd, or one cut off) makes the
// handover fail after the handover timeout, leadership kept and the record
// removed.
func TestHandOverWayBound(t *testing.T) {
	path := uniquePath(t)
	g := newLedger()
	const bound = 400 * time.Millisecond
	a := run(t, g, open(t, zk.Servers()), path, "a", election.WithHandOverTimeout(bound))
	require.Equal(t, "a", g.wait(t, 10*time.Second))
	s := open(t, zk.Servers())
	ep, err := s.Wait(testutil.Ctx(t, 10*time.Second))
	require.NoError(t, err)
	_, err = ep.Conn().Create(path+"/"+line.ProtectedPrefix(line.NewGUID(), line.KindLatch), []byte("old"),
		gozk.FlagEphemeral|gozk.FlagSequence, gozk.WorldACL(gozk.PermAll))
	require.NoError(t, err)
	run(t, g, open(t, zk.Servers()), path, "d")
	waitIn(t, a.e, 3)
	ctx := testutil.Ctx(t, 30*time.Second)
	began := time.Now()
	err = a.e.HandOver(ctx, "d")
	require.ErrorIs(t, err, election.ErrHandOverRefused)
	require.GreaterOrEqual(t, time.Since(began), bound, "it waited for the way")
	require.True(t, a.e.IsLeader())
	pending, err := election.PendingHandOver(ctx, a.sess, path)
	require.NoError(t, err)
	require.Nil(t, pending)
	g.none(t, 100*time.Millisecond)
}

// TestOperatorHandOver: an operator's request (RequestHandOver, as
// `shepherd handover`) moves leadership to the candidate it names, or the
// best one, and leaves no request behind.
func TestOperatorHandOver(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			path := uniquePath(t)
			g := newLedger()
			run(t, g, open(t, zk.Servers()), path, "a", m.opts...)
			require.Equal(t, "a", g.wait(t, 10*time.Second))
			run(t, g, open(t, zk.Servers()), path, "b", with(m.opts, election.WithPriority(2))...)
			c := run(t, g, open(t, zk.Servers()), path, "c", m.opts...)
			waitIn(t, c.e, 3)
			op := open(t, zk.Servers())
			ctx := testutil.Ctx(t, 30*time.Second)
			l, err := election.RequestHandOver(ctx, op, path, "c")
			require.NoError(t, err)
			require.Equal(t, "c", l.ID)
			require.Equal(t, "c", g.wait(t, 10*time.Second))
			waitIn(t, c.e, 3)
			l, err = election.RequestHandOver(ctx, op, path, "")
			require.NoError(t, err)
			require.Equal(t, "b", l.ID, "the best")
			require.Equal(t, "b", g.wait(t, 10*time.Second))
			_, err = election.RequestHandOver(ctx, op, path, "nobody")
			require.ErrorIs(t, err, election.ErrNoCandidate)
			require.Eventually(t, func() bool {
				p, err := election.PendingHandOver(ctx, op, path)
				return err == nil && p == nil
			}, 10*time.Second, 5*time.Millisecond, "a request left behind")
			g.check(t)
		})
	}
	_, err := election.RequestHandOver(testutil.Ctx(t, 10*time.Second), open(t, zk.Servers()), uniquePath(t), "")
	require.True(t, errors.Is(err, election.ErrNoLeader), "%v", err)
}

// TestOperatorRequestSparesTheNextLeader: an operator's request writes the
// node of the leader it read (in the multi-op that makes the record), never
// a later leader's. Held on the wire between its reads and that multi-op
// while the leader resigns and another candidate leads (in the non-fair
// layout, in a node of the same name and version), it finds that
// leadership ended and asks again; the next leader's node keeps its own
// data. Without the check of the path's version (which a later grant of
// the name writes) and of the leader's term, the next leader's node was
// written with the old leader's data (it said "a").
func TestOperatorRequestSparesTheNextLeader(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			path := uniquePath(t)
			g := newLedger()
			a := run(t, g, open(t, zk.Servers()), path, "a", m.opts...)
			require.Equal(t, "a", g.wait(t, 10*time.Second))
			sessions := map[string]*session.Session{"a": a.sess}
			for _, id := range []string{"b", "c"} {
				sessions[id] = run(t, g, open(t, zk.Servers()), path, id, m.opts...).sess
			}
			gate := testutil.NewFrameGate(func(op int32, _ string) bool { return op == zkwire.OpMulti })
			op := open(t, zk.Servers(), session.WithDialer(gate.Dial))
			t.Cleanup(gate.Release) // before the session's close, if the test failed first
			ctx := testutil.Ctx(t, 30*time.Second)
			gate.Arm()
			done := make(chan error, 1)
			go func() {
				_, err := election.RequestHandOver(ctx, op, path, "c")
				done <- err
			}()
			select {
			case <-gate.Held(): // the leader's node read; the multi-op not sent
			case <-ctx.Done():
				t.Fatal("the request was never sent")
			}
			a.stop()
			next := g.wait(t, 10*time.Second)
			gate.Release()
			select {
			case err := <-done:
				if next == "c" {
					require.ErrorIs(t, err, election.ErrNoCandidate, "c leads already: never the leader itself")
				} else {
					require.NoError(t, err)
					require.Equal(t, "c", g.wait(t, 10*time.Second))
				}
			case <-ctx.Done():
				t.Fatal("RequestHandOver never returned")
			}
			leaders, err := election.Observe(ctx, open(t, zk.Servers()), path)
			require.NoError(t, err)
			l := <-leaders
			require.Equal(t, sessions[l.ID].SessionID(), l.SessionID, "the leader's node says %q, but is session 0x%x's", l.ID, l.SessionID)
			g.check(t)
		})
	}
}

// TestOperatorHandOverAfterReconnect: a leader watches the election's record
// in the connection it has (one watch, its event dispatched on the session's
// event path); when the connection drops and the session comes back, the
// leader, paused then resumed, watches it again in the new connection, so an
// operator's request made after that still reaches it.
func TestOperatorHandOverAfterReconnect(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			path := uniquePath(t)
			p, err := zktest.NewProxy(zk.Servers()...)
			require.NoError(t, err)
			t.Cleanup(func() { p.Close() })
			ctx := testutil.Ctx(t, 60*time.Second)
			sa := open(t, p.Addrs(), session.WithSessionTimeout(10*time.Second))
			a, err := election.New(sa, path, "a", with(m.opts, election.WithDisconnectPolicy(session.PauseOnDisconnect))...)
			require.NoError(t, err)
			l, err := a.Campaign(ctx)
			require.NoError(t, err)
			t.Cleanup(func() { _ = l.Resign(context.Background()) })
			g := newLedger()
			run(t, g, open(t, zk.Servers()), path, "b", m.opts...)
			waitIn(t, a, 2)

			// The leader's record watch is set in the first connection;
			// that connection drops, and the session comes back.
			sid := sa.SessionID()
			paused := l.Paused()
			p.Sever()
			select {
			case <-paused:
			case <-ctx.Done():
				t.Fatal("the leadership never paused")
			}
			_, err = sa.Wait(ctx)
			require.NoError(t, err)
			require.Equal(t, sid, sa.SessionID(), "the same session")
			require.NoError(t, l.Gate(ctx), "the leadership resumed")

			op := open(t, zk.Servers())
			_, err = election.RequestHandOver(ctx, op, path, "b")
			require.NoError(t, err)
			require.Equal(t, "b", g.wait(t, 20*time.Second), "the request reached the leader")
			require.ErrorIs(t, context.Cause(l.Context()), election.ErrHandedOver)
			g.check(t)
		})
	}
}
