package election_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

func TestBadInput(t *testing.T) {
	s := open(t, zk.Servers())
	for _, id := range []string{"", "a/b", "x\n", strings.Repeat("x", election.MaxIDLen+1), "\xff"} {
		_, err := election.New(s, "/ok", id)
		require.ErrorIs(t, err, election.ErrInvalidID, "id %q", id)
	}
	for _, p := range []string{"", "rel", "/a/", "/zookeeper/x", "/a//b"} {
		_, err := election.New(s, p, "id")
		require.ErrorIs(t, err, election.ErrInvalidPath, "path %q", p)
	}
	_, err := election.New(nil, "/ok", "id")
	require.ErrorIs(t, err, election.ErrInvalidArgument)
	_, err = election.New(s, "/ok", "id", election.WithStopDeadline(0))
	require.ErrorIs(t, err, election.ErrInvalidArgument)
	e, err := election.New(s, "/ok", "id")
	require.NoError(t, err)
	require.ErrorIs(t, e.Run(context.Background(), election.Callbacks{}), election.ErrInvalidArgument)
	require.ErrorIs(t, e.Resign(context.Background()), election.ErrNotLeader)
	_, err = election.Observe(context.Background(), s, "bad")
	require.ErrorIs(t, err, election.ErrInvalidPath)
	// Nothing was created by any of it.
	ep, _ := s.Current()
	ok, _, err := ep.Conn().Exists("/ok")
	require.NoError(t, err)
	require.False(t, ok)
}

