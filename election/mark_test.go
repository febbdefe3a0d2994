package election_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// The election's handoff marks (line.AwaitOptions.MarkFor): a leader that
// waited marks its node when the candidate after it is shepherd's, which is
// then elected by the node's deletion alone. These tests pin what makes it
// safe next to Curator's LeaderLatch, which acts only on its predecessor's
// deletion: a data change must never reach a candidate that is not
// shepherd's.

// campaigner is one Campaign running in the background.
type campaigner struct {
	e      *election.Election
	s      *session.Session
	cancel context.CancelFunc
	got    chan struct{}
	l      *election.Leadership
	err    error
	at     time.Time
}

// queueCampaign starts e's Campaign in the background and waits until it
// watches its predecessor (its session watches a line node).
func queueCampaign(t *testing.T, ctx context.Context, s *session.Session, e *election.Election) *campaigner {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	c := &campaigner{e: e, s: s, cancel: cancel, got: make(chan struct{})}
	go func() {
		c.l, c.err = e.Campaign(ctx)
		c.at = time.Now()
		close(c.got)
	}()
	t.Cleanup(cancel)
	awaitInLine(t, s, 1)
	return c
}

func (c *campaigner) elected(t *testing.T) *election.Leadership {
	t.Helper()
	select {
	case <-c.got:
	case <-time.After(10 * time.Second):
		t.Fatal("not elected within 10s")
	}
	require.NoError(t, c.err)
	return c.l
}

func (c *campaigner) done() bool {
	select {
	case <-c.got:
		return true
	default:
		return false
	}
}

// candidates makes n elections on path, each on a session of its own.
func candidates(t *testing.T, path string, n int) ([]*election.Election, []*session.Session) {
	es, ss := make([]*election.Election, n), make([]*session.Session, n)
	for i := range es {
		ss[i] = open(t, zk.Servers())
		e, err := election.New(ss[i], path, fmt.Sprintf("c%d", i))
		require.NoError(t, err)
		es[i] = e
	}
	return es, ss
}

// nodeOf is the node of the candidate whose id is id (its data).
func nodeOf(t *testing.T, s *session.Session, path, id string) string {
	t.Helper()
	ep, err := s.Wait(testutil.Ctx(t, 5*time.Second))
	require.NoError(t, err)
	for _, n := range testutil.Children(t, s, path) {
		data, _, err := ep.Conn().Get(s.Path(path) + "/" + n)
		if err == nil && string(data) == id {
			return s.Path(path) + "/" + n
		}
	}
	t.Fatalf("no node of %q under %s", id, path)
	return ""
}

// latch is a candidate's node made the way Curator's LeaderLatch makes it
// (protected, EPHEMERAL_SEQUENTIAL, "latch-", a dashed UUID for guid, the
// id as data), in its own session; it watches a node the way LeaderLatch
// does (getData with a one-shot watcher).
type latch struct {
	s    *session.Session
	node string
}

func curatorLatch(t *testing.T, path string) *latch {
	t.Helper()
	s := open(t, zk.Servers())
	ep, err := s.Wait(testutil.Ctx(t, 5*time.Second))
	require.NoError(t, err)
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	uuid := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	name := line.ProtectedPrefix(uuid, recipe.KindLatch)
	require.False(t, line.Name{GUID: uuid}.Shepherd(), "a Curator guid taken for shepherd's")
	p, err := ep.Conn().Create(s.Path(path)+"/"+name, []byte("curator"), gozk.FlagEphemeral|gozk.FlagSequence, gozk.WorldACL(gozk.PermAll))
	require.NoError(t, err)
	return &latch{s: s, node: p}
}

func (l *latch) watch(t *testing.T, p string) <-chan gozk.Event {
	t.Helper()
	ep, err := l.s.Wait(testutil.Ctx(t, 5*time.Second))
	require.NoError(t, err)
	_, _, ch, err := ep.Conn().GetW(p)
	require.NoError(t, err)
	return ch
}

// quietXid waits until session s has sent no request for a while and
// returns the xid of its last one.
func quietXid(t *testing.T, s *session.Session) int64 {
	t.Helper()
	ep, err := s.Wait(testutil.Ctx(t, 5*time.Second))
	require.NoError(t, err)
	last := testutil.LastXid(t, zk, 0, ep.SessionID())
	tick := time.NewTicker(150 * time.Millisecond) // the quiet it waits for
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		<-tick.C
		x := testutil.LastXid(t, zk, 0, ep.SessionID())
		if x == last {
			return x
		}
		last = x
	}
	t.Fatal("the session never went quiet")
	return 0
}

