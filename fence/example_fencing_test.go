package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/shepherdzk/shepherd/fence/httpfence"
	"github.com/shepherdzk/shepherd/fence/sqlfence"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
)

// invoices opens the example's database: SQLite (modernc.org/sqlite) in a
// temporary directory, with a table of the application's own. The fence
// works the same on PostgreSQL.
func invoices(ctx context.Context) (db *sql.DB, done func()) {
	dir, err := os.MkdirTemp("", "fence-example-")
	if err != nil {
		log.Fatal(err)
	}
	db, err = sql.Open("sqlite", "file:"+filepath.Join(dir, "app.db")+"?_txlock=immediate&_pragma=busy_timeout(5000)")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE invoices (id INTEGER PRIMARY KEY, state TEXT NOT NULL)"); err != nil {
		log.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO invoices VALUES (42, 'due')"); err != nil {
		log.Fatal(err)
	}
	return db, func() { db.Close(); os.RemoveAll(dir) }
}

// A lock holder's write to a database, fenced by the lock's token: the
// guard runs in the holder's own transaction, and a holder whose token is
// older than one the database has seen is refused there.
func Example_database() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := session.Open(ctx, zk.Servers(), session.WithSessionTimeout(4*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	db, done := invoices(ctx)
	defer done()

	// Once: the fence's table (or apply sqlfence.Schema with your schema).
	if err := sqlfence.Ensure(ctx, db); err != nil {
		log.Fatal(err)
	}
	// The write the lock protects, in one transaction with the guard.
	charge := func(tok hold.Token) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := sqlfence.Check(ctx, tx, "/jobs/billing/lock", tok); err != nil {
			return err // sqlfence.ErrStale: a newer holder has written; stop
		}
		if _, err := tx.ExecContext(ctx, "UPDATE invoices SET state = 'charged' WHERE id = 42"); err != nil {
			return err
		}
		return tx.Commit()
	}

	m, err := mutex.New(sess, "/jobs/billing/lock")
	if err != nil {
		log.Fatal(err)
	}
	var tokens []hold.Token
	for range 2 { // two holders in turn
		if err := m.Lock(ctx); err != nil {
			log.Fatal(err)
		}
		tok, err := m.Token(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("charged:", charge(tok))
		tokens = append(tokens, tok)
		if err := m.Unlock(ctx); err != nil {
			log.Fatal(err)
		}
	}
	// The first holder again, late (a GC pause, a SIGSTOP): refused.
	err = charge(tokens[0])
	fmt.Println("late holder refused:", errors.Is(err, sqlfence.ErrStale))
	// Output:
	// charged: <nil>
	// charged: <nil>
	// late holder refused: true
}

// A lock holder's calls to an HTTP service, fenced by the lock's token: the
// client's transport sends the lock's path and token, the service's
// middleware refuses a token older than one it has seen, with 409.
func Example_service() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := session.Open(ctx, zk.Servers(), session.WithSessionTimeout(4*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	// The service: one process here (httpfence.NewSQLStore for several).
	fenced, err := httpfence.Middleware(httpfence.NewMemoryStore())
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /charge", fenced(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "charged")
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// The holder: a client whose requests carry the lock's path and token.
	call := func(tok hold.Token) string {
		client := &http.Client{Transport: httpfence.NewTransport(nil, "/jobs/billing/lock", tok)}
		resp, err := client.Post(srv.URL+"/charge", "text/plain", nil)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.Status // 409 Conflict (httpfence.CheckResponse: ErrStale) for a stale token
	}
	m, err := mutex.New(sess, "/jobs/billing/lock")
	if err != nil {
		log.Fatal(err)
	}
	var tokens []hold.Token
	for range 2 { // two holders in turn
		if err := m.Lock(ctx); err != nil {
			log.Fatal(err)
		}
		tok, err := m.Token(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(call(tok))
		tokens = append(tokens, tok)
		if err := m.Unlock(ctx); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("late holder:", call(tokens[0]))
	// Output:
	// 200 OK
	// 200 OK
	// late holder: 409 Conflict
}
