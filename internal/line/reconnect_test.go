package line_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/session"
)

// TestWaiterSleepsOnAcrossAReconnect: a waiter whose connection drops while
// its session lives goes back to sleep on the watches it had
// (go-zookeeper sets them again on the server, which fires those whose
// node changed meanwhile) instead of listing the line again: it is granted
// by its predecessor's deletion, whether that came after the reconnection
// or during the outage, with no listing of the line after the drop. Ten
// thousand waiters of a dropped server each listed the line of ten
// thousand again when it came back (a benchmark's server ran out of heap).
func TestWaiterSleepsOnAcrossAReconnect(t *testing.T) {
	for _, tc := range []struct {
		name   string
		during bool // the holder's node is deleted during the outage
	}{{"deleted after", false}, {"deleted during the outage", true}} {
		t.Run(tc.name, func(t *testing.T) { // not in parallel: it counts the server's watches
			path := testutil.UniquePath(t, "reconnect")
			ctx := testutil.Ctx(t, 60*time.Second)
			hs := testutil.Open(t, zk.Servers())
			head := enter(t, hs, &line.Line{Sess: hs, Path: path})
			base := testutil.WatchCount(t, zk, 0)

			lists := testutil.NewListings(path)
			ws, p := testutil.Proxied(t, zk, 15*time.Second, session.WithDialer(lists.Dial))
			wl := &line.Line{Sess: ws, Path: path}
			own := enter(t, ws, wl)
			got := sleepInLine(t, ctx, wl, own)
			before := lists.Count()
			require.Positive(t, before, "the waiter's listings are counted")

			p.Refuse(true)
			p.Sever()
			require.Eventually(t, func() bool { _, live := ws.Current(); return !live }, 10*time.Second, 2*time.Millisecond)
			if tc.during {
				deleteNode(t, hs, head.Path)
			}
			p.Refuse(false)
			if !tc.during {
				require.Eventually(t, func() bool { _, live := ws.Current(); return live }, 10*time.Second, 2*time.Millisecond)
				// The reconnection set the waiter's watches again: on the
				// head's data (for a mark) and on its deletion.
				require.Eventually(t, func() bool { return testutil.WatchCount(t, zk, 0) == base+2 }, 20*time.Second, 2*time.Millisecond)
				select {
				case err := <-got:
					t.Fatalf("granted while the head is in line: %v", err)
				default:
				}
				deleteNode(t, hs, head.Path)
			}
			select {
			case err := <-got:
				require.NoError(t, err)
			case <-ctx.Done():
				t.Fatal("the waiter was never granted")
			}
			require.Equal(t, own.SessionID, ws.SessionID(), "the waiter's session lived through the outage")
			require.Equal(t, before, lists.Count(), "listings of the line after the connection dropped")
		})
	}
}

// sleepInLine starts own's wait in line (awaitAcross, with the head's turn)
// and returns once it sleeps (its watches set: AwaitOptions.OnWatch) with
// the channel its result will come on. A wait that ends first fails the
// test: the waiter was granted while the line's head was there.
func sleepInLine(t *testing.T, ctx context.Context, l *line.Line, own *line.Node) <-chan error {
	t.Helper()
	watching := make(chan struct{})
	var once sync.Once
	opt := line.AwaitOptions{OnWatch: func([]line.Name, int, int) { once.Do(func() { close(watching) }) }}
	got := make(chan error, 1)
	go func() { got <- awaitAcross(ctx, l, own, opt) }()
	select {
	case <-watching:
	case err := <-got:
		t.Fatalf("%s granted while the head is in line: %v", own.Name.Name, err)
	}
	return got
}

// awaitAcross waits in line as Await's callers do: again in the next epoch
// when one ends.
func awaitAcross(ctx context.Context, l *line.Line, own *line.Node, opt line.AwaitOptions) error {
	for {
		ep, err := l.Sess.Wait(ctx)
		if err != nil {
			return err
		}
		err = l.AwaitWith(ctx, ep, own, line.HeadTurn, opt)
		if err == nil || !line.Retryable(err) {
			return err
		}
	}
}

func deleteNode(t *testing.T, s *session.Session, path string) {
	t.Helper()
	ep, err := s.Wait(testutil.Ctx(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, ep.Conn().Delete(path, -1))
}

// TestWaitersOfOneSessionSleepOnAcrossAReconnect: two waiters of one
// session, one behind the other, behind another session's head; the head
// leaves during the outage. After the reconnection the first is granted
// by the head's deletion and the second, still asleep, by the first's
// release (marked, as a holder that waited releases): neither lists the
// line after the drop.
func TestWaitersOfOneSessionSleepOnAcrossAReconnect(t *testing.T) {
	path := testutil.UniquePath(t, "reconnect")
	ctx := testutil.Ctx(t, 60*time.Second)
	hs := testutil.Open(t, zk.Servers())
	head := enter(t, hs, &line.Line{Sess: hs, Path: path})

	lists := testutil.NewListings(path)
	ws, p := testutil.Proxied(t, zk, 15*time.Second, session.WithDialer(lists.Dial))
	wl := &line.Line{Sess: ws, Path: path}
	var owns [2]*line.Node
	var got [2]<-chan error
	for i := range owns {
		owns[i] = enter(t, ws, wl)
		got[i] = sleepInLine(t, ctx, wl, owns[i])
	}
	before := lists.Count()
	require.EqualValues(t, 2, before, "each waiter's entry lists the line once")

	p.Refuse(true)
	p.Sever()
	require.Eventually(t, func() bool { _, live := ws.Current(); return !live }, 10*time.Second, 2*time.Millisecond)
	deleteNode(t, hs, head.Path)
	p.Refuse(false)
	select {
	case err := <-got[0]:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("the first waiter was never granted")
	}
	select {
	case err := <-got[1]:
		t.Fatalf("the second waiter granted while the first holds: %v", err)
	default:
	}
	// The first releases as a holder that waited does: it marks its node
	// (writes its data again), then deletes it (see
	// line.AwaitOptions.MarkOnRelease). The second, told of the mark, is
	// granted by the deletion without listing.
	ep, err := ws.Wait(ctx)
	require.NoError(t, err)
	_, err = ep.Conn().Set(owns[0].Path, []byte{}, 0)
	require.NoError(t, err)
	deleteNode(t, ws, owns[0].Path)
	select {
	case err := <-got[1]:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("the second waiter was never granted")
	}
	require.Equal(t, owns[1].SessionID, ws.SessionID(), "the waiters' session lived through the outage")
	require.Equal(t, before, lists.Count(), "listings of the line after the connection dropped")
}
