package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/fence/sqlfence"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// exclusive is a kind of hold that one holder has at a time, and how to
// take it and read its token.
type exclusive struct {
	name    string
	acquire func(ctx context.Context, s *session.Session, path, id string) (hold.Token, error)
}

func lockWith(opts ...mutex.Option) func(context.Context, *session.Session, string, string) (hold.Token, error) {
	return func(ctx context.Context, s *session.Session, path, _ string) (hold.Token, error) {
		m, err := mutex.New(s, path, opts...)
		if err != nil {
			return 0, err
		}
		if err := m.Lock(ctx); err != nil {
			return 0, err
		}
		return m.Token(ctx)
	}
}

func leadWith(opts ...election.Option) func(context.Context, *session.Session, string, string) (hold.Token, error) {
	return func(ctx context.Context, s *session.Session, path, id string) (hold.Token, error) {
		e, err := election.New(s, path, id, opts...)
		if err != nil {
			return 0, err
		}
		l, err := e.Campaign(ctx)
		if err != nil {
			return 0, err
		}
		return l.Term(), nil
	}
}

var exclusives = []exclusive{
	{"mutex-fair", lockWith()},
	{"mutex-nonfair", lockWith(mutex.NonFair())},
	{"election-fair", leadWith()},
	{"election-nonfair", leadWith(election.NonFair())},
}

// turnsDB opens a database for TestHoldersInTurn: the fence's table and a
// log of writes, in the order they landed.
var turnsDB = map[string]func(t *testing.T) *sql.DB{
	"postgres": func(t *testing.T) *sql.DB {
		srv, name := pg.Database(t)
		return turnsSchema(t, "pgx", srv.DSN(name), "BIGSERIAL PRIMARY KEY")
	},
	"sqlite": func(t *testing.T) *sql.DB {
		dsn := "file:" + filepath.Join(t.TempDir(), "turns.db") + "?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
		return turnsSchema(t, "sqlite", dsn, "INTEGER PRIMARY KEY AUTOINCREMENT")
	},
}

func turnsSchema(t *testing.T, driver, dsn, serial string) *sql.DB {
	db, err := sql.Open(driver, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	ctx := testutil.Ctx(t, 30*time.Second)
	require.NoError(t, sqlfence.Ensure(ctx, db))
	_, err = db.ExecContext(ctx, fmt.Sprintf("CREATE TABLE writes (seq %s, token BIGINT NOT NULL, holder INTEGER NOT NULL)", serial))
	require.NoError(t, err)
	return db
}

// turn is what one holder did.
type turn struct {
	token   hold.Token
	writes  int
	refused bool  // a write was refused as stale (then it stopped)
	late    int   // the writes that landed after its successor's first
	err     error // another failure
}

// A killed holder writes on until a write of its is refused: it must be
// the first after its successor's first write. One that goes on landing
// stops afterSuperseded writes later (a failure); maxWrites bounds every
// holder's loop.
const (
	afterSuperseded = 20
	maxWrites       = 100000
)

// writePace is a holder's work between two writes. It paces the loop, it
// synchronises nothing: without it, on SQLite, a holder writing in a tight
// loop keeps the database's write lock from the next holder (SQLite's busy
// handler sleeps between its tries, up to 100 ms) for thousands of writes.
const writePace = 2 * time.Millisecond

// TestHoldersInTurn: holders take a hold in turn, each on its own session,
// and each writes through the guard in a loop, on and on, until a write is
// refused. Each is killed (its session expired by the server) once it has
// written, so the next is granted while the killed one still writes, as a
// holder whose pause hid the loss would. The log of the writes that
// landed, in the order they landed, holds each holder's writes in one run,
// in the order of the grants, with tokens strictly increasing from holder
// to holder: no stale write landed. Every killed holder was refused, at its
// first write after its successor's first.
func TestHoldersInTurn(t *testing.T) {
	for _, kind := range exclusives {
		for _, dbName := range []string{"postgres", "sqlite"} {
			t.Run(kind.name+"/"+dbName, func(t *testing.T) {
				db := turnsDB[dbName](t)
				order, turns := inTurn(t, kind, db, 5)
				checkTurns(t, db, order, turns)
			})
		}
	}
}

// inTurn runs n holders of kind, each writing to db, killing each but the
// last once it has written; it returns the holders in the order they were
// granted, and what each did.
func inTurn(t *testing.T, kind exclusive, db *sql.DB, n int) (order []int, turns []turn) {
	path := testutil.UniquePath(t, "fence-turns")
	ctx := testutil.Ctx(t, 90*time.Second)
	taps, sessions := make([]*zktest.Tap, n), make([]*session.Session, n)
	superseded := make([]chan struct{}, n)
	for i := range n {
		taps[i], superseded[i] = zktest.NewTap(), make(chan struct{})
		sessions[i] = testutil.Open(t, zk.Servers(), session.WithSessionTimeout(4*time.Second),
			session.WithDialer(taps[i].Dialer(nil)))
	}
	turns = make([]turn, n)
	granted, wrote, ended := make(chan int, n), make(chan int, n), make(chan int, n)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	var stopOnce sync.Once
	defer stopOnce.Do(func() { close(stop) })
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			turns[i] = holdAndWrite(ctx, kind, sessions[i], path, i, db, granted, wrote, superseded[i], stop)
			ended <- i
		}()
	}
	next := func(c <-chan int, what string) int {
		select {
		case i := <-c:
			return i
		case <-ctx.Done():
			t.Fatalf("after grants %v: %s: %v", order, what, ctx.Err())
			return -1
		}
	}
	for round := range n {
		i := next(granted, "no holder granted")
		order = append(order, i)
		require.Equal(t, i, next(wrote, "the holder never wrote"), "round %d", round)
		if round > 0 {
			close(superseded[order[round-1]]) // the killed one: refused from now on
		}
		if round < n-1 { // the last one is stopped, not killed
			cred, ok := taps[i].Credentials(sessions[i].SessionID())
			require.True(t, ok)
			require.NoError(t, zktest.ExpireSession(ctx, zk.Servers(), cred))
		}
	}
	for range n - 1 { // the killed ones end first
		next(ended, "a killed holder never ended")
	}
	stopOnce.Do(func() { close(stop) })
	wg.Wait()
	return order, turns
}

