package mutex_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
)

// TestTopLevelPath: every lock (fair, non-fair, both sides of the read-write
// lock) directly under the root, and directly under a namespace's own root
// (a path with no parent of its own to create), is taken, held and released
// like any other, and leaves nothing behind but what it documents: its
// container nodes (which the server removes) and a non-fair race's
// persistent path.
func TestTopLevelPath(t *testing.T) {
	locks := []struct {
		name    string
		nonFair bool // the path is persistent (see race.Race)
		lock    func(context.Context, *session.Session, string) (*mutex.Mutex, func(context.Context) error, error)
	}{
		{"fair", false, func(ctx context.Context, s *session.Session, path string) (*mutex.Mutex, func(context.Context) error, error) {
			m, err := mutex.New(s, path)
			if err != nil {
				return nil, nil, err
			}
			return m, m.Unlock, m.Lock(ctx)
		}},
		{"nonfair", true, func(ctx context.Context, s *session.Session, path string) (*mutex.Mutex, func(context.Context) error, error) {
			m, err := mutex.New(s, path, mutex.NonFair())
			if err != nil {
				return nil, nil, err
			}
			return m, m.Unlock, m.Lock(ctx)
		}},
		{"RLock", false, func(ctx context.Context, s *session.Session, path string) (*mutex.Mutex, func(context.Context) error, error) {
			rw, err := mutex.NewRW(s, path)
			if err != nil {
				return nil, nil, err
			}
			return rw.Reader(), rw.RUnlock, rw.RLock(ctx)
		}},
		{"Lock", false, func(ctx context.Context, s *session.Session, path string) (*mutex.Mutex, func(context.Context) error, error) {
			rw, err := mutex.NewRW(s, path)
			if err != nil {
				return nil, nil, err
			}
			return rw.Writer(), rw.Unlock, rw.Lock(ctx)
		}},
	}
	for _, namespaced := range []bool{false, true} {
		for _, l := range locks {
			t.Run(fmt.Sprintf("%s/namespace=%v", l.name, namespaced), func(t *testing.T) {
				s, path, top := testutil.OpenTopLevel(t, zk.Servers(), "lock", namespaced)
				ctx := ctxT(t, 10*time.Second)
				m, unlock, err := l.lock(ctx, s, path)
				require.NoError(t, err)
				require.True(t, m.IsHeld())
				require.NoError(t, m.Validate(ctx), "the lock is not held")
				full := m.Path()
				require.NotEmpty(t, testutil.Leftovers(t, s, top, top, full), "no node holds the lock")
				require.NoError(t, unlock(ctx))
				require.False(t, m.IsHeld())
				require.Empty(t, testutil.Leftovers(t, s, top, top, full), "left behind")
				if l.nonFair {
					require.NotEqual(t, int32(-1), testutil.Version(t, s, full), "the non-fair path is persistent")
				}
			})
		}
	}
}
