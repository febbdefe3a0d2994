package fence_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/schedule"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// holdKind is a kind of hold: acquire takes one (returning it), and limit
// is how many are held at once (1: exclusive).
type holdKind struct {
	name    string
	limit   int
	acquire func(ctx context.Context, s *session.Session, path, id string) (*hold.Hold, error)
}

var holdKinds = []holdKind{
	{"mutex-fair", 1, lockHold()},
	{"mutex-nonfair", 1, lockHold(mutex.NonFair())},
	{"rw-writer", 1, func(ctx context.Context, s *session.Session, path, _ string) (*hold.Hold, error) {
		rw, err := mutex.NewRW(s, path)
		if err != nil {
			return nil, err
		}
		if err := rw.Lock(ctx); err != nil {
			return nil, err
		}
		return rw.Writer().Hold(), nil
	}},
	{"election-fair", 1, leadHold()},
	{"election-nonfair", 1, leadHold(election.NonFair())},
	{"semaphore-1", 1, leaseHold(1)},
	{"semaphore-3", 3, leaseHold(3)},
}

func lockHold(opts ...mutex.Option) func(context.Context, *session.Session, string, string) (*hold.Hold, error) {
	return func(ctx context.Context, s *session.Session, path, _ string) (*hold.Hold, error) {
		m, err := mutex.New(s, path, opts...)
		if err != nil {
			return nil, err
		}
		if err := m.Lock(ctx); err != nil {
			return nil, err
		}
		return m.Hold(), nil
	}
}

func leadHold(opts ...election.Option) func(context.Context, *session.Session, string, string) (*hold.Hold, error) {
	return func(ctx context.Context, s *session.Session, path, id string) (*hold.Hold, error) {
		e, err := election.New(s, path, id, opts...)
		if err != nil {
			return nil, err
		}
		l, err := e.Campaign(ctx)
		if err != nil {
			return nil, err
		}
		return l.Hold(), nil
	}
}

func leaseHold(max int) func(context.Context, *session.Session, string, string) (*hold.Hold, error) {
	return func(ctx context.Context, s *session.Session, path, _ string) (*hold.Hold, error) {
		sem, err := semaphore.New(s, path, max)
		if err != nil {
			return nil, err
		}
		l, err := sem.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		return l.Hold(), nil
	}
}

// grant is one hold taken in TestTokensGrow.
type grant struct {
	hold  *hold.Hold
	token hold.Token
}

