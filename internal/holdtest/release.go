package holdtest

// The hold's own life: its end signals, its token's cost, a release
// with a done ctx, two values on one session, a fenced write whose answer
// is lost.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// endSignals: a hold's two end signals. A release ends Context and leaves
// Lost open (also once the session is lost later); a loss (the session
// expired, or the connection stalled: the session manager suspends it)
// closes Lost and ends Context. Fenced writes land while it holds, and are
// refused once it is released or lost.
func (x *contract) endSignals(t *testing.T) {
	for _, loss := range []string{"expiry", "stall"} {
		t.Run(loss, func(t *testing.T) {
			ctx := testutil.Ctx(t, 30*time.Second)
			s, lose, heal := x.lossOf(t, ctx, loss)
			path := x.path(t)
			target := path + "-state"
			require.NoError(t, fence.Ensure(ctx, s, target, []byte("none")))
			cd := x.r.New(t, s, path, "a")

			h1 := acquire(t, ctx, cd)
			lost1, ctx1 := h1.Lost(), h1.Context()
			require.False(t, testutil.IsClosed(lost1))
			require.NoError(t, ctx1.Err())
			require.NoError(t, h1.Validate(ctx))
			tok1, err := h1.Token(ctx)
			require.NoError(t, err)
			res, err := h1.Fenced(ctx, fence.Set(target, []byte("1"), fence.AnyVersion))
			require.NoError(t, err)
			require.EqualValues(t, 1, res[0].Stat.Version)
			require.NoError(t, h1.Release(ctx))
			require.Error(t, ctx1.Err(), "a release ends the hold's Context")
			require.False(t, testutil.IsClosed(lost1), "a release closed Lost: a release is no loss")
			errIs(t, h1.Release(ctx), x.r.ReleaseAgain, "a second release")
			_, err = h1.Fenced(ctx, fence.Set(target, nil, fence.AnyVersion))
			require.ErrorIs(t, err, x.r.ReleasedFenced, "a released hold's fenced write")
			require.ErrorIs(t, h1.Validate(ctx), x.r.ReleasedValidate, "a released hold's Validate")

			h2 := acquire(t, ctx, cd)
			if x.r.Later != nil {
				x.r.Later(t, h1, h2)
			}
			lost2, ctx2 := h2.Lost(), h2.Context()
			tok2, err := h2.Token(ctx)
			require.NoError(t, err)
			require.Greater(t, int64(tok2), int64(tok1), "the later hold's token")
			require.NoError(t, h2.Validate(ctx))
			lose()
			select {
			case <-lost2:
			case <-ctx.Done():
				t.Fatalf("Lost not closed at the %s", loss)
			}
			require.Error(t, ctx2.Err(), "a loss ends Context too")
			require.False(t, testutil.IsClosed(lost1), "the epoch's end closed the Lost of a hold released before it")
			_, err = h2.Fenced(ctx, fence.Set(target, nil, fence.AnyVersion))
			require.ErrorIs(t, err, recipe.ErrLost, "a lost hold's fenced write")
			heal()
			errIs(t, h2.Release(ctx), x.r.ReleaseLost, "releasing a lost hold")
		})
	}
}

// lossOf opens the session of endSignals' loss ("expiry" or "stall") and
// returns it with the fault that loses it and the heal that follows.
func (x *contract) lossOf(t *testing.T, ctx context.Context, loss string) (s *session.Session, lose, heal func()) {
	if loss == "expiry" {
		// ExpireSession ends the session at once: its timeout is
		// not what is tested, and a short one (2 s, once) let a
		// loaded machine drop the connection before the loss, which
		// under StopOnDisconnect ended the hold early.
		tap := zktest.NewTap()
		s = x.open(t, session.WithSessionTimeout(10*time.Second), session.WithDialer(tap.Dialer(nil)))
		lose = func() {
			cred, ok := tap.Credentials(s.SessionID())
			require.True(t, ok)
			require.NoError(t, zktest.ExpireSession(ctx, x.c.Servers(), cred))
		}
		heal = func() {}
	} else {
		var p *zktest.Proxy
		s, p = x.proxied(t, 3*time.Second)
		lose = p.Stall
		// Healed once the session is lost (its timeout passed in
		// silence): the next connection is a new session's, with no
		// watches to set again. A reconnect of the same session with
		// watches is where go-zookeeper's lastZxid data race fires
		// (README.md, "Upstream go-zookeeper data race"); the other
		// stall scenarios cover that reconnect.
		heal = func() {
			require.Eventually(t, func() bool { return s.State() == session.Lost }, 20*time.Second, 5*time.Millisecond,
				"the stalled session was never lost")
			p.Heal()
		}
	}
	return s, lose, heal
}

