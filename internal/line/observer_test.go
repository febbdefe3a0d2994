package line_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// Every event the shared core reports carries the name of the recipe it
// works for: an orphan found after a lost answer (OrphanCleanup), a grant,
// a loss, a release retried in the background (DeleteRetry) and a release.
func TestEventsNameTheirRecipe(t *testing.T) {
	const name = "barrier-test"
	p, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	rec := &testutil.Recorder{}
	s := testutil.Open(t, p.Addrs(), session.WithSessionTimeout(8*time.Second), session.WithObserver(rec))
	other := testutil.Open(t, zk.Servers())
	ctx := testutil.Ctx(t, 40*time.Second)
	ep, err := s.Wait(ctx)
	require.NoError(t, err)
	path := testutil.UniquePath(t, "recipe-test")
	l := &line.Line{Sess: s, Recipe: name, Path: path}
	require.NoError(t, line.EnsurePath(s, ep, l.Path))
	ln := func() []string { return testutil.Children(t, other, path) }

	// OrphanCleanup: two nodes of the session carry Enter's guid (its
	// answer muted, a second create made by hand with the same guid).
	n, _ := enterWithDuplicateGUID(t, ctx, p, s, ep, l, ln)
	require.Eventually(t, func() bool { return rec.Seen(observe.OrphanCleanup) }, 10*time.Second, 5*time.Millisecond)

	// Acquired, then HoldLost (the connection severed and refused), then
	// DeleteRetry: the release cannot delete while disconnected.
	ep, err = s.Wait(ctx)
	require.NoError(t, err)
	h := l.NewHold(ep, 0, n.Path)
	h.Observe(name, path, 0, 0)
	p.Refuse(true)
	p.Sever()
	select {
	case <-h.Context().Done():
	case <-ctx.Done():
		t.Fatal("the hold outlived its connection")
	}
	require.Eventually(t, func() bool { return rec.Seen(observe.HoldLost) }, 5*time.Second, time.Millisecond)
	require.ErrorIs(t, h.Release(context.Background()), line.ErrLost)
	require.True(t, rec.Seen(observe.DeleteRetry), "a release made while disconnected is a retry")
	p.Refuse(false)
	require.Eventually(t, func() bool { return len(ln()) == 0 }, 20*time.Second, 10*time.Millisecond,
		"the release's delete is made once the session is back: %v", ln())

	// Released: a plain release.
	ep, err = s.Wait(ctx)
	require.NoError(t, err)
	n, err = l.Enter(ctx, ep, line.KindLock, nil)
	require.NoError(t, err)
	h = l.NewHold(ep, 0, n.Path)
	h.Observe(name, path, 0, 0)
	require.NoError(t, h.Release(ctx))

	kinds := map[observe.RecipeEventKind]bool{}
	for _, ev := range rec.All() {
		require.Equal(t, name, ev.Recipe, "event %v carries no recipe name", ev.Kind)
		kinds[ev.Kind] = true
	}
	for _, k := range []observe.RecipeEventKind{observe.OrphanCleanup, observe.Acquired, observe.HoldLost,
		observe.DeleteRetry, observe.Released} {
		require.True(t, kinds[k], "no %v event", k)
	}
}
