package mutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
)

// requests counts the requests session s has sent since the last call
// (server-side).
func requests(t *testing.T, s *session.Session) func() int64 { return testutil.Requests(t, zk, s) }

// TestRequestsPerOperation: the round trips of a fair lock's hot paths,
// counted by the server. Uncontended: a create and the listing sent with it
// to Lock, a delete to Unlock. A waiter whose predecessor holds the lock: the
// create, the listing and one watch, and, once the holder releases (its
// deletion alone grants the waiter), the mark of a holder that waited.
func TestRequestsPerOperation(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	a, b := open(t, zk.Servers()), open(t, zk.Servers())
	ma, _ := mutex.New(a, path)
	mb, _ := mutex.New(b, path)
	require.NoError(t, ma.Lock(ctx)) // creates the path
	require.NoError(t, ma.Unlock(ctx))
	// The path is an empty container now: kept, so that the count is not
	// of its making again (see testutil.PinContainer).
	testutil.PinContainer(t, a, a.Path(path))

	ra := requests(t, a)
	require.NoError(t, ma.Lock(ctx))
	// The create and its listing (pipelined), and, after the grant, the
	// hold's watch on its own node (hold/ownwatch.go).
	require.Equal(t, int64(3), testutil.Settled(t, ra, 3), "uncontended Lock")
	require.NoError(t, ma.Unlock(ctx))
	require.Equal(t, int64(1), ra(), "Unlock")

	require.NoError(t, ma.Lock(ctx))
	rb := requests(t, b)
	got := make(chan error, 1)
	go func() { got <- mb.Lock(ctx) }()
	// The waiter's watch in place before the release (its session's: the
	// holder's own-node watch moves the server's count too).
	testutil.AwaitWatching(t, zk, 0, mb.Session(), nil)
	require.NoError(t, ma.Unlock(ctx))
	require.NoError(t, <-got)
	// The value's first Lock reads its parent's data (a part of another
	// recipe's layout is refused: line.RefusePart) and the path's kind (its
	// data and children: line.PathCheck, once per value); then the create, its
	// listing, its two watches on the holder's node (its data, for a mark,
	// and its deletion: recipe.Line.watch), then its own-node watch. A
	// holder that waited marks in its release
	// (line.AwaitOptions.MarkOnRelease), not here. Count until the server
	// has answered them all.
	require.Equal(t, int64(3+5), testutil.Settled(t, rb, 3+5), "a value's first Lock, granted by the holder's release")
	require.NoError(t, mb.Unlock(ctx))
}
