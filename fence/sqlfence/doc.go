// Package sqlfence fences a holder's writes to a SQL database with the
// hold's fencing token: a write made by a holder that has been replaced
// (paused by GC or SIGSTOP past its session, partitioned, slow) is refused
// by the database itself, inside the writer's own transaction, once a newer
// holder has written.
//
// A hold's Fenced makes ZooKeeper writes safe (package fence); the rows a
// holder writes elsewhere need the database to check the token. This
// package keeps, in one table, the highest token seen per resource, and
// Check, the guard, raises it inside the transaction that writes:
//
//	tx, err := db.BeginTx(ctx, nil)
//	...
//	defer tx.Rollback()
//	if err := sqlfence.Check(ctx, tx, "/jobs/billing/lock", tok); err != nil {
//		return err // sqlfence.ErrStale: a newer holder has written; stop
//	}
//	// the writes the hold protects, then:
//	return tx.Commit()
//
// The package uses database/sql only; the caller brings the driver. It is
// tested on PostgreSQL (pgx's stdlib) and SQLite (modernc.org/sqlite), and
// its SQL (Schema, CheckSQL) is what both accept: a database that speaks
// INSERT ... ON CONFLICT ... DO UPDATE ... WHERE ... RETURNING and $n
// placeholders can use it.
//
// # The table
//
// Schema is the table (resource TEXT PRIMARY KEY, token BIGINT): Ensure
// creates it, or apply Schema with the rest of the database's schema. A row
// appears at a resource's first guarded write; concurrent first writers are
// safe (one inserts, the others take the update path of the same statement).
// PostgresFunction adds shepherd_fence(resource, token), the guard as a
// function for SQL written by hand (a psql script run by `shepherd lock`
// with SHEPHERD_TOKEN): it raises an exception for a stale token, so the
// transaction fails.
//
// # Why the guard is safe, per database
//
// What Check guarantees: once a guarded transaction with token t has
// committed, no guarded transaction on the same resource with a token below
// t commits afterwards; and two guarded transactions on one resource never
// overlap from the guard to their end, so the later one sees the earlier
// one's writes.
//
// PostgreSQL, at READ COMMITTED (its default) or higher: the guard's upsert
// takes the resource row's lock, held to the end of the transaction (ON
// CONFLICT DO UPDATE locks the conflicting row even when its WHERE refuses
// the update), and its WHERE is evaluated on the newest committed version of
// the row, not on the statement's snapshot. So a guard behind another's
// waits for that transaction to end, then sees its token. Concurrent first
// writers: the insert of the second waits for the first's uncommitted row,
// then takes the update path. At REPEATABLE READ or SERIALIZABLE the guard
// is as safe, but a guard that waited for another transaction fails with a
// serialization failure (SQLSTATE 40001) instead of proceeding: retry the
// whole transaction, as at those levels any write may have to be.
//
// SQLite, any mode: writes are serialised by the database's write lock,
// which the guard (a write) takes and the transaction holds to its end, and
// every transaction is SERIALIZABLE. Begin transactions with BEGIN
// IMMEDIATE (modernc.org/sqlite: "_txlock=immediate" in the DSN) and set a
// busy timeout ("_pragma=busy_timeout(5000)"): a DEFERRED transaction that
// read before its guard may get SQLITE_BUSY instead of waiting for the
// lock. That refusal is safe, but an error.
//
// In both, call Check first in the transaction, and roll the transaction
// back when Check fails: the guard refuses, it cannot undo writes that the
// caller then commits.
//
// # Tokens
//
// A resource is fenced by one lock (or election, or schedule): name it
// with the hold's path, the same for every holder, and pass the hold's
// token. Which token orders what, for every kind of hold, is in the
// package doc of package fence (shepherd's ZooKeeper-side fencing). In
// short: a mutex's (fair, non-fair, a read-write lock's writer), an
// election's and a schedule's (Tick.Term) are higher for every later
// holder; a semaphore lease's are higher for every later grant, but leases
// are held side by side, so a lease's token fences only what one lease at
// a time writes (at maxLeases 1, the semaphore's resource). Tokens are ZooKeeper
// zxids: they grow across session expiry and server restarts of one
// ensemble, and start again low on an ensemble whose data was wiped: then
// delete the fence's rows (DELETE FROM shepherd_fence), or every holder is
// refused.
//
// # What is not guaranteed
//
// The guard orders the writes of transactions that call it, on one
// database. A write that does not go through it (another program, a
// transaction without Check) is not fenced. A stale holder is refused only
// once a newer holder has written through the guard: before that, nothing
// in the database says it was replaced (its ZooKeeper hold says so: stop
// on Lost, and fence ZooKeeper writes with Fenced).
package sqlfence