// tokenCost: tokens cost what the docs say: nothing. The hold's own-node
// watch reads its node (its Stat: the token) right after the grant, and
// Token waits for that read (a non-fair grant knows its token): a round
// with one Token costs what a round without costs, a second Token nothing,
// and concurrent first calls share the one read.
func (x *contract) tokenCost(t *testing.T) {
	s := x.open(t)
	ctx := testutil.Ctx(t, 30*time.Second)
	path := x.path(t)
	cd := x.r.New(t, s, path, "a")
	xid := func() int64 { return testutil.LastXid(t, x.c, 0, s.SessionID()) }
	// Once to create the path: later rounds cost the same.
	h := acquire(t, ctx, cd)
	// A child no recipe counts keeps the path and its containers in place
	// between rounds, so that no round pays for making them again
	// (testutil.PinContainer).
	pins := x.keep(s.Path(path))
	if len(pins) > 1 {
		pins = pins[1:] // pinned children keep the path
	}
	for _, dir := range pins {
		testutil.PinContainer(t, s, dir)
	}
	require.NoError(t, h.Release(ctx))

	// (Whether a hold released at once sends its own-node read depends on
	// timing: the plain round asks once, and waits for it.)
	x0 := xid()
	h = acquire(t, ctx, cd)
	tok0, err := h.Token(ctx)
	require.NoError(t, err)
	// Both rounds count the hold's own-node read: it is sent 10 ms into the
	// hold, and on a loaded machine that timer can fire after Quiet has
	// seen 40 ms of silence (one make test counted 6 and 5).
	testutil.AwaitDataWatches(t, x.c, 0, s, 1)
	testutil.Quiet(t, xid) // a non-fair hold's read, not waited for by Token
	require.NoError(t, h.Release(ctx))
	plain := xid() - x0

	x0 = xid()
	h = acquire(t, ctx, cd)
	tok1, err := h.Token(ctx)
	require.NoError(t, err)
	testutil.AwaitDataWatches(t, x.c, 0, s, 1)
	first := testutil.Quiet(t, xid)
	tok2, err := h.Token(ctx)
	require.NoError(t, err)
	second := xid()
	require.NoError(t, h.Release(ctx))
	withToken := xid() - x0
	require.Equal(t, tok1, tok2)
	require.Greater(t, int64(tok1), int64(tok0))
	require.Zero(t, second-first, "a second Token's requests")
	require.Equal(t, plain, withToken, "acquire+Token+Token+release vs acquire+Token+release")

	// Concurrent first calls: one read between them.
	x0 = xid()
	h = acquire(t, ctx, cd)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, err := h.Token(ctx)
			if err == nil && tok <= tok1 {
				err = errors.New("token did not grow")
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	testutil.Quiet(t, xid)
	require.NoError(t, h.Release(ctx))
	require.Equal(t, plain, xid()-x0, "acquire+four concurrent first Tokens+release vs acquire+Token+release")
}

// releaseWithDoneCtx: a release with a cancelled or expired ctx lets go all
// the same (the ctx only bounds the wait for the server's confirmation): a
// contender waiting on another session is granted, the hold's Context ends
// and its Lost stays open, and the value does not re-enter a hold it gave up.
func (x *contract) releaseWithDoneCtx(t *testing.T) {
	for _, how := range []string{"cancelled", "expired"} {
		t.Run(how, func(t *testing.T) {
			path := x.path(t)
			ctx := testutil.Ctx(t, 30*time.Second)
			a := x.r.New(t, x.open(t), path, "a")
			b := x.r.New(t, x.open(t), path, "b")
			h := acquire(t, ctx, a)
			lost, hctx := h.Lost(), h.Context()
			got := inBackground(ctx, b)
			var done context.Context
			var cancel context.CancelFunc
			if how == "cancelled" {
				done, cancel = context.WithCancel(ctx)
			} else {
				done, cancel = context.WithDeadline(ctx, time.Now().Add(-time.Second))
			}
			cancel()
			if err := h.Release(done); err != nil {
				require.True(t, errors.Is(err, done.Err()), "release: %v", err)
			}
			held(t, a, false, "the value still holds")
			require.Error(t, hctx.Err(), "the released hold's Context has not ended")
			require.False(t, testutil.IsClosed(lost), "the released hold's Lost is closed: a release is no loss")
			r := await(t, got, 10*time.Second, "the hold was not released")
			require.NoError(t, r.err, "the hold was not released")
			if a.Try != nil {
				th, err := a.Try(ctx)
				require.NoError(t, err)
				require.Nil(t, th, "the value re-entered a hold it had given up")
			}
			require.NoError(t, r.h.Release(ctx))
		})
	}
}

// twoValuesOneSession: two contenders sharing one session (as two recipes
// share one session) exclude each other like two processes.
func (x *contract) twoValuesOneSession(t *testing.T) {
	path := x.path(t)
	ctx := testutil.Ctx(t, 30*time.Second)
	s := x.open(t)
	one, two := x.r.New(t, s, path, "one"), x.r.New(t, s, path, "two")
	h1 := acquire(t, ctx, one)
	if two.Try != nil {
		th, err := two.Try(ctx)
		require.NoError(t, err)
		require.Nil(t, th, "Try granted beside the other value of the session")
	}
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err := two.Acquire(short)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "a second value of the session was granted beside the first")
	held(t, two, false, "the second value")
	held(t, one, true, "the first value")

	got := inBackground(ctx, two)
	require.NoError(t, h1.Release(ctx))
	r := await(t, got, 10*time.Second, "the second value")
	require.NoError(t, r.err)
	held(t, two, true, "the second value, granted")
	held(t, one, false, "the first value, released")
	if two.Holder != nil {
		id, err := two.Holder(ctx)
		require.NoError(t, err)
		require.Equal(t, "two", id)
	}
	require.NoError(t, r.h.Release(ctx))
}

