package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// isClosed reports whether c is closed now.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Every hold's two end signals: Unlock ends Context and leaves Lost open (a
// release is no loss, even when the session is lost later); a loss (the
// session expired) closes Lost and ends Context. For a fair lock, a non-fair
// lock and each side of a read-write lock.
func TestLostOnlyOnLossContextOnEither(t *testing.T) {
	type side struct {
		lock   func(context.Context) error
		unlock func(context.Context) error
		m      *mutex.Mutex
	}
	cases := map[string]func(*session.Session, string) (side, error){
		"fair": func(s *session.Session, p string) (side, error) {
			m, err := mutex.New(s, p)
			return side{m.Lock, m.Unlock, m}, err
		},
		"nonfair": func(s *session.Session, p string) (side, error) {
			m, err := mutex.New(s, p, mutex.NonFair())
			return side{m.Lock, m.Unlock, m}, err
		},
		"rw-write": func(s *session.Session, p string) (side, error) {
			rw, err := mutex.NewRW(s, p)
			if err != nil {
				return side{}, err
			}
			return side{rw.Lock, rw.Unlock, rw.Writer()}, nil
		},
		"rw-read": func(s *session.Session, p string) (side, error) {
			rw, err := mutex.NewRW(s, p)
			if err != nil {
				return side{}, err
			}
			return side{rw.RLock, rw.RUnlock, rw.Reader()}, nil
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			tap := zktest.NewTap()
			s := open(t, zk.Servers(), session.WithSessionTimeout(2*time.Second), session.WithDialer(tap.Dialer(nil)))
			ctx := ctxT(t, 30*time.Second)
			x, err := mk(s, uniquePath(t))
			require.NoError(t, err)

			require.NoError(t, x.lock(ctx))
			lost1, ctx1 := x.m.Lost(), x.m.Context()
			require.False(t, isClosed(lost1))
			require.NoError(t, ctx1.Err())
			require.NoError(t, x.unlock(ctx))
			require.Error(t, ctx1.Err(), "Unlock ends the hold's Context")
			require.False(t, isClosed(lost1), "Unlock closed Lost: a release is no loss")

			require.NoError(t, x.lock(ctx))
			lost2, ctx2 := x.m.Lost(), x.m.Context()
			cred, ok := tap.Credentials(s.SessionID())
			require.True(t, ok)
			require.NoError(t, zktest.ExpireSession(ctx, zk.Servers(), cred))
			select {
			case <-lost2:
			case <-ctx.Done():
				t.Fatal("Lost not closed on expiry")
			}
			require.Error(t, ctx2.Err(), "a loss ends Context too")
			require.False(t, isClosed(lost1), "the epoch's end closed the Lost of a hold released before it")
			require.ErrorIs(t, x.unlock(ctx), mutex.ErrLost)
		})
	}
}

// Tokens cost what the docs say: nothing. A fair lock's token is its node's
// czxid, read by the hold's own-node watch right after the grant (Token
// waits for that read); concurrent first calls share it. A non-fair lock's
// grant knows its token.
func TestTokenCost(t *testing.T) {
	for _, fair := range []bool{true, false} {
		t.Run(fmt.Sprint("fair=", fair), func(t *testing.T) {
			s := open(t, zk.Servers())
			ctx := ctxT(t, 30*time.Second)
			var opts []mutex.Option
			if !fair {
				opts = append(opts, mutex.NonFair())
			}
			path := uniquePath(t)
			m, err := mutex.New(s, path, opts...)
			require.NoError(t, err)
			xid := func() int64 { return testutil.LastXid(t, zk, 0, s.SessionID()) }
			// Once to create the path: later rounds cost the same.
			require.NoError(t, m.Lock(ctx))
			// A child no recipe counts keeps the path (a container) in place
			// between rounds, so that no round pays for creating it again.
			ep, err := s.Wait(ctx)
			require.NoError(t, err)
			_, err = ep.Conn().Create(path+"/pin", nil, 0, s.ACL())
			require.NoError(t, err)
			require.NoError(t, m.Unlock(ctx))

			// The hold's own-node watch reads the node (its Stat: the
			// token) right after the grant, and Token waits for that read
			// (a non-fair grant knows its token): a round with one Token
			// costs what it costs, a second Token nothing. (Whether a hold
			// released at once sends the read depends on timing: the plain
			// round asks once.)
			x0 := xid()
			require.NoError(t, m.Lock(ctx))
			tok0, err := m.Token(ctx)
			require.NoError(t, err)
			testutil.Quiet(t, xid) // the non-fair hold's read, not waited for by Token
			require.NoError(t, m.Unlock(ctx))
			plain := xid() - x0

			x0 = xid()
			require.NoError(t, m.Lock(ctx))
			tok1, err := m.Token(ctx)
			require.NoError(t, err)
			first := testutil.Quiet(t, xid)
			tok2, err := m.Token(ctx)
			require.NoError(t, err)
			second := xid()
			require.NoError(t, m.Unlock(ctx))
			withToken := xid() - x0
			require.Equal(t, tok1, tok2)
			require.Greater(t, int64(tok1), int64(tok0))
			require.Zero(t, second-first, "a second Token's requests")
			require.Equal(t, plain, withToken, "Lock+Token+Token+Unlock vs Lock+Token+Unlock")

			// Concurrent first calls: one read between them.
			x0 = xid()
			require.NoError(t, m.Lock(ctx))
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					tok, err := m.Token(ctx)
					if err == nil && tok <= tok1 {
						err = errors.New("token did not grow")
					}
					errs <- err
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			testutil.Quiet(t, xid)
			require.NoError(t, m.Unlock(ctx))
			require.Equal(t, plain, xid()-x0, "Lock+four concurrent first Tokens+Unlock vs Lock+Token+Unlock")
		})
	}
}