// TestMarkedHandoffSendsNothing: a leader that waited, with a shepherd
// candidate after it, marks its node; that candidate, told of the mark,
// lists the line once (to learn its own successor) while the leader leads
// (its second watch on the leader's node, a child watch, fires only at the
// deletion and outlives the mark: no GetW again), and is then elected on the deletion without sending
// anything: the handoff is the resignation's delete and one notification.
// Counted by the server; without the mark the new leader lists the line
// after the deletion (one request on the handoff's path).
func TestMarkedHandoffSendsNothing(t *testing.T) {
	path := uniquePath(t)
	ctx := testutil.Ctx(t, 60*time.Second)
	es, ss := candidates(t, path, 4)
	lx, err := es[0].Campaign(ctx) // at the head at once: never marks
	require.NoError(t, err)
	a := queueCampaign(t, ctx, ss[1], es[1])
	b := queueCampaign(t, ctx, ss[2], es[2])
	c := queueCampaign(t, ctx, ss[3], es[3])
	cx := quietXid(t, ss[3])

	require.NoError(t, lx.Resign(ctx))
	la := a.elected(t) // its predecessor was the head: no listing, so it knows no successor
	require.Equal(t, int32(0), testutil.Version(t, ss[0], nodeOf(t, ss[0], path, "c1")), "a leader that knows no successor marked")
	require.NoError(t, la.Resign(ctx))
	lb := b.elected(t) // listed [b, c]: c is shepherd's
	nb := nodeOf(t, ss[0], path, "c2")
	require.Eventually(t, func() bool { return testutil.Version(t, ss[0], nb) == 1 }, 5*time.Second, 2*time.Millisecond,
		"the leader that waited did not mark its node")
	before := quietXid(t, ss[3])
	require.Equal(t, cx+1, before, "c, told of the mark, should list once (and not watch again)")
	require.False(t, c.done())

	resigned := time.Now()
	require.NoError(t, lb.Resign(ctx))
	lc := c.elected(t)
	require.True(t, c.at.After(resigned))
	// Once elected (not before: the handoff itself costs it nothing), the
	// leadership watches its own node (hold/ownwatch.go): one request.
	require.Equal(t, before+1, quietXid(t, ss[3]), "the new leader sent a request to be elected")
	require.NoError(t, lc.Resign(ctx))
}

// TestNoMarkBeforeACuratorCandidate: when the candidate after the leader is
// a Curator LeaderLatch's, the leader does not mark: that latch's one-shot
// watch must see the deletion, not a data change it would ignore (and then
// wait for ever).
func TestNoMarkBeforeACuratorCandidate(t *testing.T) {
	path := uniquePath(t)
	ctx := testutil.Ctx(t, 60*time.Second)
	es, ss := candidates(t, path, 3)
	lx, err := es[0].Campaign(ctx)
	require.NoError(t, err)
	a := queueCampaign(t, ctx, ss[1], es[1])
	b := queueCampaign(t, ctx, ss[2], es[2])
	f := curatorLatch(t, path)
	nb := nodeOf(t, ss[0], path, "c2")
	fw := f.watch(t, nb)

	require.NoError(t, lx.Resign(ctx))
	la := a.elected(t)
	require.NoError(t, la.Resign(ctx))
	lb := b.elected(t) // listed [b, f]
	unmarkedUntilResigned(t, ctx, ss[0], lb, nb, fw)
}

// unmarkedUntilResigned checks what a Curator latch watching the node of
// leader l sees: nothing while l leads (no data change to spend its one-shot
// watch on), then the node's deletion once l resigns.
func unmarkedUntilResigned(t *testing.T, ctx context.Context, s *session.Session, l *election.Leadership, node string, fw <-chan gozk.Event) {
	t.Helper()
	require.Never(t, func() bool { return len(fw) > 0 }, 300*time.Millisecond, 5*time.Millisecond,
		"the Curator candidate's watch on the leader fired while it leads")
	require.Equal(t, int32(0), testutil.Version(t, s, node), "the leader marked its node before a Curator candidate")
	require.NoError(t, l.Resign(ctx))
	deleted(t, fw)
}

// deleted waits for watch fw to report its node's deletion.
func deleted(t *testing.T, fw <-chan gozk.Event) {
	t.Helper()
	select {
	case ev := <-fw:
		require.Equal(t, gozk.EventNodeDeleted, ev.Type)
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher was not told of the node's deletion")
	}
}

