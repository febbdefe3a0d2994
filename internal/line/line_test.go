package line_test

import (
	"context"
	"os"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/internal/wire/wiretap"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

var zk *zktest.Cluster

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m, &zk, 1, zktest.WithSuperDigest(superUser, superPassword)))
}

func enter(t *testing.T, s *session.Session, l *line.Line) *line.Node {
	t.Helper()
	ctx := testutil.Ctx(t, 10*time.Second)
	ep, err := s.Wait(ctx)
	require.NoError(t, err)
	n, err := l.Enter(ctx, ep, line.KindLock, nil)
	require.NoError(t, err)
	return n
}

// Enter lists the line with its create: the listing includes the node and
// every node ahead of it, in order, and is given out once; the node is the
// session's (a create's answer carries no Stat, so Czxid is left unknown).
func TestEnterListsTheLineWithItsCreate(t *testing.T) {
	path := testutil.UniquePath(t, "recipe-test")
	var ahead []string
	for i := 0; i < 2; i++ {
		s := testutil.Open(t, zk.Servers())
		n := enter(t, s, &line.Line{Sess: s, Path: path})
		ahead = append(ahead, n.Name.Name)
	}
	s := testutil.Open(t, zk.Servers())
	n := enter(t, s, &line.Line{Sess: s, Path: path})

	ln, ok := n.TakeSeen()
	require.True(t, ok, "no listing with the create")
	var names []string
	for _, m := range ln {
		names = append(names, m.Name)
	}
	require.Equal(t, append(ahead, n.Name.Name), names)
	_, again := n.TakeSeen()
	require.False(t, again, "the listing is given out once")

	ep, err := s.Wait(testutil.Ctx(t, 5*time.Second))
	require.NoError(t, err)
	exists, st, err := ep.Conn().Exists(n.Path)
	require.NoError(t, err)
	require.True(t, exists)
	require.Zero(t, n.Czxid, "Enter cannot know the creation zxid of a new node")
	require.Equal(t, ep.SessionID(), st.EphemeralOwner)
	require.Equal(t, ep.SessionID(), n.SessionID)
}

// The list goes out before the create's answer is back (one round trip for
// both): with the server's answers muted, the server still receives the
// list right after the create. Sent one after the other, the list would
// wait for an answer that never comes.
func TestEnterSendsTheListWithoutWaitingForTheCreate(t *testing.T) {
	s, p := testutil.Proxied(t, zk, 8*time.Second)
	ctx := testutil.Ctx(t, 20*time.Second)
	ep, err := s.Wait(ctx)
	require.NoError(t, err)
	l := &line.Line{Sess: s, Path: testutil.UniquePath(t, "recipe-test")}
	require.NoError(t, line.EnsurePath(s, ep, l.Path))

	lcxid := func() int64 { return testutil.LastXid(t, zk, 0, ep.SessionID()) }
	before := lcxid()

	p.MuteReplies()
	ectx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := l.Enter(ectx, ep, line.KindLock, nil)
		done <- err
	}()
	// The create and the list, within the connection's read timeout.
	listed := assert.Eventually(t, func() bool { return lcxid() >= before+2 }, 4*time.Second, 10*time.Millisecond,
		"the server never saw the list while answers were muted")
	p.Heal()
	cancel()
	<-done
	require.True(t, listed)
}

// A create whose answer is lost is found again by its guid; if two nodes of
// the session carry that guid (a create that landed after an earlier lookup
// missed it, so Enter created again), Enter adopts the first in line and
// removes the other: never an orphan of a live session blocking the line.
// The second node is made here with the first's guid, through the same
// session, while the answers are muted.
func TestEnterRemovesADuplicateOfItsGUID(t *testing.T) {
	s, p := testutil.Proxied(t, zk, 8*time.Second)
	other := testutil.Open(t, zk.Servers())
	ctx := testutil.Ctx(t, 30*time.Second)
	ep, err := s.Wait(ctx)
	require.NoError(t, err)
	path := testutil.UniquePath(t, "recipe-test")
	l := &line.Line{Sess: s, Path: path}
	require.NoError(t, line.EnsurePath(s, ep, l.Path))
	ln := func() []string { return testutil.Children(t, other, path) }

	n, first := enterWithDuplicateGUID(t, ctx, p, s, ep, l, ln)
	require.Equal(t, path+"/"+first.Name, n.Path, "the first node with our guid is adopted")
	require.Eventually(t, func() bool {
		names := ln()
		return len(names) == 1 && names[0] == first.Name
	}, 10*time.Second, 5*time.Millisecond, "the duplicate is removed: %v", ln())
}

// enterWithDuplicateGUID enters l in ep with the server's answers muted and,
// once its node is there, creates a second node with the same guid through
// the same session (its answer muted too), then heals: Enter must recover.
// It returns Enter's node and the name of the first node with the guid.
func enterWithDuplicateGUID(t *testing.T, ctx context.Context, p *zktest.Proxy, s *session.Session,
	ep *session.Epoch, l *line.Line, ln func() []string) (*line.Node, line.Name) {
	t.Helper()
	p.MuteReplies()
	type result struct {
		n   *line.Node
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := l.Enter(ctx, ep, line.KindLock, nil)
		done <- result{n, err}
	}()
	require.Eventually(t, func() bool { return len(ln()) == 1 }, 10*time.Second, 5*time.Millisecond)
	first, ok := line.ParseName(ln()[0])
	require.True(t, ok)
	dupDone := make(chan struct{})
	go func() {
		defer close(dupDone)
		// Its answer is muted too; it fails when the connection closes.
		_, _ = ep.Conn().Create(l.Path+"/"+line.ProtectedPrefix(first.GUID, line.KindLock), nil,
			gozk.FlagEphemeral|gozk.FlagSequence, s.ACL())
	}()
	require.Eventually(t, func() bool { return len(ln()) == 2 }, 10*time.Second, 5*time.Millisecond)
	p.Heal()
	<-dupDone
	r := <-done
	require.NoError(t, r.err)
	return r.n, first
}

// MultiWritten (a leader's mark) reports the multi written without waiting
// for its answer: with the server's answers muted, written still closes,
// and a delete sent after it reaches the server after the multi's set (the
// set succeeds, not NoNode).
func TestMultiWrittenDoesNotWaitForTheAnswer(t *testing.T) {
	s, p := testutil.Proxied(t, zk, 8*time.Second)
	ctx := testutil.Ctx(t, 20*time.Second)
	ep, err := s.Wait(ctx)
	require.NoError(t, err)
	path := testutil.UniquePath(t, "recipe-test")
	require.NoError(t, line.EnsurePath(s, ep, path))

	p.MuteReplies()
	written, answer := wiretap.MultiWritten(ep.Conn(), ep.WireTap(), &gozk.SetDataRequest{Path: path, Data: []byte("a"), Version: 0})
	select {
	case <-written:
	case <-time.After(4 * time.Second): // within the connection's read timeout
		p.Heal()
		t.Fatal("the set was not reported written while answers were muted")
	}
	select {
	case err := <-answer:
		t.Fatalf("answered while answers were muted: %v", err)
	default:
	}
	deleted := make(chan error, 1)
	go func() { deleted <- ep.Conn().Delete(path, -1) }()
	p.Heal()
	if err := <-answer; err != nil {
		// The connection the answers were muted on may have been dropped
		// by now; only an answer from the server counts.
		require.NotErrorIs(t, err, gozk.ErrNoNode, "the delete overtook the set")
	}
	<-deleted
}
