package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/shepherdzk/shepherd/fence/sqlfence"
)

// Two holders of a lock write in turn; the first writes again, late: the
// guard refuses it, naming the newer token. (The tokens here are numbers;
// a holder passes its hold's, e.g. a mutex's Token.)
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sqlfence-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// SQLite: BEGIN IMMEDIATE and a busy timeout (see the package doc).
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "app.db")+"?_txlock=immediate&_pragma=busy_timeout(5000)")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := sqlfence.Ensure(ctx, db); err != nil {
		log.Fatal(err)
	}

	write := func(token int64) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := sqlfence.Check(ctx, tx, "/jobs/billing/lock", token); err != nil {
			return err
		}
		// ... the holder's writes, in tx ...
		return tx.Commit()
	}
	fmt.Println(write(4294967301))
	fmt.Println(write(4294967305))
	err = write(4294967301)
	fmt.Println(errors.Is(err, sqlfence.ErrStale))
	fmt.Println(err)
	// Output:
	// <nil>
	// <nil>
	// true
	// sqlfence: stale token 4294967301 for "/jobs/billing/lock": the fence has seen token 4294967305 (a newer holder wrote since)
}