// TestMarkChecksTheSuccessorIsThere: a candidate learns its successor (a
// shepherd candidate) while it waits; that successor then leaves, and the
// Curator candidate behind it now watches our candidate. Elected, our
// candidate must not mark on the strength of what it learned: the mark is
// a multi that checks the successor is still there, and fails.
func TestMarkChecksTheSuccessorIsThere(t *testing.T) {
	path := uniquePath(t)
	ctx := testutil.Ctx(t, 60*time.Second)
	es, ss := candidates(t, path, 5) // x, a, l, m, s
	lx, err := es[0].Campaign(ctx)
	require.NoError(t, err)
	a := queueCampaign(t, ctx, ss[1], es[1])
	l := queueCampaign(t, ctx, ss[2], es[2])
	m := queueCampaign(t, ctx, ss[3], es[3])
	s := queueCampaign(t, ctx, ss[4], es[4])
	f := curatorLatch(t, path)
	ns, nm, nl := nodeOf(t, ss[0], path, "c4"), nodeOf(t, ss[0], path, "c3"), nodeOf(t, ss[0], path, "c2")
	fw := f.watch(t, ns)
	mx := quietXid(t, ss[3])

	require.NoError(t, lx.Resign(ctx))
	la := a.elected(t)
	require.NoError(t, la.Resign(ctx))
	ll := l.elected(t) // listed [l, m, s, f]: marks before m
	require.Eventually(t, func() bool { return testutil.Version(t, ss[0], nl) == 1 }, 5*time.Second, 2*time.Millisecond)
	require.Equal(t, mx+1, quietXid(t, ss[3]), "m, told of the mark, should list once (learning s), and not watch again")

	// s leaves; the Curator candidate, told, watches m.
	s.cancel()
	<-s.got
	deleted(t, fw)
	fw = f.watch(t, nm)

	require.NoError(t, ll.Resign(ctx))
	lm := m.elected(t) // knew s, which has left
	unmarkedUntilResigned(t, ctx, ss[0], lm, nm, fw)
}

// TestMarkedLeaderExpires: a leader that marked its node and then lost its
// session (it never deletes it): the candidate behind it is elected once
// the server removes the node, after the old leader was told, and not
// before.
func TestMarkedLeaderExpires(t *testing.T) {
	path := uniquePath(t)
	ctx := testutil.Ctx(t, 60*time.Second)
	es, ss := candidates(t, path, 3)
	p, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	sl := open(t, p.Addrs(), session.WithSessionTimeout(4*time.Second))
	el, err := election.New(sl, path, "l")
	require.NoError(t, err)

	lx, err := es[0].Campaign(ctx)
	require.NoError(t, err)
	a := queueCampaign(t, ctx, ss[1], es[1])
	l := queueCampaign(t, ctx, sl, el)
	b := queueCampaign(t, ctx, ss[2], es[2])
	require.NoError(t, lx.Resign(ctx))
	la := a.elected(t)
	require.NoError(t, la.Resign(ctx))
	ll := l.elected(t)
	nl := nodeOf(t, ss[0], path, "l")
	require.Eventually(t, func() bool { return testutil.Version(t, ss[0], nl) == 1 }, 5*time.Second, 2*time.Millisecond)
	require.Never(t, b.done, 100*time.Millisecond, 5*time.Millisecond, "elected while the marked leader leads")

	ep, err := sl.Wait(ctx)
	require.NoError(t, err)
	expired := time.Now()
	require.NoError(t, p.ExpireSession(ctx, ep.SessionID()))
	lb := b.elected(t)
	require.True(t, b.at.After(expired), "elected before the leader's session ended")
	require.True(t, testutil.IsClosed(ll.Lost()), "elected before the old leader was told")
	require.Equal(t, int32(-1), testutil.Version(t, ss[0], nl), "elected while the expired leader's node is there")
	require.NoError(t, lb.Resign(ctx))
}

