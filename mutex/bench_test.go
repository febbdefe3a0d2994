package mutex_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/mutex"
)

// BenchmarkLockUnlock: an uncontended fair Lock+Unlock against the real
// server (three requests in two round trips; non-fair: three in three, the
// grant, a look at the path for a waiting line, the release), with the
// client's allocations.
func BenchmarkLockUnlock(b *testing.B) {
	for _, fair := range []bool{true, false} {
		name := "fair"
		var opts []mutex.Option
		if !fair {
			name, opts = "nonfair", []mutex.Option{mutex.NonFair()}
		}
		b.Run(name, func(b *testing.B) {
			s := open(b, zk.Servers())
			m, err := mutex.New(s, uniquePath(b), opts...)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background() // a ctx that cannot end: the direct path
			b.ReportAllocs()
			for b.Loop() {
				if err := m.Lock(ctx); err != nil {
					b.Fatal(err)
				}
				if err := m.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkContended: 16 sessions contend for one fair mutex; b.N
// acquisitions in all.
func BenchmarkContended(b *testing.B) {
	path := uniquePath(b)
	ms := make([]*mutex.Mutex, 16)
	for i := range ms {
		m, err := mutex.New(open(b, zk.Servers()), path)
		if err != nil {
			b.Fatal(err)
		}
		ms[i] = m
	}
	ctx := ctxT(b, 5*time.Minute)
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := m.Lock(ctx); err != nil {
					b.Error(err)
					return
				}
				if err := m.Unlock(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkRawFloor: the hand-written minimum with go-zookeeper's calls
// (create, list, delete) on the same server, to compare BenchmarkLockUnlock
// with.
func BenchmarkRawFloor(b *testing.B) {
	s := open(b, zk.Servers())
	ep, err := s.Wait(ctxT(b, 10*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	c := ep.Conn()
	path := s.Path(uniquePath(b))
	if _, err := c.Create(path[:strings.LastIndex(path, "/")], nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil && !errors.Is(err, gozk.ErrNodeExists) {
		b.Fatal(err)
	}
	if _, err := c.Create(path, nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := c.Create(path+"/lock-", nil, gozk.FlagEphemeral|gozk.FlagSequence, gozk.WorldACL(gozk.PermAll))
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.Children(path); err != nil {
			b.Fatal(err)
		}
		if err := c.Delete(p, -1); err != nil {
			b.Fatal(err)
		}
	}
}
