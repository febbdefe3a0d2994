package holdtest

// The waiting line: a waiter keeps its place across a reconnect, a lost
// create answer leaves no orphan, a handoff in a long line stays cheap.

import (
	"context"
	"fmt"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// waiterKeepsPlace: a waiter whose connection drops (the session survives)
// keeps its node and its place: a later waiter does not jump it.
func (x *contract) waiterKeepsPlace(t *testing.T) {
	path := x.path(t)
	ctx := testutil.Ctx(t, 30*time.Second)
	hs := x.open(t)
	h := acquire(t, ctx, x.r.New(t, hs, path, "holder"))
	ws, p := x.proxied(t, 4*time.Second)
	n := x.lineLen(t, hs, path)
	got := inBackground(ctx, x.r.New(t, ws, path, "waiter"))
	require.Eventually(t, func() bool { return x.lineLen(t, hs, path) == n+1 }, 5*time.Second, 5*time.Millisecond)
	before := testutil.Children(t, hs, x.line(path))
	sid := ws.SessionID()
	p.Sever()
	require.Eventually(t, func() bool { return ws.State() == session.Reconnected }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, sid, ws.SessionID())
	require.ElementsMatch(t, before, testutil.Children(t, hs, x.line(path)), "the waiter kept its node")
	lateGot := inBackground(ctx, x.r.New(t, x.open(t), path, "late"))
	require.Eventually(t, func() bool { return x.lineLen(t, hs, path) == n+2 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, h.Release(ctx))
	r := await(t, got, 10*time.Second, "the waiter")
	require.NoError(t, r.err, "the waiter is next")
	select {
	case <-lateGot:
		t.Fatal("the late waiter jumped the queue")
	default:
	}
	require.NoError(t, r.h.Release(ctx))
	late := await(t, lateGot, 10*time.Second, "the late waiter")
	require.NoError(t, late.err)
	require.NoError(t, late.h.Release(ctx))
}

// lostCreateAnswerLeavesNoOrphan: the create reaches the server but its
// answer is lost; the client finds its node by guid instead of creating a
// second one, and a waiter that gives up leaves nothing behind.
func (x *contract) lostCreateAnswerLeavesNoOrphan(t *testing.T) {
	path := x.path(t)
	ctx := testutil.Ctx(t, 60*time.Second)
	obs := x.open(t)
	full := obs.Path(path)
	for _, giveUp := range []bool{false, true} {
		p, got, cancel := x.createAnswerLost(t, ctx, obs, path)
		if giveUp {
			cancel()
			r := await(t, got, 10*time.Second, "the cancelled acquire")
			require.ErrorIs(t, r.err, context.Canceled)
			p.Heal()
			require.Eventually(t, func() bool { return len(x.nodes(t, obs, full)) == 0 }, 10*time.Second, 5*time.Millisecond,
				"an abandoned create is found and removed")
		} else {
			p.Heal()
			r := await(t, got, 10*time.Second, "the acquire")
			require.NoError(t, r.err)
			require.Len(t, x.nodes(t, obs, full), 1, "one node: the lost answer's node was adopted")
			require.NoError(t, r.h.Release(ctx))
			require.Eventually(t, func() bool { return len(x.nodes(t, obs, full)) == 0 }, 5*time.Second, 5*time.Millisecond)
		}
		cancel()
	}
}

// createAnswerLost starts an Acquire at path on a new session through a
// proxy muting the server's replies, once its create has landed (seen
// through obs): the fault of lostCreateAnswerLeavesNoOrphan. It returns the
// proxy, the Acquire's result to come and its cancel.
//
// The path is made first (an Acquire and its Release), so that the create
// is the first request. Empty, the recipe's containers may still be removed
// by the server (every 200 ms here) before the create arrives: the create
// is then refused ("no node", an answer the proxy mutes) and nothing lands.
// That happened on a loaded machine; such a try, which tests nothing, is
// abandoned (the line's path gone tells it) and made again, at most 5 times.
func (x *contract) createAnswerLost(t *testing.T, ctx context.Context, obs *session.Session, path string) (*zktest.Proxy, <-chan result, context.CancelFunc) {
	t.Helper()
	linePath := obs.Path(x.line(path))
	for try := 1; ; try++ {
		// 10 s: the create must be written before the session, hearing
		// nothing, drops the connection (at two thirds of the timeout; a
		// reconnection through the muted proxy gets no answer). With 4 s, a
		// make test beside six busy loops once saw no create land in time.
		s, p := x.proxied(t, 10*time.Second)
		cd := x.r.New(t, s, path, "a")
		h := acquire(t, ctx, cd)
		require.NoError(t, h.Release(ctx))
		p.MuteReplies()
		lctx, cancel := context.WithCancel(ctx)
		got := inBackground(lctx, cd)
		// The create lands on the server; its answer does not come back.
		landed := false
		require.Eventually(t, func() bool {
			landed = x.lineLen(t, obs, path) == 1
			return landed || testutil.Version(t, obs, linePath) < 0
		}, 15*time.Second, 2*time.Millisecond, "the create never landed")
		if landed {
			return p, got, cancel
		}
		require.Less(t, try, 5, "the server removed the empty path before the create, every try")
		t.Logf("try %d: the server removed the empty path before the create (refused, unheard): again", try)
		cancel()
		p.Heal()
		if r := await(t, got, 20*time.Second, "the abandoned acquire"); r.err == nil {
			require.NoError(t, r.h.Release(ctx))
		}
	}
}

// longLineHandoff: a handoff in a line of a thousand costs a few hundred
// bytes and a few requests, counted by the server: the holder that waited
// marks its node (line.AwaitOptions.MarkOnRelease), and the waiter behind it
// is granted on its deletion without listing the line. Without the mark,
// every new holder but the first lists the whole line (about 50 KB here).
// The bounds are the recipe's (Recipe.Handoff).
func (x *contract) longLineHandoff(t *testing.T) {
	path := x.path(t)
	ctx := testutil.Ctx(t, 60*time.Second)
	const chain, tail = 6, 1000
	hs := x.open(t)
	held := acquire(t, ctx, x.r.New(t, hs, path, "holder"))
	// The holder's own-node watch set (10 ms into its hold) before the
	// server's watches are counted to tell when each waiter is in line.
	testutil.AwaitDataWatches(t, x.c, 0, hs, 1)
	got := make(chan result, chain)
	for i := range chain {
		cd := x.r.New(t, x.open(t), path, fmt.Sprint("w", i))
		before := testutil.WatchCount(t, x.c, 0)
		go func() {
			h, err := cd.Acquire(ctx)
			got <- result{h: h, err: err}
		}()
		require.Eventually(t, func() bool { return testutil.WatchCount(t, x.c, 0) > before }, 10*time.Second, 2*time.Millisecond,
			"waiter %d not in line", i)
	}
	// A thousand more contenders behind them (nodes only: they make the
	// line long).
	fill := x.open(t)
	ep, err := fill.Wait(ctx)
	require.NoError(t, err)
	linePath := fill.Path(x.line(path))
	for range tail {
		_, err := ep.Conn().Create(linePath+"/"+line.ProtectedPrefix(line.NewGUID(), x.r.Kind), nil,
			gozk.FlagEphemeral|gozk.FlagSequence, gozk.WorldACL(gozk.PermAll))
		require.NoError(t, err)
	}

	p0, b0 := testutil.Traffic(t, x.c, 0)
	require.NoError(t, held.Release(ctx))
	for range chain {
		r := await(t, got, 30*time.Second, "a waiter")
		require.NoError(t, r.err)
		require.NoError(t, r.h.Release(ctx))
	}
	p1, b1 := testutil.Traffic(t, x.c, 0)
	listing := testutil.ListingBytes(t, x.c, fill, linePath)
	perBytes := float64(b1-b0) / chain
	perReq := float64(p1-p0-1) / chain // less the first mntr read's own packet
	t.Logf("line of %d: %d handoffs cost %d bytes (%.0f each) and %d requests (%.2f each); one listing of the line costs %d",
		chain+tail+1, chain, b1-b0, perBytes, p1-p0-1, perReq, listing)
	b := x.r.Handoff
	if b.Bytes > 0 {
		require.Less(t, perBytes, b.Bytes, "bytes per handoff in a line of %d", chain+tail+1)
	}
	if b.BytesLessListing > 0 {
		require.Less(t, float64(b1-b0-listing)/chain, b.BytesLessListing,
			"bytes per handoff behind a line of %d, less one listing", chain+tail+1)
	}
	if b.Requests > 0 {
		require.LessOrEqual(t, perReq, b.Requests, "requests per handoff")
	}
}
