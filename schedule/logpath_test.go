package schedule

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// lockedBuffer is a log sink written by the session's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLeadershipLogNamesPath: the schedule's leadership, paused by a lost
// connection and resumed, logs both with its election's path (they said
// path="": an election's hold was never told its path).
func TestLeadershipLogNamesPath(t *testing.T) {
	path := uniquePath(t)
	p, err := zktest.NewProxy(zkc.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	var logs lockedBuffer
	sess := testutil.Open(t, p.Addrs(), session.WithSessionTimeout(6*time.Second),
		session.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	ran := make(chan struct{}, 100)
	c := start(t, sess, path, "a", time.Hour, func(context.Context, Tick) error { ran <- struct{}{}; return nil },
		WithElection(election.WithDisconnectPolicy(session.PauseOnDisconnect)))
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("tick 0 never ran")
	}
	l := c.s.e.Leadership()
	require.NotNil(t, l)
	p.Refuse(true)
	p.Sever()
	select {
	case <-l.Paused():
	case <-time.After(10 * time.Second):
		t.Fatal("leadership did not pause")
	}
	p.Refuse(false)
	require.NoError(t, l.Gate(testutil.Ctx(t, 20*time.Second)))
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "hold resumed") }, 10*time.Second, 10*time.Millisecond)
	var n int
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "hold paused") || strings.Contains(line, "hold resumed") {
			n++
			require.Contains(t, line, "path="+sess.Path(path)+"/leader", line)
		}
	}
	require.Equal(t, 2, n, logs.String())
}