// holdAndWrite is one holder: it takes the hold, says so, and writes
// through the guard until a write is refused, stop is closed, it has
// written afterSuperseded times since superseded was closed, or maxWrites;
// it says when its first write landed.
func holdAndWrite(ctx context.Context, kind exclusive, s *session.Session, path string, i int, db *sql.DB,
	granted, wrote chan<- int, superseded, stop <-chan struct{}) (tr turn) {
	tr.token, tr.err = kind.acquire(ctx, s, path, fmt.Sprintf("holder-%d", i))
	if tr.err != nil {
		return tr
	}
	granted <- i
	since := -1 // writes since superseded was closed
	for ; tr.writes < maxWrites && since < afterSuperseded; tr.writes++ {
		select {
		case <-stop:
			return tr
		case <-superseded:
			since = max(since, 0)
		default:
		}
		err := logWrite(ctx, db, path, tr.token, i)
		if errors.Is(err, sqlfence.ErrStale) {
			tr.refused, tr.late = true, max(since, 0)
			return tr
		}
		if err != nil {
			tr.err = err
			return tr
		}
		if tr.writes == 0 {
			wrote <- i
		}
		if since >= 0 {
			since++
		}
		time.Sleep(writePace) // the pace of the holder's writes, not synchronisation
	}
	return tr
}

// logWrite is a holder's guarded write: a row of the log.
func logWrite(ctx context.Context, db *sql.DB, resource string, tok hold.Token, holder int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := sqlfence.Check(ctx, tx, resource, tok); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO writes (token, holder) VALUES ($1, $2)", int64(tok), holder); err != nil {
		return err
	}
	return tx.Commit()
}

// checkTurns checks the log against the grants (holders in the order they
// were granted) and what each holder did.
func checkTurns(t *testing.T, db *sql.DB, order []int, turns []turn) {
	for i, tr := range turns {
		require.NoError(t, tr.err, "holder %d", i)
	}
	rows, err := db.QueryContext(testutil.Ctx(t, 30*time.Second), "SELECT token, holder FROM writes ORDER BY seq")
	require.NoError(t, err)
	defer rows.Close()
	var runs []int // the holder of each run of writes, in the order they landed
	counts := map[int]int{}
	var prev int64
	for rows.Next() {
		var tok int64
		var holder int
		require.NoError(t, rows.Scan(&tok, &holder))
		require.GreaterOrEqual(t, tok, prev, "a stale write of holder %d (token %d) landed after token %d", holder, tok, prev)
		if len(runs) == 0 || runs[len(runs)-1] != holder {
			runs = append(runs, holder)
		}
		prev = tok
		counts[holder]++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, order, runs, "each holder's writes in one run, in the order of the grants")
	for i, tr := range turns {
		require.Equal(t, tr.writes, counts[i], "holder %d: its writes that succeeded all landed", i)
	}
	for round, i := range order {
		if round > 0 {
			require.Greater(t, turns[i].token, turns[order[round-1]].token, "a later holder's token is higher")
		}
		if round < len(order)-1 {
			require.True(t, turns[i].refused, "killed holder %d (token %d) was never refused in %d writes", i, turns[i].token, turns[i].writes)
			require.Zero(t, turns[i].late, "killed holder %d: writes after its successor's: %+v", i, turns[i])
		}
	}
	t.Logf("grants in order %v; writes landed per holder %v; every killed holder refused", order, counts)
}
