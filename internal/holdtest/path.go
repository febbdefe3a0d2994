package holdtest

// The recipe's path: at the top level, persistent for a race, a
// container for a line, failing closed when its sequence counter is spent.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/recipe"
)

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
