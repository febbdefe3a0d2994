package holdtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// Run runs every scenario of the hold contract against r, one subtest each,
// on the servers of c (the test package's own). The line's scenarios
// (SequenceExhausted, PathIsAContainer, WaiterKeepsPlace,
// LostCreateAnswerLeavesNoOrphan, LongLineHandoff) run for a fair recipe
// only, NonFairPathIsPersistent for a non-fair one only: a race has no line,
// and its path is persistent. LongLineHandoff runs for a recipe that bounds
// its handoff (Recipe.Handoff). The election sets none: a waiter that hears
// its predecessor was granted lists the line to learn the node after its
// own (line.Line.learnNext, so that it marks only for a shepherd node), so
// each handoff in its line costs a listing (measured: 47,698 bytes per
// handoff in a line of 1,007, one listing 56,167).
func Run(t *testing.T, c *zktest.Cluster, r Recipe) {
	x := &contract{c: c, r: r}
	t.Run("EndSignals", x.endSignals)
	t.Run("TokenCost", x.tokenCost)
	t.Run("ReleaseWithDoneCtx", x.releaseWithDoneCtx)
	t.Run("TwoValuesOneSession", x.twoValuesOneSession)
	t.Run("FencedAnswerLost", x.fencedAnswerLost)
	t.Run("CtxDeadlineUnderStall", x.ctxDeadlineUnderStall)
	t.Run("TopLevelPath", x.topLevelPath)
	t.Run("ExpiredHolderIsToldFirst", x.expiredHolderIsToldFirst)
	t.Run("StalledHolderIsToldFirst", x.stalledHolderIsToldFirst)
	t.Run("LossIsLogged", x.lossIsLogged)
	if r.NonFair {
		t.Run("NonFairPathIsPersistent", x.nonFairPathIsPersistent)
		return
	}
	t.Run("SequenceExhausted", x.sequenceExhausted)
	t.Run("PathIsAContainer", x.pathIsAContainer)
	t.Run("WaiterKeepsPlace", x.waiterKeepsPlace)
	t.Run("LostCreateAnswerLeavesNoOrphan", x.lostCreateAnswerLeavesNoOrphan)
	if r.Handoff != (Handoff{}) {
		t.Run("LongLineHandoff", x.longLineHandoff)
	}
}

// contract is one Run: the servers and the recipe.
type contract struct {
	c *zktest.Cluster
	r Recipe
}

func (x *contract) path(t *testing.T) string { return testutil.UniquePath(t, "holdtest-"+x.r.Name) }

func (x *contract) open(t *testing.T, opts ...session.Option) *session.Session {
	return testutil.Open(t, x.c.Servers(), opts...)
}

