package httpfence_test

import (
	"context"
	"database/sql"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/fence/httpfence"
)

// The SQL store admits and refuses as the memory store does, on
// PostgreSQL and SQLite; its state is the database's.
func TestSQLStore(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *sql.DB{
		"postgres": func(t testing.TB) *sql.DB { return postgresDB(t, "") },
		"sqlite":   sqliteDB,
	} {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			store, err := httpfence.NewSQLStore(db)
			require.NoError(t, err)
			srv := server(t, store, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			for _, tok := range []int64{5, 5, 7} {
				code, body, _ := call(t, srv.URL, "/r", tok)
				require.Equal(t, http.StatusOK, code, body)
			}
			code, body, resp := call(t, srv.URL, "/r", 6)
			require.Equal(t, http.StatusConflict, code, body)
			require.Equal(t, "7", resp.Header.Get(httpfence.NewerHeader))
			var tok int64
			require.NoError(t, db.QueryRowContext(ctxT(t, 10*time.Second),
				"SELECT token FROM shepherd_fence WHERE resource = '/r'").Scan(&tok))
			require.EqualValues(t, 7, tok)
		})
	}
	_, err := httpfence.NewSQLStore(nil)
	require.ErrorIs(t, err, httpfence.ErrInvalid)
}

// Two processes of a service (two database handles, two middlewares) on
// one PostgreSQL fence: a request of a resource waits while another
// process runs one of the same resource, then runs; a stale token is
// refused by either process. The raise is committed before the handler
// runs (seen from a third handle while the handler still runs).
func TestSQLStoreAcrossProcesses(t *testing.T) {
	db1 := postgresDB(t, "")
	name := dbName(t, db1)
	db2, observer := postgresDB(t, name), postgresDB(t, name)
	ctx := ctxT(t, 30*time.Second)
	inA, releaseA := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(releaseA) }) }
	handler := func(block bool) http.Handler {
		return http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			if block {
				close(inA)
				<-releaseA
			}
		})
	}
	s1, err := httpfence.NewSQLStore(db1)
	require.NoError(t, err)
	s2, err := httpfence.NewSQLStore(db2)
	require.NoError(t, err)
	p1, p2 := server(t, s1, handler(true)), server(t, s2, handler(false))
	t.Cleanup(release) // runs before the servers' Close, which waits for the handler

	type result struct {
		code int
		err  error
	}
	a, b := make(chan result, 1), make(chan result, 1)
	go func() { code, err := post(p1.URL, "/r", 5); a <- result{code, err} }()
	<-inA
	var tok int64
	require.NoError(t, observer.QueryRowContext(ctx, "SELECT token FROM shepherd_fence WHERE resource = '/r'").Scan(&tok))
	require.EqualValues(t, 5, tok, "the raise is committed before the handler runs")

	go func() { code, err := post(p2.URL, "/r", 7); b <- result{code, err} }()
	require.Eventually(t, func() bool {
		var n int
		err := observer.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO shepherd_fence%'`).Scan(&n)
		return err == nil && n == 1
	}, 10*time.Second, 2*time.Millisecond, "the other process's request did not wait")
	select {
	case r := <-b:
		t.Fatalf("the other process's request ran beside the first: %+v", r)
	default:
	}
	release()
	require.Equal(t, result{code: http.StatusOK}, <-a)
	require.Equal(t, result{code: http.StatusOK}, <-b)
	code, _, _ := call(t, p1.URL, "/r", 5)
	require.Equal(t, http.StatusConflict, code, "the first process refuses what the second has superseded")
}

// A client that goes away while its request runs does not end the SQL
// store's hold on the resource: another request of it still waits until
// the handler has returned.
func TestSQLStoreClientGone(t *testing.T) {
	db := postgresDB(t, "")
	observer := postgresDB(t, dbName(t, db))
	store, err := httpfence.NewSQLStore(db)
	require.NoError(t, err)
	ctx := ctxT(t, 30*time.Second)
	reqCtx, clientGone := context.WithCancel(ctx)
	leave, err := store.Enter(reqCtx, "/r", 5)
	require.NoError(t, err)
	clientGone()
	got := make(chan error, 1)
	go func() {
		l, err := store.Enter(ctx, "/r", 7)
		if err == nil {
			l()
		}
		got <- err
	}()
	require.Eventually(t, func() bool {
		var n int
		err := observer.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO shepherd_fence%'`).Scan(&n)
		return err == nil && n == 1
	}, 10*time.Second, 2*time.Millisecond, "the resource was free while its handler still ran")
	leave()
	require.NoError(t, <-got)
}
