package mutex_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
)

// TestSequenceExhaustedReadWrite: a lock's TryLock and the read-write lock's
// two sides refuse an empty line whose sequence counter is stuck at 2^31−1
// (ZooKeeper 3.8), as a lock's contenders do behind a holder
// (TestHoldContract/*/SequenceExhausted), and leave nothing behind.
func TestSequenceExhaustedReadWrite(t *testing.T) {
	path := "/exhausted/rwmutex"
	c := testutil.ExhaustedCounter(t, path)
	ctx := ctxT(t, 60*time.Second)
	s := open(t, c.Servers())

	// …45 and …46: granted and released; the line is empty, its counter
	// stuck.
	m, err := mutex.New(s, path)
	require.NoError(t, err)
	require.NoError(t, m.Lock(ctx))
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, m.Lock(ctx))
	held := children(t, s, path)
	require.Len(t, held, 1)
	require.True(t, strings.HasSuffix(held[0], "lock-2147483646"), held[0])
	require.NoError(t, m.Unlock(ctx))

	ok, err := m.TryLock(ctx)
	require.ErrorIs(t, err, mutex.ErrSequenceExhausted)
	require.False(t, ok)
	rw, err := mutex.NewRW(s, path)
	require.NoError(t, err)
	require.ErrorIs(t, rw.RLock(ctx), mutex.ErrSequenceExhausted)
	require.ErrorIs(t, rw.Lock(ctx), mutex.ErrSequenceExhausted)
	ok, err = rw.TryLock(ctx)
	require.ErrorIs(t, err, mutex.ErrSequenceExhausted)
	require.False(t, ok)
	require.Empty(t, children(t, s, path), "a refused side left its node behind")
}
