package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/core"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/session"
)

// HeadTurn grants the head alone; a waiter watches its predecessor, whose
// deletion alone grants it when that is the head.
func TestHeadTurn(t *testing.T) {
	line := make([]core.Name, 3)
	ok, _, _ := core.HeadTurn(line, 0)
	require.True(t, ok)
	ok, w, del := core.HeadTurn(line, 1)
	require.Equal(t, []any{false, 0, true}, []any{ok, w, del})
	ok, w, del = core.HeadTurn(line, 2)
	require.Equal(t, []any{false, 1, false}, []any{ok, w, del})
}

// A contender that is not granted at once (NoWait) or whose ctx ends leaves
// no node behind; the one granted keeps its node as its hold's.
func TestAcquireLeavesTheLineWhenNotGranted(t *testing.T) {
	path := testutil.UniquePath(t, "recipe-test")
	s := testutil.Open(t, zk.Servers())
	l := &core.Line{Sess: s, Recipe: "test", Path: s.Path(path)}
	grant := func(ctx context.Context, ep *session.Epoch, own *core.Node) (*hold.Hold, error) {
		return l.NewHold(ep, hold.Token(own.Czxid), own.Path), nil
	}
	ctx := testutil.Ctx(t, 10*time.Second)
	h, err := core.Acquire(ctx, l, core.Driver[*hold.Hold]{Kind: core.KindLock, Grant: grant})
	require.NoError(t, err)
	defer func() { _ = h.Release(ctx) }()

	_, err = core.Acquire(ctx, l, core.Driver[*hold.Hold]{Kind: core.KindLock, Grant: grant,
		Options: core.AwaitOptions{NoWait: true}})
	require.True(t, errors.Is(err, core.ErrWouldWait), "got %v", err)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = core.Acquire(short, l, core.Driver[*hold.Hold]{Kind: core.KindLock, Grant: grant})
	require.ErrorIs(t, err, context.DeadlineExceeded)

	ep, err := s.Wait(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		line, err := l.List(ep)
		return err == nil && len(line) == 1 && l.Path+"/"+line[0].Name == h.Node()
	}, 5*time.Second, 10*time.Millisecond, "only the holder's node is left")
}
