package mutex_test

import (
	"context"
	"errors"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
)

// locker is one side of a lock: a Mutex, or a read-write lock's read or
// write side.
type locker struct {
	lock   func(context.Context) error
	try    func(context.Context) (bool, error)
	unlock func(context.Context) error
	held   func() bool
}

func lockerOf(m *mutex.Mutex) locker {
	return locker{lock: m.Lock, try: m.TryLock, unlock: m.Unlock, held: m.IsHeld}
}

// lockKinds builds, for each kind of lock, a lock at path in s.
var lockKinds = []struct {
	name string
	make func(t *testing.T, s *session.Session, path string) locker
}{
	{"fair", func(t *testing.T, s *session.Session, path string) locker {
		m, err := mutex.New(s, path)
		require.NoError(t, err)
		return lockerOf(m)
	}},
	{"nonfair", func(t *testing.T, s *session.Session, path string) locker {
		m, err := mutex.New(s, path, mutex.NonFair())
		require.NoError(t, err)
		return lockerOf(m)
	}},
	{"rw-write", func(t *testing.T, s *session.Session, path string) locker {
		rw, err := mutex.NewRW(s, path)
		require.NoError(t, err)
		return locker{lock: rw.Lock, try: rw.TryLock, unlock: rw.Unlock, held: rw.Writer().IsHeld}
	}},
}

// TestUnlockWithDoneCtxLetsGo: Unlock with a cancelled or expired ctx
// releases the lock all the same (the ctx only bounds the wait for the
// server's confirmation): another session gets it, and the value does not
// re-enter a hold it gave up.
func TestUnlockWithDoneCtxLetsGo(t *testing.T) {
	for _, k := range lockKinds {
		for _, how := range []string{"cancelled", "expired"} {
			t.Run(k.name+"/"+how, func(t *testing.T) {
				path := uniquePath(t)
				ctx := ctxT(t, 30*time.Second)
				m := k.make(t, open(t, zk.Servers()), path)
				other := k.make(t, open(t, zk.Servers()), path)
				require.NoError(t, m.lock(ctx))
				var done context.Context
				var cancel context.CancelFunc
				if how == "cancelled" {
					done, cancel = context.WithCancel(ctx)
				} else {
					done, cancel = context.WithDeadline(ctx, time.Now().Add(-time.Second))
				}
				cancel()
				if err := m.unlock(done); err != nil {
					require.True(t, errors.Is(err, done.Err()), "Unlock: %v", err)
				}
				require.False(t, m.held(), "the value still holds the lock")
				octx, ocancel := context.WithTimeout(ctx, 10*time.Second)
				defer ocancel()
				require.NoError(t, other.lock(octx), "the lock was not released")
				ok, err := m.try(ctx)
				require.NoError(t, err)
				require.False(t, ok, "the value re-entered a hold it had given up")
				require.NoError(t, other.unlock(ctx))
			})
		}
	}
}

// TestTwoValuesOneSession: two lock values sharing one session exclude each
// other like two processes.
func TestTwoValuesOneSession(t *testing.T) {
	for _, k := range lockKinds {
		t.Run(k.name, func(t *testing.T) {
			path := uniquePath(t)
			ctx := ctxT(t, 30*time.Second)
			s := open(t, zk.Servers())
			one, two := k.make(t, s, path), k.make(t, s, path)
			require.NoError(t, one.lock(ctx))
			ok, err := two.try(ctx)
			require.NoError(t, err)
			require.False(t, ok, "TryLock granted beside the other value of the session")
			short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			require.ErrorIs(t, two.lock(short), context.DeadlineExceeded)
			cancel()
			got := make(chan error, 1)
			go func() { got <- two.lock(ctx) }()
			require.NoError(t, one.unlock(ctx))
			require.NoError(t, <-got)
			require.True(t, two.held())
			require.False(t, one.held())
			require.NoError(t, two.unlock(ctx))
		})
	}
}

// TestFencedAfterLossIsErrLost: a fenced write whose connection is lost
// while it is in flight (it was applied; its answer was lost) fails with an
// error matching ErrLost, not a raw connection error.
func TestFencedAfterLossIsErrLost(t *testing.T) {
	for _, k := range []string{"fair", "nonfair"} {
		t.Run(k, func(t *testing.T) {
			var opts []mutex.Option
			if k == "nonfair" {
				opts = append(opts, mutex.NonFair())
			}
			path := uniquePath(t)
			ctx := ctxT(t, 30*time.Second)
			s, p := proxied(t, 4*time.Second)
			m, err := mutex.New(s, path, opts...)
			require.NoError(t, err)
			require.NoError(t, m.Lock(ctx))
			admin := open(t, zk.Servers())
			aep, err := admin.Wait(ctx)
			require.NoError(t, err)
			res := admin.Path(path) + "-resource"
			_, err = aep.Conn().Create(res, []byte("0"), 0, admin.ACL())
			require.NoError(t, err)

			p.MuteReplies()
			got := make(chan error, 1)
			go func() {
				_, err := m.Fenced(ctx, fence.Raw(&gozk.SetDataRequest{Path: res, Data: []byte("1"), Version: -1}))
				got <- err
			}()
			require.Eventually(t, func() bool {
				data, _, err := aep.Conn().Get(res)
				return err == nil && string(data) == "1"
			}, 5*time.Second, 5*time.Millisecond, "the fenced write never reached the server")
			p.Heal()
			err = <-got
			require.ErrorIs(t, err, mutex.ErrLost)
			require.ErrorIs(t, m.Unlock(ctx), mutex.ErrLost)
		})
	}
}

// TestNonFairFenceChecksTheNode: the non-fair lock's fence also checks that
// the lock's node exists: a write after the node is gone is refused even
// when no one has been granted the lock since.
func TestNonFairFenceChecksTheNode(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	s := open(t, zk.Servers())
	m, err := mutex.New(s, path, mutex.NonFair())
	require.NoError(t, err)
	require.NoError(t, m.Lock(ctx))
	admin := open(t, zk.Servers())
	aep, err := admin.Wait(ctx)
	require.NoError(t, err)
	res := admin.Path(path) + "-resource"
	_, err = aep.Conn().Create(res, []byte("0"), 0, admin.ACL())
	require.NoError(t, err)
	// The node removed behind the holder's back (as the server does with an
	// expired session), and no grant since.
	require.NoError(t, aep.Conn().Delete(m.Node(), -1))
	_, err = m.Fenced(ctx, fence.Raw(&gozk.SetDataRequest{Path: res, Data: []byte("1"), Version: -1}))
	require.ErrorIs(t, err, mutex.ErrLost)
	data, _, err := aep.Conn().Get(res)
	require.NoError(t, err)
	require.Equal(t, "0", string(data))
	_ = m.Unlock(ctx)
}
