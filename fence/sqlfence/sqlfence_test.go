package sqlfence_test

import (
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/fence/sqlfence"
)

// The guard lets a first token in (and records it), the same token again,
// and a higher one (raising the fence); it refuses a lower one with a
// *StaleError naming both tokens, leaving the fence as it was; resources
// are fenced apart.
func TestCheck(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := ctxT(t, 30*time.Second)
		require.NoError(t, guarded(ctx, b.db, "/r", 10, nil), "a first writer")
		require.EqualValues(t, 10, stored(t, b.db, "/r"))
		require.NoError(t, guarded(ctx, b.db, "/r", 10, nil), "the same holder again")
		require.NoError(t, guarded(ctx, b.db, "/r", 12, nil), "a newer holder")
		require.EqualValues(t, 12, stored(t, b.db, "/r"))

		err := guarded(ctx, b.db, "/r", 11, nil)
		require.ErrorIs(t, err, sqlfence.ErrStale)
		var se *sqlfence.StaleError
		require.ErrorAs(t, err, &se)
		require.Equal(t, sqlfence.StaleError{Resource: "/r", Token: 11, Newer: 12}, *se)
		require.Contains(t, err.Error(), `stale token 11 for "/r": the fence has seen token 12`)
		require.EqualValues(t, 12, stored(t, b.db, "/r"), "a stale token leaves the fence as it was")

		require.NoError(t, guarded(ctx, b.db, "/other", 1, nil), "another resource is fenced apart")
		require.EqualValues(t, 1, stored(t, b.db, "/other"))
		require.EqualValues(t, 12, stored(t, b.db, "/r"))
	})
}

// A stale holder's writes, rolled back as the guard's error says, do not
// land; the newer holder's stay.
func TestStaleWriteRolledBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := ctxT(t, 30*time.Second)
		_, err := b.db.ExecContext(ctx, "CREATE TABLE state (id INTEGER PRIMARY KEY, owner TEXT NOT NULL)")
		require.NoError(t, err)
		_, err = b.db.ExecContext(ctx, "INSERT INTO state (id, owner) VALUES (1, 'nobody')")
		require.NoError(t, err)
		set := func(owner string) func(*sql.Tx) error {
			return func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, "UPDATE state SET owner = $1 WHERE id = 1", owner)
				return err
			}
		}
		require.NoError(t, guarded(ctx, b.db, "/lock", 7, set("new")))
		require.ErrorIs(t, guarded(ctx, b.db, "/lock", 5, set("old")), sqlfence.ErrStale)
		var owner string
		require.NoError(t, b.db.QueryRowContext(ctx, "SELECT owner FROM state WHERE id = 1").Scan(&owner))
		require.Equal(t, "new", owner)
	})
}

// Bad arguments are refused before any statement, with ErrInvalid.
func TestCheckInvalid(t *testing.T) {
	b := sqlite(t)
	ctx := ctxT(t, 10*time.Second)
	tx, err := b.db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback()
	require.ErrorIs(t, sqlfence.Check(ctx, nil, "/r", int64(1)), sqlfence.ErrInvalid)
	require.ErrorIs(t, sqlfence.Check(ctx, tx, "", int64(1)), sqlfence.ErrInvalid)
	require.ErrorIs(t, sqlfence.Check(ctx, tx, "/r", int64(-1)), sqlfence.ErrInvalid)
	require.ErrorIs(t, sqlfence.Ensure(ctx, nil), sqlfence.ErrInvalid)
	require.NoError(t, tx.Commit())
	require.EqualValues(t, -1, stored(t, b.db, "/r"), "nothing written")
}

// Check takes a holder's token type as it is (hold.Token, election.Term
// are int64 at heart) or an int64.
func TestCheckTokenTypes(t *testing.T) {
	type token int64 // as hold.Token is declared
	b := sqlite(t)
	ctx := ctxT(t, 10*time.Second)
	tx, err := b.db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback()
	require.NoError(t, sqlfence.Check(ctx, tx, "/r", token(3)))
	require.NoError(t, sqlfence.Check(ctx, tx, "/r", int64(4)))
	require.NoError(t, sqlfence.Check(ctx, tx, "/r", int64(5)))
	require.NoError(t, tx.Commit())
	require.EqualValues(t, 5, stored(t, b.db, "/r"))
}

// Concurrent guarded transactions on one resource, first writers included
// (the row does not exist yet): none fails but as stale; they never
// overlap from the guard to their commit, so the tokens of the writes that
// landed, in the order they landed, never go down; and the fence ends at
// the highest.
func TestConcurrentWriters(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := ctxT(t, 60*time.Second)
		_, err := b.db.ExecContext(ctx, fmt.Sprintf("CREATE TABLE writes (seq %s, token BIGINT NOT NULL)", b.serial))
		require.NoError(t, err)
		const writers, rounds = 8, 5
		for round := range rounds {
			resource := fmt.Sprintf("/first-%d", round)
			start := make(chan struct{})
			var wg sync.WaitGroup
			errs := make([]error, writers)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					errs[w] = guarded(ctx, b.db, resource, int64(w+1), func(tx *sql.Tx) error {
						_, err := tx.ExecContext(ctx, "INSERT INTO writes (token) VALUES ($1)", int64(round*100+w+1))
						return err
					})
				}()
			}
			close(start)
			wg.Wait()
			landed := 0
			for w, err := range errs {
				if err == nil {
					landed++
					continue
				}
				require.ErrorIs(t, err, sqlfence.ErrStale, "writer %d of round %d", w, round)
			}
			require.Positive(t, landed)
			require.EqualValues(t, writers, stored(t, b.db, resource), "the fence ends at the highest token")
		}
		rows, err := b.db.QueryContext(ctx, "SELECT token FROM writes ORDER BY seq")
		require.NoError(t, err)
		defer rows.Close()
		var prev, n int64
		for rows.Next() {
			var tok int64
			require.NoError(t, rows.Scan(&tok))
			require.Greater(t, tok, prev, "write %d landed after a newer holder's", n)
			prev, n = tok, n+1
		}
		require.NoError(t, rows.Err())
		t.Logf("%d of %d guarded writes landed", n, writers*rounds)
	})
}

// Ensure, run by many processes at once on a fresh database, creates the
// table (and the function) without failing any of them. (PostgreSQL fails
// one of two concurrent CREATE TABLE IF NOT EXISTS now and then: a unique
// violation in its catalog.) Ten rounds of eight callers.
func TestEnsureConcurrent(t *testing.T) {
	b := postgres(t) // SQLite serialises DDL by its lock: nothing to race
	ctx := ctxT(t, 60*time.Second)
	for round := range 10 {
		_, err := b.db.ExecContext(ctx, "DROP TABLE shepherd_fence CASCADE")
		require.NoError(t, err)
		_, err = b.db.ExecContext(ctx, "DROP FUNCTION IF EXISTS shepherd_fence")
		require.NoError(t, err)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		start := make(chan struct{})
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = errors.Join(sqlfence.Ensure(ctx, b.db), sqlfence.EnsurePostgresFunction(ctx, b.db))
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "round %d, caller %d", round, i)
		}
		require.NoError(t, guarded(ctx, b.db, "/r", 1, nil))
	}
}
