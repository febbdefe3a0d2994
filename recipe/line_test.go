package recipe_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

var zkc *zktest.Cluster

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m, &zkc, 1))
}

// The toolkit's line, from outside: two contenders under HeadTurn, the
// second granted only once the first's hold is released, its hold lost when
// its session is closed; nothing left at the path.
func TestLineHeadTurn(t *testing.T) {
	path := testutil.UniquePath(t, "toolkit")
	ctx := testutil.Ctx(t, 20*time.Second)
	var (
		lines [2]*recipe.Line
		eps   [2]*session.Epoch
		nodes [2]*recipe.Node
	)
	for i := range lines {
		s := testutil.Open(t, zkc.Servers())
		lines[i] = &recipe.Line{Sess: s, Recipe: "toolkit", Path: s.Path(path), Kind: recipe.KindLock}
		ep, err := s.Wait(ctx)
		require.NoError(t, err)
		eps[i] = ep
		nodes[i], err = lines[i].Enter(ctx, ep, []byte{byte('a' + i)})
		require.NoError(t, err)
	}
	require.NoError(t, lines[0].Await(ctx, eps[0], nodes[0], recipe.HeadTurn))
	first := lines[0].Hold(eps[0], nodes[0])
	require.Equal(t, 0, nodes[0].Position())
	t0, err := first.Token(ctx)
	require.NoError(t, err)

	granted := make(chan error, 1)
	go func() { granted <- lines[1].Await(ctx, eps[1], nodes[1], recipe.HeadTurn) }()
	select {
	case err := <-granted:
		t.Fatalf("the second was granted beside the first (err %v)", err)
	case <-time.After(300 * time.Millisecond): // how long the second must not be granted
	}
	listed, err := lines[1].List(eps[1])
	require.NoError(t, err)
	require.Equal(t, 1, recipe.Index(listed, nodes[1].Name.Name))

	require.NoError(t, first.Release(ctx))
	require.NoError(t, <-granted)
	second := lines[1].Hold(eps[1], nodes[1])
	t1, err := second.Token(ctx)
	require.NoError(t, err)
	require.Greater(t, t1, t0)

	lines[1].Sess.Close()
	select {
	case <-second.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the hold was not lost with its session")
	}
	require.Empty(t, testutil.Children(t, lines[0].Sess, path))
}

// Bad input is refused at the call, before anything is written.
func TestLineBadInput(t *testing.T) {
	path := testutil.UniquePath(t, "toolkit")
	s := testutil.Open(t, zkc.Servers())
	ctx := testutil.Ctx(t, 10*time.Second)
	ep, err := s.Wait(ctx)
	require.NoError(t, err)
	l := &recipe.Line{Sess: s, Path: s.Path(path)}
	_, err = l.Enter(ctx, ep, nil)
	require.True(t, errors.Is(err, recipe.ErrInvalidArgument), "%v", err)
	require.True(t, errors.Is(l.Await(ctx, ep, nil, recipe.HeadTurn), recipe.ErrInvalidArgument))
	require.Nil(t, testutil.Children(t, s, path), "the path was made")
}
