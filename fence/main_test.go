package fence_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/shepherdzk/shepherd/internal/pgtest"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/zktest"
)

var zk *zktest.Cluster

// pg is the package's PostgreSQL server, started by the first test that
// needs it.
var pg pgtest.Lazy

// TestMain is testutil.Main's, with PostgreSQL stopped before the leak
// check; a holder process of TestFrozenHolder runs runHolder instead.
func TestMain(m *testing.M) {
	if os.Getenv(holderEnv) != "" {
		os.Exit(runHolder())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cl, err := zktest.StartCluster(ctx, 1)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	zk = cl
	code := m.Run()
	pg.Close()
	cl.Close()
	if code == 0 {
		if err := testutil.Leaks(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
