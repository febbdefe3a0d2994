package pgtest_test

import (
	"context"
	"database/sql"
	"os"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/shepherdzk/shepherd/internal/pgtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A server starts on a loopback port, takes connections over TCP, runs as
// the postgres user when the test runs as root, and Close stops it and
// removes its directory.
func TestStartAndClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := pgtest.Start(ctx)
	if err != nil {
		require.ErrorIs(t, err, pgtest.ErrNotInstalled)
		t.Skip(err)
	}
	defer s.Close()
	db, err := sql.Open("pgx", s.DSN("postgres"))
	require.NoError(t, err)
	defer db.Close()
	var who string
	require.NoError(t, db.QueryRowContext(ctx, "SELECT current_user").Scan(&who))
	require.Equal(t, pgtest.User, who)
	var addr string
	require.NoError(t, db.QueryRowContext(ctx, "SELECT host(inet_server_addr())").Scan(&addr))
	require.Equal(t, "127.0.0.1", addr)
	var pid int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid))
	st, err := os.Stat(s.SocketDir())
	require.NoError(t, err)
	if os.Geteuid() == 0 {
		require.NotZero(t, st.Sys().(*syscall.Stat_t).Uid, "as root, the server runs as the postgres user")
	}
	db.Close()

	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	_, err = os.Stat(s.SocketDir())
	require.True(t, os.IsNotExist(err), "the directory is removed")
	require.Error(t, syscall.Kill(pid, 0), "the server's processes are gone")
}

// Two servers start side by side (parallel test packages each start one).
func TestTwoServers(t *testing.T) {
	a, b := pgtest.StartT(t), pgtest.StartT(t)
	require.NotEqual(t, a.Port(), b.Port())
	require.NotEqual(t, a.SocketDir(), b.SocketDir())
}

// Without the binaries, Start says what to install, as an error matching
// ErrNotInstalled (on which StartT skips).
func TestNotInstalled(t *testing.T) {
	t.Setenv("PGTEST_BINDIR", t.TempDir())
	_, err := pgtest.Start(context.Background())
	require.ErrorIs(t, err, pgtest.ErrNotInstalled)
	require.ErrorContains(t, err, "apt-get install postgresql")
}

// A Lazy server starts at its first Get, once, and gives each test a
// database of its own.
func TestLazy(t *testing.T) {
	var l pgtest.Lazy
	defer l.Close()
	s, a := l.Database(t)
	s2, b := l.Database(t)
	require.Same(t, s, s2)
	require.NotEqual(t, a, b)
	db, err := sql.Open("pgx", s.DSN(b))
	require.NoError(t, err)
	defer db.Close()
	var name string
	require.NoError(t, db.QueryRowContext(context.Background(), "SELECT current_database()").Scan(&name))
	require.Equal(t, b, name)
	require.NoError(t, l.Close())
}