// TestMarkWakesNoHerd: candidates that report leaders (OnLeader) watch the
// head as well as their predecessor. When the head marks its node, such a
// candidate further back hears of the change and watches the head again (one
// request), without listing the line: same leader, same term, nothing to
// report. (The new leader's connection is stalled across the handoff, so
// that it is elected, and marks, after the candidate further back watches
// it as the head.)
func TestMarkWakesNoHerd(t *testing.T) {
	path := uniquePath(t)
	ctx := testutil.Ctx(t, 60*time.Second)
	es, ss := candidates(t, path, 4) // x, y, m, d
	p, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	sl := open(t, p.Addrs(), session.WithSessionTimeout(10*time.Second))
	el, err := election.New(sl, path, "l")
	require.NoError(t, err)

	lx, err := es[0].Campaign(ctx)
	require.NoError(t, err)
	y := queueCampaign(t, ctx, ss[1], es[1])
	l := queueCampaign(t, ctx, sl, el)
	m := queueCampaign(t, ctx, ss[2], es[2])
	leaders := make(chan string, 16)
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	t.Cleanup(func() { stop(); <-done })
	go func() {
		defer close(done)
		_ = es[3].Run(rctx, election.Callbacks{
			OnElected: func(ctx context.Context, _ election.Term) { <-ctx.Done() },
			OnLeader:  func(l election.Leader) { leaders <- l.ID },
		})
	}()
	awaitInLine(t, ss[3], 2) // its predecessor, and the head (OnLeader)
	require.Equal(t, "c0", <-leaders)

	require.NoError(t, lx.Resign(ctx))
	ly := y.elected(t)
	require.Equal(t, "c1", <-leaders)
	p.Stall()
	require.NoError(t, ly.Resign(ctx))
	require.Equal(t, "l", <-leaders) // d watches l as the head (and m)
	dx := quietXid(t, ss[3])
	require.False(t, l.done())
	p.Heal() // l reconnects, lists the line, is elected and marks (before m)
	ll := l.elected(t)
	nl := nodeOf(t, ss[0], path, "l")
	require.Eventually(t, func() bool { return testutil.Version(t, ss[0], nl) == 1 }, 5*time.Second, 2*time.Millisecond)
	require.Equal(t, dx+1, quietXid(t, ss[3]), "requests of a candidate further back when the head marks")
	require.Empty(t, leaders, "a leader reported twice")
	require.False(t, m.done())
	require.NoError(t, ll.Resign(ctx))
	m.elected(t)
	require.Equal(t, "c2", <-leaders)
}

// TestMarkRacesCancel: the candidate after a leader that marks gives up (its
// node goes, unmarked), after the mark or racing it; the candidate behind
// it must not take that deletion for its turn: it looks at the line again,
// finds the leader, and is elected only once the leader resigns.
func TestMarkRacesCancel(t *testing.T) {
	for round := range 6 {
		path := uniquePath(t)
		ctx := testutil.Ctx(t, 30*time.Second)
		es, ss := candidates(t, path, 5) // x, y, a (marks), s (gives up), c
		lx, err := es[0].Campaign(ctx)
		require.NoError(t, err)
		y := queueCampaign(t, ctx, ss[1], es[1])
		a := queueCampaign(t, ctx, ss[2], es[2])
		s := queueCampaign(t, ctx, ss[3], es[3])
		c := queueCampaign(t, ctx, ss[4], es[4])
		require.NoError(t, lx.Resign(ctx))
		ly := y.elected(t)
		na := nodeOf(t, ss[0], path, "c2")
		if round%2 == 0 {
			// s gives up while a leads, after a's mark.
			require.NoError(t, ly.Resign(ctx))
			a.elected(t)
			require.Eventually(t, func() bool { return testutil.Version(t, ss[0], na) == 1 }, 5*time.Second, 2*time.Millisecond)
			s.cancel()
		} else {
			// s gives up as y resigns (and a marks, or finds s gone).
			go s.cancel()
			require.NoError(t, ly.Resign(ctx))
			a.elected(t)
		}
		<-s.got
		require.ErrorIs(t, s.err, context.Canceled)
		require.Never(t, c.done, 150*time.Millisecond, 5*time.Millisecond, "round %d: c elected while a leads", round)
		resigned := time.Now()
		require.NoError(t, a.l.Resign(ctx))
		lc := c.elected(t)
		require.True(t, c.at.After(resigned), "round %d: c elected before a resigned", round)
		require.NoError(t, lc.Resign(ctx))
	}
}

// awaitInLine waits until session s watches n line nodes or more (the
// election's handover record aside, which a candidate watches too): its
// own watches, which the server's watch count would mix with other
// clients' (a leader's watch on its own node, set 10 ms into its term).
func awaitInLine(t *testing.T, s *session.Session, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		k := 0
		for _, p := range testutil.WatchedBy(t, zk, 0, s.SessionID()) {
			if !strings.HasSuffix(p, "/handover") {
				k++
			}
		}
		return k >= n
	}, 20*time.Second, 2*time.Millisecond, "session 0x%x watches fewer than %d line nodes", s.SessionID(), n)
}