// fencedAnswerLost: a fenced write whose connection is lost while it is in
// flight (it was applied; its answer was lost) fails with an error matching
// ErrLost, not a raw connection error.
func (x *contract) fencedAnswerLost(t *testing.T) {
	path := x.path(t)
	ctx := testutil.Ctx(t, 30*time.Second)
	s, p := x.proxied(t, 4*time.Second)
	h := acquire(t, ctx, x.r.New(t, s, path, "a"))
	admin := x.open(t)
	aep, err := admin.Wait(ctx)
	require.NoError(t, err)
	res := admin.Path(path) + "-resource"
	_, err = aep.Conn().Create(res, []byte("0"), 0, admin.ACL())
	require.NoError(t, err)

	p.MuteReplies()
	got := make(chan error, 1)
	go func() {
		_, err := h.Fenced(ctx, fence.Raw(&gozk.SetDataRequest{Path: res, Data: []byte("1"), Version: -1}))
		got <- err
	}()
	require.Eventually(t, func() bool {
		data, _, err := aep.Conn().Get(res)
		return err == nil && string(data) == "1"
	}, 5*time.Second, 5*time.Millisecond, "the fenced write never reached the server")
	p.Heal()
	require.ErrorIs(t, <-got, recipe.ErrLost)
	errIs(t, h.Release(ctx), x.r.ReleaseLost, "releasing a lost hold")
}
