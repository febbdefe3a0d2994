package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// Under Run, OnElected's ctx is the leadership's Context, and
// Election.Leadership gives its Lost, Validate and Fenced. A loss (the
// connection stalled) closes Lost; Run's end (no loss) leaves it open.
func TestRunLeadership(t *testing.T) {
	p, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	// 5 s: the stall is seen after 2/3 of it, and the same session must be
	// back before the manager declares it lost (49/50 of it, by its own
	// clock): under load (the chaos package beside) 3 s left too little.
	s := open(t, p.Addrs(), session.WithSessionTimeout(5*time.Second))
	ctx := testutil.Ctx(t, 40*time.Second)
	e, err := election.New(s, uniquePath(t), "a")
	require.NoError(t, err)
	type grant struct {
		l   *election.Leadership
		ctx context.Context
	}
	got := make(chan grant, 4)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- e.Run(runCtx, election.Callbacks{OnElected: func(lctx context.Context, term election.Term) {
			l := e.Leadership()
			if l != nil && l.Term() != term {
				l = nil
			}
			got <- grant{l, lctx}
			<-lctx.Done()
		}})
	}()
	first := <-got
	require.NotNil(t, first.l)
	require.Same(t, first.l.Context(), first.ctx, "OnElected's ctx is the leadership's Context")
	require.NoError(t, first.l.Validate(ctx))
	p.Stall()
	select {
	case <-first.l.Lost():
	case <-ctx.Done():
		t.Fatal("Lost not closed when the connection stalled")
	}
	require.Error(t, first.ctx.Err())
	p.Heal()
	// The same session comes back with its node at the head: led again, same term.
	var second grant
	select {
	case second = <-got:
	case <-ctx.Done():
		t.Fatal("not elected again after the connection came back")
	}
	require.NotNil(t, second.l)
	require.Equal(t, first.l.Term(), second.l.Term())
	stop()
	require.NoError(t, <-done)
	require.Error(t, second.ctx.Err())
	require.False(t, testutil.IsClosed(second.l.Lost()), "Run's end closed Lost: no loss")
	require.Nil(t, e.Leadership())
}

// After a loss its session survives (the connection was severed and comes
// back at once, well within the session timeout), Campaign again leads at
// once with the same term: the node kept its place. No Resign is needed in
// between.
func TestCampaignAgainAfterLossKeepsThePlace(t *testing.T) {
	for _, fair := range []bool{true, false} {
		name := "fair"
		var opts []election.Option
		if !fair {
			name, opts = "nonfair", []election.Option{election.NonFair()}
		}
		t.Run(name, func(t *testing.T) {
			p, err := zktest.NewProxy(zk.Servers()...)
			require.NoError(t, err)
			t.Cleanup(func() { p.Close() })
			s := open(t, p.Addrs(), session.WithSessionTimeout(8*time.Second))
			ctx := testutil.Ctx(t, 30*time.Second)
			e, err := election.New(s, uniquePath(t), "a", opts...)
			require.NoError(t, err)
			l, err := e.Campaign(ctx)
			require.NoError(t, err)
			sid := s.SessionID()
			p.Sever()
			select {
			case <-l.Lost():
			case <-ctx.Done():
				t.Fatal("Lost not closed when the connection was severed")
			}
			require.Error(t, l.Context().Err())
			l2, err := e.Campaign(ctx)
			require.NoError(t, err)
			require.Equal(t, sid, s.SessionID(), "the session survived")
			require.Equal(t, l.Term(), l2.Term(), "the same session's node leads again")
			require.NoError(t, l2.Validate(ctx))
			require.NoError(t, l2.Resign(ctx))
		})
	}
}
