package httpfence_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	_ "modernc.org/sqlite"

	"github.com/shepherdzk/shepherd/fence/httpfence"
	"github.com/shepherdzk/shepherd/fence/sqlfence"
	"github.com/shepherdzk/shepherd/internal/pgtest"
)

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

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// postgresDB opens a fresh PostgreSQL database with the fence's table; a
// second call with the same name opens another handle on it (another
// process's). It skips without PostgreSQL.
func postgresDB(t testing.TB, name string) *sql.DB {
	t.Helper()
	srv := pg.Get(t)
	if name == "" {
		_, name = pg.Database(t)
	}
	db, err := sql.Open("pgx", srv.DSN(name))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	require.NoError(t, sqlfence.Ensure(ctxT(t, 30*time.Second), db))
	return db
}

func dbName(t testing.TB, db *sql.DB) string {
	var name string
	require.NoError(t, db.QueryRowContext(ctxT(t, 10*time.Second), "SELECT current_database()").Scan(&name))
	return name
}

// sqliteDB opens a fresh SQLite database file with the fence's table.
func sqliteDB(t testing.TB) *sql.DB {
	t.Helper()
	file := filepath.Join(t.TempDir(), "fence.db")
	db, err := sql.Open("sqlite", "file:"+file+"?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	require.NoError(t, sqlfence.Ensure(ctxT(t, 30*time.Second), db))
	return db
}

// call sends a POST through a Transport of resource and token (none when
// resource is empty) and returns the status and body.
func call(t testing.TB, url, resource string, token int64) (int, string, *http.Response) {
	t.Helper()
	client := http.DefaultClient
	if resource != "" {
		client = &http.Client{Transport: httpfence.NewTransport(nil, resource, token)}
	}
	req, err := http.NewRequestWithContext(ctxT(t, 10*time.Second), http.MethodPost, url, strings.NewReader("x"))
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b), resp
}

// post is call for another goroutine than the test's: it returns the
// status, or the error.
func post(url, resource string, token int64) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("x"))
	if err != nil {
		return 0, err
	}
	resp, err := (&http.Client{Transport: httpfence.NewTransport(nil, resource, token)}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// server serves h behind the middleware of store (with opts) on loopback.
func server(t testing.TB, store httpfence.Store, h http.Handler, opts ...httpfence.Option) *httptest.Server {
	t.Helper()
	mw, err := httpfence.Middleware(store, opts...)
	require.NoError(t, err)
	srv := httptest.NewServer(mw(h))
	t.Cleanup(srv.Close)
	return srv
}
