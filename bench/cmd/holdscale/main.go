// Command holdscale measures what a hold costs while it is held: it takes
// -n fair locks (each on a path of its own) on one session, waits until
// every hold watches its own node, and prints goroutines, heap bytes and
// server watches per hold, and holds taken per second. It starts its own
// ZooKeeper on loopback (zktest, with a heap that fits -n holds).
//
//	go run ./bench/cmd/holdscale [-n 100000] [-workers 64]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

func main() {
	n := flag.Int("n", 100000, "holds to take")
	workers := flag.Int("workers", 64, "concurrent acquisitions")
	memprofile := flag.String("memprofile", "", "write a heap profile of the holds to `FILE`")
	flag.Parse()
	if err := run(*n, *workers, *memprofile); err != nil {
		fmt.Fprintln(os.Stderr, "holdscale:", err)
		os.Exit(1)
	}
}

func run(n, workers int, memprofile string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	heap := 256 + n/200 // MiB: ~5 KB per ephemeral node and container, with room
	c, err := zktest.StartCluster(ctx, 1, zktest.WithHeapMB(heap))
	if err != nil {
		return err
	}
	defer c.Close()
	sess, err := session.Open(ctx, c.Servers(), session.WithSessionTimeout(30*time.Second))
	if err != nil {
		return err
	}
	defer sess.Close()

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	w0, err := watches(ctx, c)
	if err != nil {
		return err
	}

	locks := make([]*mutex.Mutex, n)
	var next, failed atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				m, err := mutex.New(sess, "/holdscale/h-"+strconv.Itoa(i))
				if err == nil {
					err = m.Lock(ctx)
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				locks[i] = m
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	if f := failed.Load(); f > 0 {
		return fmt.Errorf("%d of %d locks failed: %v", f, n, firstErr.Load())
	}
	// Every hold watches its own node once it has lasted 10 ms: wait until
	// the server holds a watch per hold.
	deadline := time.Now().Add(5 * time.Minute)
	var w1 int64
	for {
		if w1, err = watches(ctx, c); err != nil {
			return err
		}
		if w1-w0 >= int64(n) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second) // the last reads' goroutines end
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	g1 := runtime.NumGoroutine()

	fmt.Printf("holdscale: %d fair locks held on one session\n", n)
	fmt.Printf("  acquired in %v: %.0f holds/s (%d workers)\n", took.Round(time.Millisecond), float64(n)/took.Seconds(), workers)
	fmt.Printf("  goroutines per hold:    %.3f (%d before, %d while held)\n", float64(g1-g0)/float64(n), g0, g1)
	fmt.Printf("  heap bytes per hold:    %.0f (the Mutex values and their holds, after GC)\n",
		float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n))
	fmt.Printf("  server watches per hold: %.3f\n", float64(w1-w0)/float64(n))
	if memprofile != "" {
		f, err := os.Create(memprofile)
		if err != nil {
			return err
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			return err
		}
		f.Close()
	}

	rel := time.Now()
	for _, m := range locks {
		if err := m.Unlock(ctx); err != nil {
			return err
		}
	}
	fmt.Printf("  released in %v\n", time.Since(rel).Round(time.Millisecond))
	runtime.KeepAlive(locks)
	return nil
}

// watches is the server's watch count.
func watches(ctx context.Context, c *zktest.Cluster) (int64, error) {
	m, err := c.Mntr(ctx, 0)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(m["zk_watch_count"], 10, 64)
}
