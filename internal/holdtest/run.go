package holdtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// Run runs every scenario of the hold contract against r, one subtest each,
// on the servers of c. Some scenarios count what the server saw (its
// requests, bytes and watches: LongLineHandoff, CtxDeadlineUnderStall):
// nothing else may use c meanwhile, so Runs at once need servers of their
// own. The line's scenarios
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
	return testutil.Proxied(t, x.c, timeout, opts...)
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
