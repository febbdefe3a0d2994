package mutex_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

var zk *zktest.Cluster // the package's shared standalone server

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m, &zk, 1))
}

func uniquePath(t testing.TB) string { return testutil.UniquePath(t, "mutex-test") }

func open(t testing.TB, servers []string, opts ...session.Option) *session.Session {
	return testutil.Open(t, servers, opts...)
}

func ctxT(t testing.TB, d time.Duration) context.Context { return testutil.Ctx(t, d) }

func children(t *testing.T, s *session.Session, path string) []string {
	return testutil.Children(t, s, path)
}

func notifications(t *testing.T) int64 { return testutil.Notifications(t, zk, 0) }

// watches is the number of watches the server holds.
func watches(t *testing.T) int64 { return testutil.WatchCount(t, zk, 0) }
