package sqlfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Errors of Check and Ensure, matched with errors.Is.
var (
	// ErrStale: the fence has seen a higher token for the resource: a newer
	// holder has written since this one was granted. The error is a
	// *StaleError naming both tokens. Roll the transaction back.
	ErrStale = errors.New("sqlfence: stale token")
	// ErrInvalid: a nil transaction or database, an empty resource, or a
	// negative token (no shepherd token is negative).
	ErrInvalid = errors.New("sqlfence: invalid argument")
)

// StaleError is the error of Check for a stale token: it matches ErrStale.
type StaleError struct {
	Resource string // the resource guarded
	Token    int64  // the token refused
	Newer    int64  // the highest token the fence has seen for Resource
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("sqlfence: stale token %d for %q: the fence has seen token %d (a newer holder wrote since)",
		e.Token, e.Resource, e.Newer)
}

// Unwrap makes a StaleError match ErrStale.
func (e *StaleError) Unwrap() error { return ErrStale }

// Table is the fence's table: one row per resource, holding the highest
// token seen for it.
const Table = "shepherd_fence"

// Schema creates the fence's table if it is missing (PostgreSQL, SQLite;
// Ensure runs it). Apply it by hand where the database's schema is managed
// elsewhere.
const Schema = `CREATE TABLE IF NOT EXISTS shepherd_fence (
	resource TEXT PRIMARY KEY,
	token    BIGINT NOT NULL
)`

// CheckSQL is the guard Check runs, for a caller that writes its SQL by
// hand ($1: the resource, $2: the token). It raises the resource's token to
// $2 (inserting the row for a first writer) unless the fence has seen a
// higher one, and returns one row when $2 may write, none when it is stale.
const CheckSQL = `INSERT INTO shepherd_fence (resource, token) VALUES ($1, $2)
ON CONFLICT (resource) DO UPDATE SET token = excluded.token
WHERE shepherd_fence.token <= excluded.token
RETURNING token`

// PostgresFunction creates shepherd_fence(resource, token), the guard as a
// PostgreSQL function (EnsurePostgresFunction runs it) for SQL written by
// hand, e.g. in a psql script: it raises the token as CheckSQL does, and
// fails the transaction (an exception, SQLSTATE P0001) when the token is
// stale, so that psql -v ON_ERROR_STOP=1 stops before COMMIT.
const PostgresFunction = `CREATE OR REPLACE FUNCTION shepherd_fence(res text, tok bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	newer bigint;
BEGIN
	INSERT INTO shepherd_fence (resource, token) VALUES (res, tok)
	ON CONFLICT (resource) DO UPDATE SET token = excluded.token
	WHERE shepherd_fence.token <= excluded.token;
	IF NOT FOUND THEN
		SELECT token INTO newer FROM shepherd_fence WHERE resource = res;
		RAISE EXCEPTION 'shepherd fence: stale token % for %: the fence has seen token %', tok, res, newer;
	END IF;
	RETURN tok;
END
$$`

// ensureTries bounds Ensure's runs of a statement that met a concurrent one.
const ensureTries = 5

// Ensure creates the fence's table (Schema) if it is missing. Processes
// starting together may call it at once: a run that meets a concurrent
// creation (PostgreSQL can fail one of two concurrent CREATE TABLE IF NOT
// EXISTS) is tried again while ctx lasts, a few times.
func Ensure(ctx context.Context, db *sql.DB) error {
	return ensure(ctx, db, Schema, "the table")
}

// EnsurePostgresFunction creates (or replaces) PostgresFunction, on
// PostgreSQL only; the table must exist (Ensure). Callers replacing it at
// once take turns (a transaction-scoped advisory lock, key
// FunctionLockKey): PostgreSQL fails one of two concurrent CREATE OR
// REPLACE FUNCTION ("tuple concurrently updated").
func EnsurePostgresFunction(ctx context.Context, db *sql.DB) error {
	return ensure(ctx, db, PostgresFunction, "the function shepherd_fence")
}

// FunctionLockKey is the PostgreSQL advisory lock key (pg_advisory_xact_lock)
// EnsurePostgresFunction holds while it replaces the function.
const FunctionLockKey int64 = 0x73686570_66656e63 // "shepfenc"

func ensure(ctx context.Context, db *sql.DB, stmt, what string) error {
	if db == nil {
		return fmt.Errorf("%w: nil database", ErrInvalid)
	}
	run := func() error {
		_, err := db.ExecContext(ctx, stmt)
		return err
	}
	if stmt == PostgresFunction {
		run = func() error { return inTurn(ctx, db, stmt) }
	}
	var err error
	for range ensureTries {
		if err = run(); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("sqlfence: creating %s: %w", what, err)
	}
	return nil
}

// inTurn runs stmt in a transaction that first takes FunctionLockKey.
func inTurn(ctx context.Context, db *sql.DB, stmt string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", FunctionLockKey); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, stmt); err != nil {
		return err
	}
	return tx.Commit()
}

// Check is the guard: called inside the transaction tx that makes a
// holder's writes, it lets them land only if token is at least the highest
// token the fence has seen for resource, and raises that to token. A token
// equal to the highest is the same holder's, and passes. A stale token
// leaves the fence as it was and returns a *StaleError (matching ErrStale)
// naming the newer token: the caller must roll tx back, and stop acting as
// the holder.
//
// Call it first in tx, before the reads the writes depend on: from the
// guard to the end of tx no other guarded transaction on resource can
// commit (see the package doc for why, per database, and the isolation
// level each needs). resource names what the hold protects: use the hold's
// path, the same one for every holder.
//
// token is the hold's fencing token: a mutex's or lease's Token, an
// election's Term, a schedule Tick's Term (their types are int64 at
// heart), or SHEPHERD_TOKEN parsed; an untyped constant needs a type
// (int64(5)). Check costs one statement (two when stale).
func Check[T ~int64](ctx context.Context, tx *sql.Tx, resource string, token T) error {
	switch {
	case tx == nil:
		return fmt.Errorf("%w: nil transaction", ErrInvalid)
	case resource == "":
		return fmt.Errorf("%w: empty resource", ErrInvalid)
	case token < 0:
		return fmt.Errorf("%w: negative token %d for %q", ErrInvalid, int64(token), resource)
	}
	var stored int64
	err := tx.QueryRowContext(ctx, CheckSQL, resource, int64(token)).Scan(&stored)
	if err == nil {
		return nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlfence: checking token %d for %q: %w", int64(token), resource, err)
	}
	// Stale. The row is locked by the guard (PostgreSQL locks a
	// conflicting row even when the WHERE refuses the update), so the
	// token read now is the one that refused this one.
	if err := tx.QueryRowContext(ctx, "SELECT token FROM shepherd_fence WHERE resource = $1", resource).Scan(&stored); err != nil {
		return fmt.Errorf("sqlfence: %w: token %d for %q (reading the newer token: %v)", ErrStale, int64(token), resource, err)
	}
	return &StaleError{Resource: resource, Token: int64(token), Newer: stored}
}
