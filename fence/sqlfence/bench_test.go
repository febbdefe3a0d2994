package sqlfence_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/fence/sqlfence"
)

// BenchmarkGuard: the cost of the guard. Each iteration runs the same small
// transaction twice, in turns (BEGIN; UPDATE one row; COMMIT), once bare and
// once with Check first; the metrics are the medians of each (µs), the
// extra latency the guard adds and the ratio guarded/bare. PostgreSQL runs
// with fsync off (pgtest's throw-away server, on tmpfs), SQLite in WAL mode
// on the test's temporary directory: a commit that waits for a disk makes
// the guard's share smaller. `make bench-fence` runs it.
func BenchmarkGuard(b *testing.B) {
	for name, open := range map[string]func(testing.TB) backend{"postgres": postgres, "sqlite": sqlite} {
		b.Run(name, func(b *testing.B) {
			be := open(b)
			ctx := context.Background()
			if _, err := be.db.ExecContext(ctx, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL)"); err != nil {
				b.Fatal(err)
			}
			if _, err := be.db.ExecContext(ctx, "INSERT INTO accounts VALUES (1, 0)"); err != nil {
				b.Fatal(err)
			}
			be.db.SetMaxIdleConns(4)
			txn := func(guard bool) time.Duration {
				start := time.Now()
				tx, err := be.db.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if guard {
					if err := sqlfence.Check(ctx, tx, "/bench/lock", int64(42)); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = balance + 1 WHERE id = 1"); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			txn(true) // the fence's row exists before the timing
			var bare, guarded []time.Duration
			i := 0
			for b.Loop() {
				if i%2 == 0 {
					bare, guarded = append(bare, txn(false)), append(guarded, txn(true))
				} else {
					guarded, bare = append(guarded, txn(true)), append(bare, txn(false))
				}
				i++
			}
			mb, mg := median(bare), median(guarded)
			b.ReportMetric(mb, "bare-µs")
			b.ReportMetric(mg, "guarded-µs")
			b.ReportMetric(mg-mb, "extra-µs")
			b.ReportMetric(mg/mb, "ratio")
		})
	}
}

// median of ds, in µs.
func median(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Microsecond)
}