// TestTokensGrow: for every kind of hold, a holder granted after another
// has a higher token: after the first holder's session expired (the next
// in line granted; for a non-fair lock or election, the one node created
// again, under the same name), after the whole ensemble was restarted (a
// new ZooKeeper epoch: the token's high 32 bits grow), and, on a
// semaphore, for every later grant, whoever else holds. Tokens are
// ZooKeeper zxids, ordered across the ensemble.
func TestTokensGrow(t *testing.T) {
	c := zktest.Start(t, 3)
	ctx := testutil.Ctx(t, 3*time.Minute)
	open := func(tap *zktest.Tap) *session.Session {
		opts := []session.Option{session.WithSessionTimeout(4 * time.Second)}
		if tap != nil {
			opts = append(opts, session.WithDialer(tap.Dialer(nil)))
		}
		return testutil.Open(t, c.Servers(), opts...)
	}
	take := func(k holdKind, path, id string, s *session.Session) grant {
		h, err := k.acquire(ctx, s, path, id)
		require.NoError(t, err, "%s %s", k.name, id)
		tok, err := h.Token(ctx)
		require.NoError(t, err)
		return grant{h, tok}
	}
	type pending struct {
		kind holdKind
		path string
		last grant
	}
	var afterExpiry []pending
	for _, k := range holdKinds {
		path := testutil.UniquePath(t, "fence-tokens")
		// The limit held: the first holder (to be expired) and the others.
		tap := zktest.NewTap()
		first := open(tap)
		held := []grant{take(k, path, "a", first)}
		for i := 1; i < k.limit; i++ {
			held = append(held, take(k, path, fmt.Sprintf("x%d", i), open(nil)))
		}
		next := open(nil)
		got := make(chan grant, 1)
		go func() {
			h, err := k.acquire(ctx, next, path, "b")
			if err != nil {
				got <- grant{}
				return
			}
			tok, _ := h.Token(ctx)
			got <- grant{h, tok}
		}()
		cred, ok := tap.Credentials(first.SessionID())
		require.True(t, ok)
		require.NoError(t, zktest.ExpireSession(ctx, c.Servers(), cred))
		b := <-got
		require.NotNil(t, b.hold, "%s: no grant after the holder's session expired", k.name)
		for _, h := range held {
			require.Greater(t, b.token, h.token, "%s: granted after an expiry", k.name)
		}
		if k.name == "mutex-nonfair" || k.name == "election-nonfair" {
			require.Equal(t, held[0].hold.Node(), b.hold.Node(), "%s: the one node, created again", k.name)
		}
		t.Logf("%s: tokens %v held, %d granted after the first's expiry", k.name, tokens(held), b.token)
		afterExpiry = append(afterExpiry, pending{k, path, b})
	}

	require.NoError(t, c.RestartAll(ctx))
	for _, p := range afterExpiry {
		// Lost at the restart (or still held: released now).
		if err := p.last.hold.Release(ctx); err != nil {
			require.ErrorIs(t, err, recipe.ErrLost)
		}
		g := take(p.kind, p.path, "c", open(nil))
		require.Greater(t, g.token, p.last.token, "%s: granted after a restart", p.kind.name)
		require.Greater(t, g.token>>32, p.last.token>>32, "%s: a new epoch", p.kind.name)
		t.Logf("%s: token %d (epoch %d), after the restart %d (epoch %d)", p.kind.name,
			p.last.token, p.last.token>>32, g.token, g.token>>32)
	}
}

func tokens(gs []grant) []hold.Token {
	out := make([]hold.Token, len(gs))
	for i, g := range gs {
		out[i] = g.token
	}
	return out
}

// TestScheduleTermGrows: a schedule's tick interrupted by its leader's
// session expiry is run again by the next leader (another candidate, or the
// same one on its new session) with a higher Term, the tick's number the
// same: a resource fenced with Tick.Term refuses the first leadership's
// late writes for that tick.
func TestScheduleTermGrows(t *testing.T) {
	path := testutil.UniquePath(t, "fence-schedule")
	ctx := testutil.Ctx(t, 60*time.Second)
	type run struct {
		id   string
		tick schedule.Tick
	}
	runs := make(chan run, 4)
	start := func(id string, s *session.Session) {
		sc, err := schedule.New(s, path, id, time.Hour)
		require.NoError(t, err)
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = sc.Run(runCtx, func(jobCtx context.Context, tk schedule.Tick) error {
				runs <- run{id, tk}
				<-jobCtx.Done() // runs until its leadership ends
				return jobCtx.Err()
			})
		}()
		t.Cleanup(func() { stop(); <-done })
	}
	tap := zktest.NewTap()
	sa := testutil.Open(t, zk.Servers(), session.WithSessionTimeout(4*time.Second), session.WithDialer(tap.Dialer(nil)))
	start("a", sa)
	first := <-runs
	require.Equal(t, "a", first.id)
	start("b", testutil.Open(t, zk.Servers(), session.WithSessionTimeout(4*time.Second)))
	cred, ok := tap.Credentials(sa.SessionID())
	require.True(t, ok)
	require.NoError(t, zktest.ExpireSession(ctx, zk.Servers(), cred))
	var second run
	select {
	case second = <-runs:
	case <-ctx.Done():
		t.Fatal("the tick was never run again")
	}
	// The next leader: b, or a again on its new session if it joined the
	// line before b did. Either way a leadership of its own.
	require.Equal(t, first.tick.N, second.tick.N, "the interrupted tick, again")
	require.Equal(t, 2, second.tick.Attempt)
	require.Greater(t, second.tick.Term, first.tick.Term)
	t.Logf("tick %d: attempt 1 by %s with term %d, attempt 2 by %s (the next leader) with term %d",
		first.tick.N, first.id, first.tick.Term, second.id, second.tick.Term)
}