// handoffs runs n resign-driven handoffs among candidates, checking single
// leadership and growing terms.
func handoffs(t *testing.T, n int, opts ...election.Option) {
	path := uniquePath(t)
	c := newChecker()
	byID := map[string]*candidate{}
	for i := range 5 {
		id := string(rune('a' + i))
		byID[id] = startCandidate(t, c, open(t, zk.Servers()), path, id, opts...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	leader := c.waitElected(t, 10*time.Second)
	for range n {
		require.NoError(t, byID[leader].e.Resign(ctx))
		leader = c.waitElected(t, 10*time.Second)
	}
	c.check(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Len(t, c.terms, n+1)
	for i := 1; i < len(c.terms); i++ {
		require.Greater(t, c.terms[i], c.terms[i-1], "terms must grow")
	}
}

func TestHandoffsFair(t *testing.T)    { handoffs(t, 60) }
func TestHandoffsNonFair(t *testing.T) { handoffs(t, 60, election.NonFair()) }

func TestFairOrder(t *testing.T) {
	path := uniquePath(t)
	c := newChecker()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var cands []*candidate
	for i := range 5 {
		id := string(rune('a' + i))
		cd := startCandidate(t, c, open(t, zk.Servers()), path, id)
		cands = append(cands, cd)
		// Wait until it is in line before starting the next.
		require.Eventually(t, func() bool {
			ps, err := cd.e.Participants(ctx)
			return err == nil && len(ps) == i+1
		}, 10*time.Second, 10*time.Millisecond)
	}
	ps, err := cands[0].e.Participants(ctx)
	require.NoError(t, err)
	for i, p := range ps {
		require.Equal(t, string(rune('a'+i)), p.ID)
		require.Equal(t, i == 0, p.Leader)
	}
	for i := range 5 {
		id := c.waitElected(t, 10*time.Second)
		require.Equal(t, string(rune('a'+i)), id, "fair mode must elect in line order")
		cands[i].stop() // graceful: leaves the line at once
	}
	c.check(t)
}

func TestObserveAndOnLeader(t *testing.T) {
	path := uniquePath(t)
	obs := open(t, zk.Servers())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := election.Observe(ctx, obs, path)
	require.NoError(t, err)
	require.Equal(t, election.Leader{}, <-ch, "no leader yet")

	// A participant that never wins sees every leader change too.
	seen := make(chan election.Leader, 100)
	s1 := open(t, zk.Servers())
	s2 := open(t, zk.Servers())
	s3 := open(t, zk.Servers())
	e1, err := election.New(s1, path, "one")
	require.NoError(t, err)
	_, err = e1.Campaign(ctx)
	require.NoError(t, err)
	require.Equal(t, "one", (<-ch).ID)

	e2, err := election.New(s2, path, "two")
	require.NoError(t, err)
	elected2 := make(chan error, 1)
	go func() { _, err := e2.Campaign(ctx); elected2 <- err }()
	require.Eventually(t, func() bool {
		ps, err := e1.Participants(ctx)
		return err == nil && len(ps) == 2
	}, 10*time.Second, 10*time.Millisecond)

	watcher, err := election.New(s3, path, "watcher")
	require.NoError(t, err)
	wctx, wcancel := context.WithCancel(ctx)
	wdone := make(chan error, 1)
	go func() {
		wdone <- watcher.Run(wctx, election.Callbacks{
			OnElected: func(ctx context.Context, _ election.Term) { <-ctx.Done() },
			OnLeader:  func(l election.Leader) { seen <- l },
		})
	}()
	require.Equal(t, "one", (<-seen).ID)
	require.Eventually(t, func() bool {
		ps, err := e1.Participants(ctx)
		return err == nil && len(ps) == 3
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, e1.Resign(ctx))
	require.NoError(t, <-elected2)
	l := <-ch
	require.Equal(t, "two", l.ID)
	require.Equal(t, "two", (<-seen).ID)
	cur, err := e2.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, l, cur)
	require.NoError(t, e2.Validate(ctx))
	require.ErrorIs(t, e1.Validate(ctx), election.ErrNotLeader)
	require.NoError(t, e2.Resign(ctx))
	require.Equal(t, "watcher", (<-ch).ID)
	require.Equal(t, "watcher", (<-seen).ID)
	wcancel()
	require.NoError(t, <-wdone)
	require.Equal(t, election.Leader{}, <-ch)
	cancel()
	for range ch {
	}
}

func TestCampaignLostOnExpiry(t *testing.T) {
	path := uniquePath(t)
	tap := zktest.NewTap()
	s := open(t, zk.Servers(), session.WithSessionTimeout(2*time.Second), session.WithDialer(tap.Dialer(nil)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := election.New(s, path, "a")
	require.NoError(t, err)
	l, err := e.Campaign(ctx)
	require.NoError(t, err)
	require.Positive(t, int64(l.Term()))
	require.True(t, e.IsLeader())
	require.Same(t, l, e.Leadership())
	_, err = e.Campaign(ctx)
	require.ErrorIs(t, err, election.ErrBusy)
	cred, ok := tap.Credentials(s.SessionID())
	require.True(t, ok)
	require.NoError(t, zktest.ExpireSession(ctx, zk.Servers(), cred))
	select {
	case <-l.Lost():
	case <-ctx.Done():
		t.Fatal("leadership not lost on expiry")
	}
	select {
	case <-l.Context().Done():
	default:
		t.Fatal("Lost closed but Context has not ended")
	}
	require.False(t, e.IsLeader())
	require.Nil(t, e.Leadership())
	require.ErrorIs(t, e.Validate(ctx), election.ErrNotLeader)
	require.ErrorIs(t, l.Validate(ctx), election.ErrLost)
	_, err = l.Fenced(ctx)
	require.ErrorIs(t, err, election.ErrLost)
	// After a loss, Campaign again (no Resign needed): a new session, a new
	// node, a later term.
	l2, err := e.Campaign(ctx)
	require.NoError(t, err)
	require.Greater(t, l2.Term(), l.Term())
	require.ErrorIs(t, l.Resign(ctx), election.ErrNotLeader, "the lost leadership is not the current one")
	require.NoError(t, l2.Resign(ctx))
}

func TestStopDeadline(t *testing.T) {
	path := uniquePath(t)
	s := open(t, zk.Servers())
	stuck := make(chan election.Term, 1)
	e, err := election.New(s, path, "slow", election.WithStopDeadline(200*time.Millisecond),
		election.WithStuckHandler(func(term election.Term) { stuck <- term }))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	elected := make(chan election.Term, 1)
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, election.Callbacks{OnElected: func(_ context.Context, term election.Term) {
			elected <- term
			<-release // ignores its ctx
		}})
	}()
	term := <-elected
	cancel()
	select {
	case got := <-stuck:
		require.Equal(t, term, got)
	case <-time.After(10 * time.Second):
		t.Fatal("stuck callback not reported")
	}
	close(release)
	err = <-done
	require.True(t, errors.Is(err, election.ErrStopDeadline), "Run returned %v", err)
}

// An invalid option (a stop deadline that is not positive, a nil option) is
// an error from New, never a panic, and leaves nothing in ZooKeeper.
func TestBadOption(t *testing.T) {
	s := open(t, zk.Servers())
	path := uniquePath(t)
	for name, opt := range map[string]election.Option{
		"zero stop deadline":     election.WithStopDeadline(0),
		"negative stop deadline": election.WithStopDeadline(-time.Second),
		"nil option":             nil,
	} {
		e, err := election.New(s, path, "id", election.NonFair(), opt)
		require.ErrorIs(t, err, election.ErrInvalidArgument, name)
		require.Nil(t, e, name)
	}
	ep, err := s.Wait(context.Background())
	require.NoError(t, err)
	ok, _, err := ep.Conn().Exists(path)
	require.NoError(t, err)
	require.False(t, ok, "a refused New created %s", path)
}

// A fair and a non-fair election on one path would each elect a leader (the
// line's candidates do not see the race's node, nor the race the line): the
// second to come refuses the path with ErrWrongKind, and no second leader
// is elected, whichever came first.
func TestFairAndNonFairOnOnePathRefuse(t *testing.T) {
	for _, first := range []string{"fair", "non-fair"} {
		t.Run(first+" first", func(t *testing.T) {
			path := uniquePath(t)
			c := newChecker()
			mode := func(fair bool) []election.Option {
				if fair {
					return nil
				}
				return []election.Option{election.NonFair()}
			}
			startCandidate(t, c, open(t, zk.Servers()), path, "a", mode(first == "fair")...)
			require.Equal(t, "a", c.waitElected(t, 10*time.Second))

			e, err := election.New(open(t, zk.Servers()), path, "b", mode(first != "fair")...)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = e.Run(ctx, election.Callbacks{OnElected: func(ctx context.Context, term election.Term) {
				c.onElected("b", ctx, term)
				<-ctx.Done()
			}})
			require.ErrorIs(t, err, election.ErrWrongKind)
			require.ErrorContains(t, err, path, "the error names the path")
			c.check(t)
			select {
			case id := <-c.elected:
				t.Fatalf("%s elected beside a", id)
			default:
			}
		})
	}
}
