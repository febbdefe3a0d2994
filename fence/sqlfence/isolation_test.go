package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/fence/sqlfence"
)

// begin starts a transaction at level and runs the guard in it.
func begin(t *testing.T, ctx context.Context, db *sql.DB, level sql.IsolationLevel) *sql.Tx {
	t.Helper()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: level})
	require.NoError(t, err)
	t.Cleanup(func() { tx.Rollback() })
	return tx
}

// checkAsync runs the guard in tx on another goroutine, once it is
// waiting for the fence's row lock (PostgreSQL says so in
// pg_stat_activity), and returns its result's channel.
func checkAsync(t *testing.T, ctx context.Context, db *sql.DB, tx *sql.Tx, resource string, token int64) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- sqlfence.Check(ctx, tx, resource, token) }()
	require.Eventually(t, func() bool {
		var n int
		err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO shepherd_fence%'`).Scan(&n)
		return err == nil && n == 1
	}, 10*time.Second, 2*time.Millisecond, "the second guard never waited for the first's lock")
	return done
}

// PostgreSQL at READ COMMITTED: a guard waits for a guarded transaction
// that holds the resource's row, then sees its token: a newer token passes
// (and then reads what the older holder committed), an older one is stale
// although its transaction began before the newer one committed.
func TestPostgresReadCommitted(t *testing.T) {
	b := postgres(t)
	ctx := ctxT(t, 30*time.Second)
	_, err := b.db.ExecContext(ctx, "CREATE TABLE state (id INTEGER PRIMARY KEY, owner TEXT NOT NULL)")
	require.NoError(t, err)

	// A newer holder behind an older one: it waits, then reads its write.
	a := begin(t, ctx, b.db, sql.LevelReadCommitted)
	require.NoError(t, sqlfence.Check(ctx, a, "/r", int64(5)))
	nb := begin(t, ctx, b.db, sql.LevelReadCommitted)
	done := checkAsync(t, ctx, b.db, nb, "/r", 7)
	_, err = a.ExecContext(ctx, "INSERT INTO state VALUES (1, 'a')")
	require.NoError(t, err)
	require.NoError(t, a.Commit())
	require.NoError(t, <-done)
	var owner string
	require.NoError(t, nb.QueryRowContext(ctx, "SELECT owner FROM state WHERE id = 1").Scan(&owner))
	require.Equal(t, "a", owner, "after the guard, the previous holder's writes are seen")
	_, err = nb.ExecContext(ctx, "UPDATE state SET owner = 'b' WHERE id = 1")
	require.NoError(t, err)

	// An older holder behind a newer one: stale once that one commits.
	old := begin(t, ctx, b.db, sql.LevelReadCommitted)
	done = checkAsync(t, ctx, b.db, old, "/r", 6)
	require.NoError(t, nb.Commit())
	err = <-done
	var se *sqlfence.StaleError
	require.ErrorAs(t, err, &se)
	require.EqualValues(t, 7, se.Newer)
}

// PostgreSQL at REPEATABLE READ (and SERIALIZABLE): a guard that waited for
// another guarded transaction fails with a serialization failure (40001),
// whatever its token: the caller retries the transaction, and the retry is
// judged on the committed token.
func TestPostgresRepeatableRead(t *testing.T) {
	for _, level := range []sql.IsolationLevel{sql.LevelRepeatableRead, sql.LevelSerializable} {
		t.Run(level.String(), func(t *testing.T) {
			b := postgres(t)
			ctx := ctxT(t, 30*time.Second)
			require.NoError(t, guarded(ctx, b.db, "/r", 1, nil))
			a := begin(t, ctx, b.db, level)
			require.NoError(t, sqlfence.Check(ctx, a, "/r", int64(5)))
			nb := begin(t, ctx, b.db, level)
			done := checkAsync(t, ctx, b.db, nb, "/r", 7)
			require.NoError(t, a.Commit())
			err := <-done
			var pe *pgconn.PgError
			require.ErrorAs(t, err, &pe, "%v", err)
			require.Equal(t, "40001", pe.Code)
			require.NoError(t, nb.Rollback())
			require.NoError(t, guarded(ctx, b.db, "/r", 7, nil), "the retry passes")
			require.ErrorIs(t, guarded(ctx, b.db, "/r", 6, nil), sqlfence.ErrStale)
		})
	}
}

// SQLite with DEFERRED transactions: one that read before its guard, while
// another committed a guarded write, gets SQLITE_BUSY at its guard instead
// of waiting (safe, but an error: hence BEGIN IMMEDIATE). With IMMEDIATE
// the same sequence cannot arise: the second transaction's BEGIN waits.
func TestSQLiteDeferred(t *testing.T) {
	file := filepath.Join(t.TempDir(), "fence.db")
	ctx := ctxT(t, 30*time.Second)
	db, err := sql.Open("sqlite", "file:"+file+"?_txlock=deferred&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, sqlfence.Ensure(ctx, db))
	require.NoError(t, guarded(ctx, db, "/r", 1, nil))

	old, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer old.Rollback()
	var n int
	require.NoError(t, old.QueryRowContext(ctx, "SELECT count(*) FROM shepherd_fence").Scan(&n)) // its snapshot
	require.NoError(t, guarded(ctx, db, "/r", 7, nil))
	err = sqlfence.Check(ctx, old, "/r", int64(9))
	require.Error(t, err)
	require.False(t, errors.Is(err, sqlfence.ErrStale))
	require.ErrorContains(t, err, "database is locked") // SQLITE_BUSY_SNAPSHOT
	require.EqualValues(t, 7, stored(t, db, "/r"))
}
