package sqlfence_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	_ "modernc.org/sqlite"

	"github.com/shepherdzk/shepherd/fence/sqlfence"
	"github.com/shepherdzk/shepherd/internal/pgtest"
)

// pg is the package's PostgreSQL server, started by the first test that
// needs it.
var pg pgtest.Lazy

func TestMain(m *testing.M) {
	code := m.Run()
	pg.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// backend is a database the fence is tested on.
type backend struct {
	name string
	db   *sql.DB
	// serial is the column type of an autoincrementing key.
	serial string
}

// postgres opens a fresh database of the package's server for the test,
// with the fence's table; it skips the test without PostgreSQL.
func postgres(t testing.TB) backend {
	t.Helper()
	srv, name := pg.Database(t)
	db, err := sql.Open("pgx", srv.DSN(name))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	require.NoError(t, sqlfence.Ensure(ctxT(t, 30*time.Second), db))
	return backend{name: "postgres", db: db, serial: "BIGSERIAL PRIMARY KEY"}
}

// sqliteDSN is the DSN this package's tests (and the docs) use: BEGIN
// IMMEDIATE, and a busy timeout.
func sqliteDSN(file string) string {
	return "file:" + file + "?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
}

// sqlite opens a fresh SQLite database file for the test, with the
// fence's table.
func sqlite(t testing.TB) backend {
	t.Helper()
	db, err := sql.Open("sqlite", sqliteDSN(filepath.Join(t.TempDir(), "fence.db")))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	require.NoError(t, sqlfence.Ensure(ctxT(t, 30*time.Second), db))
	return backend{name: "sqlite", db: db, serial: "INTEGER PRIMARY KEY AUTOINCREMENT"}
}

// eachBackend runs f on PostgreSQL and on SQLite, as subtests.
func eachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for name, open := range map[string]func(testing.TB) backend{"postgres": postgres, "sqlite": sqlite} {
		t.Run(name, func(t *testing.T) { f(t, open(t)) })
	}
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// stored is the fence's token for resource, or -1 without a row.
func stored(t testing.TB, db *sql.DB, resource string) int64 {
	t.Helper()
	var tok int64
	err := db.QueryRowContext(ctxT(t, 10*time.Second), "SELECT token FROM shepherd_fence WHERE resource = $1", resource).Scan(&tok)
	if err == sql.ErrNoRows {
		return -1
	}
	require.NoError(t, err)
	return tok
}

// guarded runs Check and then write in one transaction, committed if both
// succeed, else rolled back.
func guarded(ctx context.Context, db *sql.DB, resource string, token int64, write func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := sqlfence.Check(ctx, tx, resource, token); err != nil {
		return err
	}
	if write != nil {
		if err := write(tx); err != nil {
			return err
		}
	}
	return tx.Commit()
}
