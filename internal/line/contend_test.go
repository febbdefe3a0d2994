package line_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/session"
)

// HeadTurn grants the head alone; a waiter watches its predecessor, whose
// deletion alone grants it when that is the head.
func TestHeadTurn(t *testing.T) {
	ln := make([]line.Name, 3)
	ok, _, _ := line.HeadTurn(ln, 0)
	require.True(t, ok)
	ok, w, del := line.HeadTurn(ln, 1)
	require.Equal(t, []any{false, 0, true}, []any{ok, w, del})
	ok, w, del = line.HeadTurn(ln, 2)
	require.Equal(t, []any{false, 1, false}, []any{ok, w, del})
}

// holder is a Driver whose grant is a hold of the node.
type holder struct {
	line.Head
	l *line.Line
}

func (d holder) Grant(_ context.Context, ep *session.Epoch, own *line.Node) (*hold.Hold, error) {
	return d.l.NewHold(ep, hold.Token(own.Czxid), own.Path), nil
}

// A contender that is not granted at once (NoWait) or whose ctx ends leaves
// no node behind; the one granted keeps its node as its hold's.
func TestAcquireLeavesTheLineWhenNotGranted(t *testing.T) {
	path := testutil.UniquePath(t, "recipe-test")
	s := testutil.Open(t, zk.Servers())
	l := &line.Line{Sess: s, Recipe: "test", Path: s.Path(path)}
	d := holder{l: l}
	lock := line.Entry{Kind: line.KindLock}
	ctx := testutil.Ctx(t, 10*time.Second)
	h, err := line.Contend(ctx, l, lock, d)
	require.NoError(t, err)
	defer func() { _ = h.Release(ctx) }()

	_, err = line.Contend(ctx, l, line.Entry{Kind: line.KindLock, Options: line.AwaitOptions{NoWait: true}}, d)
	require.True(t, errors.Is(err, line.ErrWouldWait), "got %v", err)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = line.Contend(short, l, lock, d)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	ep, err := s.Wait(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ln, err := l.List(ep)
		return err == nil && len(ln) == 1 && l.Path+"/"+ln[0].Name == h.Node()
	}, 5*time.Second, 10*time.Millisecond, "only the holder's node is left")
}
