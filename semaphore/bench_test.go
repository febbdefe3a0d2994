package semaphore_test

import (
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/semaphore"
)

// BenchmarkAcquireRelease: an uncontended Acquire+Release against the real
// server, with the client's allocations.
func BenchmarkAcquireRelease(b *testing.B) {
	s := open(b, zk.Servers())
	sem, err := semaphore.New(s, uniquePath(b), 4)
	if err != nil {
		b.Fatal(err)
	}
	ctx := ctxT(b, 5*time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		l, err := sem.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
