package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// TestLeadershipReportsItsHoldsEvents: a leadership's hold reports its
// events to the session's observer as a lock's and a lease's do, once each,
// under Campaign and under Run, fair and non-fair: its grant, its pause and
// resume (PauseOnDisconnect), and its loss (its node deleted from outside).
// Issue 36 (7): on b9d4272 no election ever reported HoldLost, and a
// Campaign's leadership reported no pause either.
func TestLeadershipReportsItsHoldsEvents(t *testing.T) {
	for _, mode := range []string{"campaign", "run"} {
		for _, fair := range []bool{true, false} {
			t.Run(mode+map[bool]string{true: "/fair", false: "/nonfair"}[fair], func(t *testing.T) {
				leadershipEvents(t, mode, fair)
			})
		}
	}
}

func leadershipEvents(t *testing.T, mode string, fair bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	rec := &testutil.Recorder{}
	s := open(t, p.Addrs(), session.WithObserver(rec), session.WithSessionTimeout(8*time.Second),
		session.WithDisconnectPolicy(session.PauseOnDisconnect))
	path := uniquePath(t)
	var opts []election.Option
	if !fair {
		opts = append(opts, election.NonFair())
	}
	e, err := election.New(s, path, "a", opts...)
	require.NoError(t, err)
	leaderships := make(chan *election.Leadership, 4)
	if mode == "campaign" {
		l, err := e.Campaign(ctx)
		require.NoError(t, err)
		leaderships <- l
	} else {
		rctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- e.Run(rctx, election.Callbacks{OnElected: func(c context.Context, _ election.Term) {
				leaderships <- e.Leadership()
				<-c.Done()
			}})
		}()
		t.Cleanup(func() { stop(); <-done })
	}
	l := <-leaderships
	require.Eventually(t, func() bool { return rec.Count(observe.Acquired, "election", path) == 1 }, 5*time.Second, time.Millisecond)

	p.Sever() // a blip: the same session comes back
	require.Eventually(t, func() bool { return rec.Count(observe.HoldResumed, "election", path) == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, 1, rec.Count(observe.HoldPaused, "election", path), "one pause, reported once")

	// Deleted from outside: the leadership is lost.
	other := open(t, zk.Servers())
	ep, err := other.Wait(ctx)
	require.NoError(t, err)
	require.NoError(t, ep.Conn().Delete(l.Hold().Node(), -1))
	select {
	case <-l.Lost():
	case <-ctx.Done():
		t.Fatal("the leadership outlived its node")
	}
	require.Eventually(t, func() bool { return rec.Count(observe.HoldLost, "election", path) == 1 }, 5*time.Second, time.Millisecond,
		"the leadership's loss is reported to the observer")
}
