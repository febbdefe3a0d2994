package recipe_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// HeadTurn grants the head alone; a waiter watches its predecessor, whose
// deletion alone grants it when that is the head.
func TestHeadTurn(t *testing.T) {
	line := make([]recipe.Name, 3)
	ok, _, _ := recipe.HeadTurn(line, 0)
	require.True(t, ok)
	ok, w, del := recipe.HeadTurn(line, 1)
	require.Equal(t, []any{false, 0, true}, []any{ok, w, del})
	ok, w, del = recipe.HeadTurn(line, 2)
	require.Equal(t, []any{false, 1, false}, []any{ok, w, del})
}

// A contender that is not granted at once (NoWait) or whose ctx ends leaves
// no node behind; the one granted keeps its node as its hold's.
func TestAcquireLeavesTheLineWhenNotGranted(t *testing.T) {
	path := testutil.UniquePath(t, "recipe-test")
	s := testutil.Open(t, zk.Servers())
	l := &recipe.Line{Sess: s, Recipe: "test", Path: s.Path(path)}
	hold := func(ctx context.Context, ep *session.Epoch, own *recipe.Node) (*recipe.Hold, error) {
		return l.NewHold(ep, recipe.Token(own.Czxid), own.Path), nil
	}
	ctx := testutil.Ctx(t, 10*time.Second)
	h, err := recipe.Acquire(ctx, l, recipe.Driver[*recipe.Hold]{Kind: recipe.KindLock, Grant: hold})
	require.NoError(t, err)
	defer func() { _ = h.Release(ctx) }()

	_, err = recipe.Acquire(ctx, l, recipe.Driver[*recipe.Hold]{Kind: recipe.KindLock, Grant: hold,
		Options: recipe.AwaitOptions{NoWait: true}})
	require.True(t, errors.Is(err, recipe.ErrWouldWait), "got %v", err)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = recipe.Acquire(short, l, recipe.Driver[*recipe.Hold]{Kind: recipe.KindLock, Grant: hold})
	require.ErrorIs(t, err, context.DeadlineExceeded)

	ep, err := s.Wait(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		line, err := l.List(ep)
		return err == nil && len(line) == 1 && l.Path+"/"+line[0].Name == h.Node()
	}, 5*time.Second, 10*time.Millisecond, "only the holder's node is left")
}