// proxied opens a session through its own fault proxy.
func (x *contract) proxied(t *testing.T, timeout time.Duration, opts ...session.Option) (*session.Session, *zktest.Proxy) {
	t.Helper()
	p, err := zktest.NewProxy(x.c.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return testutil.Open(t, p.Addrs(), append([]session.Option{session.WithSessionTimeout(timeout)}, opts...)...), p
}

// line is the path of the waiting line for a recipe at path.
func (x *contract) line(path string) string {
	if x.r.Line == nil {
		return path
	}
	return x.r.Line(path)
}

// lineLen is the number of nodes in the line at path, read through s.
func (x *contract) lineLen(t *testing.T, s *session.Session, path string) int {
	return len(testutil.Children(t, s, x.line(path)))
}

// keep is the nodes at and below full that the recipe keeps (containers,
// or a race's persistent path).
func (x *contract) keep(full string) []string {
	k := []string{full}
	if x.r.Containers != nil {
		k = append(k, x.r.Containers(full)...)
	}
	return k
}

// nodes lists the nodes below full that are not kept: the holds' and
// waiters' (ephemeral) nodes.
func (x *contract) nodes(t *testing.T, s *session.Session, full string) []string {
	return testutil.Leftovers(t, s, full, x.keep(full)...)
}

func acquire(t *testing.T, ctx context.Context, c Contender) Hold {
	t.Helper()
	h, err := c.Acquire(ctx)
	require.NoError(t, err)
	return h
}

// result is what an Acquire in the background returned.
type result struct {
	h   Hold
	err error
	at  time.Time
}

func inBackground(ctx context.Context, c Contender) <-chan result {
	got := make(chan result, 1)
	go func() {
		h, err := c.Acquire(ctx)
		got <- result{h, err, time.Now()}
	}()
	return got
}

// await waits (at most d) for an Acquire in the background to return.
func await(t *testing.T, got <-chan result, d time.Duration, msg string) result {
	t.Helper()
	select {
	case r := <-got:
		return r
	case <-time.After(d):
		t.Fatalf("%s: not returned within %v", msg, d)
		return result{}
	}
}

// errIs asserts err matches want, or is nil when want is nil.
func errIs(t *testing.T, err, want error, msg string) {
	t.Helper()
	if want == nil {
		require.NoError(t, err, msg)
		return
	}
	require.ErrorIs(t, err, want, msg)
}

func held(t *testing.T, c Contender, want bool, msg string) {
	t.Helper()
	if c.Held != nil {
		require.Equal(t, want, c.Held(), msg)
	}
}

// endSignals: a hold's two end signals. A release ends Context and leaves
// Lost open (also once the session is lost later); a loss (the session
// expired, or the connection stalled: the session manager suspends it)
// closes Lost and ends Context. Fenced writes land while it holds, and are
// refused once it is released or lost.
func (x *contract) endSignals(t *testing.T) {
	for _, loss := range []string{"expiry", "stall"} {
		t.Run(loss, func(t *testing.T) {
			ctx := testutil.Ctx(t, 30*time.Second)
			var s *session.Session
			var lose, heal func()
			if loss == "expiry" {
				tap := zktest.NewTap()
				s = x.open(t, session.WithSessionTimeout(2*time.Second), session.WithDialer(tap.Dialer(nil)))
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
	testutil.Quiet(t, xid) // a non-fair hold's read, not waited for by Token
	require.NoError(t, h.Release(ctx))
	plain := xid() - x0

	x0 = xid()
	h = acquire(t, ctx, cd)
	tok1, err := h.Token(ctx)
	require.NoError(t, err)
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

// ctxDeadlineUnderStall: every blocking call returns within its ctx's
// deadline (plus testutil.StallSlack) while its connection is stalled,
// whether the stall came before the call or while it waited in line:
// go-zookeeper's own read timeout (4 s here) must never be what ends it.
// A waiter that gives up leaves the line.
func (x *contract) ctxDeadlineUnderStall(t *testing.T) {
	const d = 300 * time.Millisecond
	path := x.path(t)
	ctx := testutil.Ctx(t, 2*time.Minute)
	s, p := x.proxied(t, 6*time.Second)
	other := x.open(t)
	holder := x.r.New(t, other, path, "holder")
	target := path + "-target"
	require.NoError(t, fence.Ensure(ctx, other, target, nil))
	acq := func(c Contender) func(context.Context) error {
		return func(ctx context.Context) error {
			h, err := c.Acquire(ctx)
			if err == nil {
				_ = h.Release(ctx)
			}
			return err
		}
	}

	t.Run("Acquire", func(t *testing.T) {
		require.Error(t, testutil.Stalled(t, s, p, d, acq(x.r.New(t, s, path, "me"))))
	})
	if try := x.r.New(t, s, path, "me").Try; try != nil {
		t.Run("Try", func(t *testing.T) {
			require.Error(t, testutil.Stalled(t, s, p, d, func(ctx context.Context) error {
				h, err := try(ctx)
				if h != nil {
					_ = h.Release(ctx)
				}
				return err
			}))
		})
	}
	t.Run("Acquire/waiting", func(t *testing.T) {
		h := acquire(t, ctx, holder)
		defer func() { require.NoError(t, h.Release(ctx)) }()
		// The holder's own-node watch set before the server's watches are
		// counted to tell when the waiter waits.
		testutil.AwaitDataWatches(t, x.c, 0, other, 1)
		before := x.lineLen(t, other, path)
		me := x.r.New(t, s, path, "me")
		watching := testutil.WatchCount(t, x.c, 0)
		err := testutil.StalledWhileWaiting(t, s, p, d, acq(me), func() bool {
			return (x.r.NonFair || x.lineLen(t, other, path) == before+1) && testutil.WatchCount(t, x.c, 0) > watching
		})
		require.ErrorIs(t, err, context.Canceled)
		require.Eventually(t, func() bool { return x.lineLen(t, other, path) == before }, 10*time.Second, 5*time.Millisecond,
			"the waiter's node is left behind")
	})
	whileHeld := func(t *testing.T, call func(h Hold, ctx context.Context) error) {
		h := acquire(t, ctx, x.r.New(t, s, path, "me"))
		defer func() { _ = h.Release(ctx) }() // lost in the stall (Suspended)
		require.Error(t, testutil.Stalled(t, s, p, d, func(ctx context.Context) error { return call(h, ctx) }))
	}
	t.Run("Token", func(t *testing.T) {
		if x.r.TokenAtGrant {
			// The grant knows the token: Token returns it, stall or not.
			h := acquire(t, ctx, x.r.New(t, s, path, "me"))
			defer func() { _ = h.Release(ctx) }()
			require.NoError(t, testutil.Stalled(t, s, p, d, func(ctx context.Context) error {
				_, err := h.Token(ctx)
				return err
			}))
			return
		}
		whileHeld(t, func(h Hold, ctx context.Context) error {
			_, err := h.Token(ctx)
			return err
		})
	})
	t.Run("Validate", func(t *testing.T) {
		whileHeld(t, func(h Hold, ctx context.Context) error { return h.Validate(ctx) })
	})
	t.Run("Fenced", func(t *testing.T) {
		whileHeld(t, func(h Hold, ctx context.Context) error {
			_, err := h.Fenced(ctx, fence.Raw(&gozk.SetDataRequest{Path: s.Path(target), Data: []byte("x"), Version: -1}))
			return err
		})
	})
}

// topLevelPath: a hold directly under the root, and directly under a
// namespace's own root (a path with no parent of its own to create), is
// taken (by Acquire, and by Try where the recipe has it), held and released
// like any other, and leaves nothing behind but what the recipe documents:
// its container nodes (which the server removes), or a non-fair race's
// persistent path.
func (x *contract) topLevelPath(t *testing.T) {
	for _, namespaced := range []bool{false, true} {
		for _, try := range []bool{false, true} {
			name := "Acquire"
			if try {
				name = "Try"
			}
			t.Run(fmt.Sprintf("%s/namespace=%v", name, namespaced), func(t *testing.T) {
				s, path, top := testutil.OpenTopLevel(t, x.c.Servers(), "hold", namespaced)
				ctx := testutil.Ctx(t, 10*time.Second)
				cd := x.r.New(t, s, path, "a")
				if try && cd.Try == nil {
					return // no such call: Acquire's subtest is the scenario
				}
				var h Hold
				var err error
				if try {
					h, err = cd.Try(ctx)
					require.NotNil(t, h, "Try on a free path")
				} else {
					h, err = cd.Acquire(ctx)
				}
				require.NoError(t, err)
				held(t, cd, true, "not held")
				require.NoError(t, h.Validate(ctx), "the hold is not valid")
				full := s.Path(path)
				keep := append([]string{top}, x.keep(full)...)
				require.Len(t, testutil.Leftovers(t, s, top, keep...), max(x.r.Nodes, 1), "the holder's nodes")
				require.NoError(t, h.Release(ctx))
				held(t, cd, false, "held after the release")
				require.Empty(t, testutil.Leftovers(t, s, top, keep...), "left behind")
				if x.r.NonFair {
					require.NotEqual(t, int32(-1), testutil.Version(t, s, full), "the non-fair path is persistent")
				}
			})
		}
	}
}

// expiredHolderIsToldFirst: the holder's session is ended by the server,
// again and again, while three contenders take the hold in turn; its Lost
// must close before another session is granted.
func (x *contract) expiredHolderIsToldFirst(t *testing.T) {
	path := x.path(t)
	ctx := testutil.Ctx(t, 60*time.Second)
	cds := map[string]Contender{}
	sessions := map[string]*session.Session{}
	proxies := map[string]*zktest.Proxy{}
	for _, id := range []string{"a", "b", "c"} {
		s, p := x.proxied(t, 2*time.Second)
		cds[id], sessions[id], proxies[id] = x.r.New(t, s, path, id), s, p
	}
	var ex Exclusion
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Each contender holds until its hold is lost or a short time passes.
	for id, cd := range cds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10000 {
				actx, cancel := context.WithCancel(context.Background())
				go func() {
					select {
					case <-stop:
					case <-actx.Done():
					}
					cancel()
				}()
				h, err := cd.Acquire(actx)
				if err != nil {
					cancel()
					return
				}
				ex.Granted(id, h.Lost())
				select {
				case <-h.Lost():
				case <-time.After(30 * time.Millisecond):
				case <-stop:
				}
				ex.Released(id)
				_ = h.Release(context.Background())
				cancel()
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
		ex.Check(t)
	}()
	expired := 0
	for round := 0; round < 40 && expired < 6; round++ {
		// Find the current holder and end its session from elsewhere.
		var holder string
		var lost <-chan struct{}
		require.Eventually(t, func() bool {
			holder, lost = ex.Current()
			return holder != ""
		}, 10*time.Second, time.Millisecond)
		sid := sessions[holder].SessionID()
		if testutil.IsClosed(lost) || (cds[holder].Held != nil && !cds[holder].Held()) {
			continue
		}
		if err := proxies[holder].ExpireSession(ctx, sid); err != nil {
			t.Logf("expire %s: %v", holder, err)
			continue
		}
		expired++
		// Wait for the holder's next session before the next round.
		require.Eventually(t, func() bool {
			id := sessions[holder].SessionID()
			return id != 0 && id != sid
		}, 10*time.Second, 5*time.Millisecond)
	}
	require.GreaterOrEqual(t, expired, 4)
	t.Logf("%d expiries, %d grants", expired, ex.Grants())
}

// stalledHolderIsToldFirst: the holder's network is stalled past the
// session timeout; it is told (Suspended) before the server expires it and
// grants the hold to the waiter.
func (x *contract) stalledHolderIsToldFirst(t *testing.T) {
	path := x.path(t)
	ctx := testutil.Ctx(t, 60*time.Second)
	s, p := x.proxied(t, 1500*time.Millisecond)
	holder := x.r.New(t, s, path, "holder")
	waiter := x.r.New(t, x.open(t), path, "waiter")
	for round := range 3 {
		h := acquire(t, ctx, holder)
		lost := h.Lost()
		var lostAt time.Time
		lostSeen := make(chan struct{})
		go func() { <-lost; lostAt = time.Now(); close(lostSeen) }()
		got := inBackground(ctx, waiter)
		stalled := time.Now()
		p.Stall()
		r := await(t, got, 30*time.Second, "the waiter")
		require.NoError(t, r.err)
		grantedAt := time.Now()
		select {
		case <-lostSeen:
		case <-ctx.Done():
			t.Fatal("the stalled holder was never told")
		}
		require.True(t, lostAt.Before(grantedAt), "the holder must be told before the waiter is granted")
		t.Logf("round %d: holder told %v after the stall, waiter granted %v after it (margin %v)", round,
			lostAt.Sub(stalled).Round(time.Millisecond), grantedAt.Sub(stalled).Round(time.Millisecond),
			grantedAt.Sub(lostAt).Round(time.Millisecond))
		errIs(t, h.Release(ctx), x.r.ReleaseLost, "the hold is over")
		p.Heal()
		require.NoError(t, r.h.Release(ctx))
	}
}

// lossIsLogged: a lost hold is logged at Warn with its path, node and
// session; nothing is logged by default.
func (x *contract) lossIsLogged(t *testing.T) {
	var buf testutil.SyncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, p := x.proxied(t, 2*time.Second, session.WithLogger(log))
	path := x.path(t)
	ctx := testutil.Ctx(t, 30*time.Second)
	h := acquire(t, ctx, x.r.New(t, s, path, "a"))
	require.NoError(t, p.ExpireSession(ctx, s.SessionID()))
	require.Eventually(t, func() bool { return strings.Contains(buf.String(), x.r.Name+": hold lost") }, 10*time.Second,
		5*time.Millisecond, "no loss logged")
	require.Contains(t, buf.String(), "path="+s.Path(path))
	require.Contains(t, buf.String(), "session=0x")
	errIs(t, h.Release(ctx), x.r.ReleaseLost, "releasing a lost hold")
}

// nonFairPathIsPersistent: a non-fair recipe's path is its race's, whose
// data version fences the holds (a retried release deletes the hold's node
// only while the version is the one its hold set), so it is persistent: once
// every contender has gone and the server has removed the recipe's empty
// containers and made a whole container pass, the path is still there, the
// same node, and the next grant's version counts on. (A container removed
// and made again would count from 0 again: a release retried across the two
// lives could remove the next holder's node.)
func (x *contract) nonFairPathIsPersistent(t *testing.T) {
	path := x.path(t)
	s := x.open(t)
	ctx := testutil.Ctx(t, 60*time.Second)
	cd := x.r.New(t, s, path, "a")
	h := acquire(t, ctx, cd)
	ep, err := s.Wait(ctx)
	require.NoError(t, err)
	full := s.Path(path)
	_, st0, err := ep.Conn().Get(full)
	require.NoError(t, err)
	require.NoError(t, h.Release(ctx))
	for _, c := range x.keep(full)[1:] {
		require.Eventually(t, func() bool {
			ok, _, err := ep.Conn().Exists(c)
			return err == nil && !ok
		}, 20*time.Second, 10*time.Millisecond, "the server never removed the empty container %s", c)
	}
	// The server's container check passes again: it would remove the path
	// now, were it a container.
	testutil.AwaitContainerPass(t, s, "/container-pass")

	ok, st1, err := ep.Conn().Exists(full)
	require.NoError(t, err)
	require.True(t, ok, "the idle non-fair path was removed")
	require.Equal(t, st0.Czxid, st1.Czxid, "the path was made again")
	h = acquire(t, ctx, cd)
	_, st2, err := ep.Conn().Get(full)
	require.NoError(t, err)
	require.Greater(t, st2.Version, st0.Version, "the grants' versions count on")
	require.NoError(t, h.Release(ctx))
}

// sequenceExhausted: on ZooKeeper 3.8 a parent's sequence counter sticks at
// 2^31−1, so every contender after it shares one sequence number. Ordered
// by guid, a newcomer could sort straight behind the holder and, with
// another doing the same, both be granted on its release. The line must
// fail closed: the holder (…45) and the waiter behind it (…46) are
// unaffected; every later contender (…47, then …47 again) gets
// ErrSequenceExhausted naming the line's path, leaves nothing behind, and is
// never granted; the waiter is granted as usual once the holder releases.
func (x *contract) sequenceExhausted(t *testing.T) {
	path := testutil.UniquePath(t, "exhausted")
	linePath := x.line(path)
	c := testutil.ExhaustedCounter(t, linePath)
	ctx := testutil.Ctx(t, 60*time.Second)
	s := testutil.Open(t, c.Servers())
	inLine := func() []string { return testutil.Children(t, s, linePath) }

	holder := x.r.New(t, s, path, "holder")
	h := acquire(t, ctx, holder) // …45
	waiter := x.r.New(t, testutil.Open(t, c.Servers()), path, "waiter")
	got := inBackground(ctx, waiter) // …46
	require.Eventually(t, func() bool {
		for _, n := range inLine() {
			if strings.HasSuffix(n, x.r.Kind+"2147483646") {
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond, "the waiter (…46) did not join the line")
	n := len(inLine())

	for i := range 8 { // …47, …47, …
		cd := x.r.New(t, testutil.Open(t, c.Servers()), path, "contender")
		_, err := cd.Acquire(testutil.Ctx(t, 5*time.Second))
		require.ErrorIs(t, err, recipe.ErrSequenceExhausted, "contender %d", i)
		require.ErrorIs(t, err, x.r.ErrSequenceExhausted)
		require.Contains(t, err.Error(), linePath)
		held(t, cd, false, "a contender on the exhausted line")
		require.Len(t, inLine(), n, "contender %d left its node behind: %v", i, inLine())
		if cd.Try != nil {
			th, err := cd.Try(ctx)
			require.ErrorIs(t, err, x.r.ErrSequenceExhausted, "Try")
			require.Nil(t, th)
			require.Len(t, inLine(), n, "a Try left its node behind: %v", inLine())
		}
	}
	held(t, holder, true, "the holder")
	held(t, waiter, false, "the waiter")
	select {
	case r := <-got:
		t.Fatalf("the waiter returned while the holder holds: %v", r.err)
	default:
	}

	// The waiter ahead of the exhausted numbers is granted as usual.
	require.NoError(t, h.Release(ctx))
	r := await(t, got, 10*time.Second, "the waiter")
	require.NoError(t, r.err)
	held(t, waiter, true, "the waiter, granted")
	require.NoError(t, r.h.Release(ctx))
	require.Empty(t, inLine(), "the line after the last release")
}

// pathIsAContainer: a fair recipe's path (and its parents) are container
// nodes: once every holder and waiter has let go, the server removes the
// path (zktest checks containers every 200ms), and a later acquire makes it
// again.
func (x *contract) pathIsAContainer(t *testing.T) {
	path := x.path(t)
	ctx := testutil.Ctx(t, 30*time.Second)
	s := x.open(t)
	exists := func() bool {
		ep, err := s.Wait(ctx)
		require.NoError(t, err)
		ok, _, err := ep.Conn().Exists(s.Path(path))
		require.NoError(t, err)
		return ok // (a client cannot see that a node is a container)
	}
	for round := range 2 {
		a := x.r.New(t, s, path, "a")
		b := x.r.New(t, x.open(t), path, "b")
		h := acquire(t, ctx, a)
		require.True(t, exists())
		before := x.lineLen(t, s, path)
		got := inBackground(ctx, b)
		require.Eventually(t, func() bool { return x.lineLen(t, s, path) == before+1 }, 5*time.Second, 5*time.Millisecond,
			"b did not join the line")
		require.NoError(t, h.Release(ctx))
		r := await(t, got, 10*time.Second, "b")
		require.NoError(t, r.err)
		require.NoError(t, r.h.Release(ctx))
		require.Eventually(t, func() bool { return !exists() }, 10*time.Second, 20*time.Millisecond,
			"round %d: the unused path stayed", round)
	}
}

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
	ctx := testutil.Ctx(t, 30*time.Second)
	obs := x.open(t)
	full := obs.Path(path)
	for _, giveUp := range []bool{false, true} {
		s, p := x.proxied(t, 4*time.Second)
		cd := x.r.New(t, s, path, "a")
		// Make sure the path exists, so the create is the first request.
		h := acquire(t, ctx, cd)
		require.NoError(t, h.Release(ctx))
		p.MuteReplies()
		lctx, cancel := context.WithCancel(ctx)
		got := inBackground(lctx, cd)
		// The create lands on the server; its answer does not come back.
		require.Eventually(t, func() bool { return x.lineLen(t, obs, path) == 1 }, 5*time.Second, 2*time.Millisecond)
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
