package gocron_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	"github.com/shepherdzk/shepherd/zktest"
)

var zkc *zktest.Cluster

// TestMain runs the helper process when the test binary is re-executed as
// one (helperEnv set), else the tests, against one ZooKeeper server.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	c, err := zktest.StartCluster(testCtx(2*time.Minute), 1)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zktest:", err)
		os.Exit(1)
	}
	zkc = c
	code := m.Run()
	c.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// offsetClock is the real clock, off by a fixed offset: a host whose clock
// is skewed (gocron's WithClock).
type offsetClock struct {
	clockwork.Clock
	off time.Duration
}

func newOffsetClock(off time.Duration) clockwork.Clock {
	return offsetClock{Clock: clockwork.NewRealClock(), off: off}
}

func (c offsetClock) Now() time.Time                  { return time.Now().Add(c.off) }
func (c offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c offsetClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }
