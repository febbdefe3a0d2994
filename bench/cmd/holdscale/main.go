// Command holdscale measures what a hold costs while it is held: it takes
// -n holds of one -kind (each on a path of its own) on one session: fair
// locks (lock), semaphore leases (lease) or leaderships won by Campaign
// (leader), or the non-fair kinds (nonfair-lock, nonfair-leader); it waits until every hold watches its own node, and prints
// goroutines, heap bytes and server watches per hold, and holds taken per
// second. It starts its own ZooKeeper on loopback (zktest, with a heap that
// fits -n holds).
//
//	go run ./bench/cmd/holdscale [-kind lock|lease|leader] [-n 100000] [-workers 64]
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

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

func main() {
	o, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "holdscale:", err)
		os.Exit(2)
	}
	if o.memprofile != "" {
		runtime.MemProfileRate = 1 // every allocation, for a per-hold account
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "holdscale:", err)
		os.Exit(1)
	}
}

// options are holdscale's flags.
type options struct {
	kind       string
	take       taker
	n, workers int
	memprofile string
}

// parseArgs reads holdscale's flags.
func parseArgs(args []string) (options, error) {
	fs := flag.NewFlagSet("holdscale", flag.ContinueOnError)
	o := options{}
	fs.StringVar(&o.kind, "kind", "lock", "what to hold: lock, lease, leader, nonfair-lock or nonfair-leader")
	fs.IntVar(&o.n, "n", 100000, "holds to take")
	fs.IntVar(&o.workers, "workers", 64, "concurrent acquisitions")
	fs.StringVar(&o.memprofile, "memprofile", "", "write a heap profile of the holds to `FILE`")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var ok bool
	if o.take, ok = kindOf(o.kind); !ok {
		return o, fmt.Errorf("-kind must be lock, lease, leader, nonfair-lock or nonfair-leader (got %q)", o.kind)
	}
	if o.n < 1 || o.workers < 1 || fs.NArg() > 0 {
		return o, fmt.Errorf("-n and -workers must be at least 1, and no arguments follow the flags")
	}
	return o, nil
}

// holder is one hold taken, with how to let it go.
type holder interface {
	release(ctx context.Context) error
}

type releaseFunc func(ctx context.Context) error

func (f releaseFunc) release(ctx context.Context) error { return f(ctx) }

// taker is how to take one hold of a kind on path.
type taker func(ctx context.Context, sess *session.Session, path string) (holder, error)

// kindOf is the taker of the kind named, if there is one.
func kindOf(name string) (taker, bool) {
	switch name {
	case "lock":
		return takeLock, true
	case "lease":
		return takeLease, true
	case "leader":
		return takeLeader, true
	case "nonfair-lock":
		return takeNonFairLock, true
	case "nonfair-leader":
		return takeNonFairLeader, true
	}
	return nil, false
}

func takeLock(ctx context.Context, sess *session.Session, path string) (holder, error) {
	return lock(ctx, sess, path)
}

func takeNonFairLock(ctx context.Context, sess *session.Session, path string) (holder, error) {
	return lock(ctx, sess, path, mutex.NonFair())
}

func lock(ctx context.Context, sess *session.Session, path string, opts ...mutex.Option) (holder, error) {
	m, err := mutex.New(sess, path, opts...)
	if err != nil {
		return nil, err
	}
	if err := m.Lock(ctx); err != nil {
		return nil, err
	}
	return releaseFunc(m.Unlock), nil
}

func takeLease(ctx context.Context, sess *session.Session, path string) (holder, error) {
	s, err := semaphore.New(sess, path, 1)
	if err != nil {
		return nil, err
	}
	l, err := s.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return releaseFunc(l.Release), nil
}

func takeLeader(ctx context.Context, sess *session.Session, path string) (holder, error) {
	return lead(ctx, sess, path)
}

func takeNonFairLeader(ctx context.Context, sess *session.Session, path string) (holder, error) {
	return lead(ctx, sess, path, election.NonFair())
}

func lead(ctx context.Context, sess *session.Session, path string, opts ...election.Option) (holder, error) {
	e, err := election.New(sess, path, "c", opts...)
	if err != nil {
		return nil, err
	}
	l, err := e.Campaign(ctx)
	if err != nil {
		return nil, err
	}
	return releaseFunc(l.Resign), nil
}

func run(o options) error {
	n, workers := o.n, o.workers
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	heap := 256 + n/200 // MiB: ~5 KB per ephemeral node and container, with room
	c, err := zktest.StartCluster(ctx, 1, zktest.WithHeapMB(heap))
	if err != nil {
		return err
	}
	defer c.Close()
	r, err := measure(ctx, c, o.take, n, workers, "/holdscale", func() error {
		if o.memprofile == "" {
			return nil
		}
		f, err := os.Create(o.memprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		return pprof.WriteHeapProfile(f)
	})
	if err != nil {
		return err
	}
	fmt.Printf("holdscale: %d holds (%s) on one session\n", n, o.kind)
	fmt.Printf("  acquired in %v: %.0f holds/s (%d workers)\n", r.took.Round(time.Millisecond), float64(n)/r.took.Seconds(), workers)
	fmt.Printf("  goroutines per hold:    %.3f (%d before, %d while held)\n", r.goroutinesPerHold(), r.g0, r.g1)
	fmt.Printf("  heap bytes per hold:    %.0f (the recipe values and their holds, after GC)\n", r.heapPerHold())
	fmt.Printf("  server watches per hold: %.3f\n", r.watchesPerHold())
	fmt.Printf("  released in %v\n", r.released.Round(time.Millisecond))
	return nil
}

// result is what holding n holds cost.
type result struct {
	n              int
	took, released time.Duration // to take them all, to release them all
	g0, g1         int           // goroutines before, and while held
	heap0, heap1   uint64        // heap bytes in use before, and while held (after GC)
	watch0, watch1 int64         // the server's watches before, and while held
}

func (r result) goroutinesPerHold() float64 { return float64(r.g1-r.g0) / float64(r.n) }
func (r result) heapPerHold() float64 {
	return float64(int64(r.heap1)-int64(r.heap0)) / float64(r.n)
}
func (r result) watchesPerHold() float64 { return float64(r.watch1-r.watch0) / float64(r.n) }

// measure takes n holds with take (each on a path of its own under dir) on
// one new session of c, with workers at once; once every hold watches its
// own node, it counts what they cost, calls held, and releases them.
func measure(ctx context.Context, c *zktest.Cluster, take taker, n, workers int, dir string, held func() error) (result, error) {
	r := result{n: n}
	sess, err := session.Open(ctx, c.Servers(), session.WithSessionTimeout(30*time.Second))
	if err != nil {
		return r, err
	}
	defer sess.Close()

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.heap0, r.g0 = ms.HeapAlloc, runtime.NumGoroutine()
	if r.watch0, err = watches(ctx, c); err != nil {
		return r, err
	}

	holds := make([]holder, n)
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
				h, err := take(ctx, sess, dir+"/h-"+strconv.Itoa(i))
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				holds[i] = h
			}
		}()
	}
	wg.Wait()
	r.took = time.Since(start)
	if f := failed.Load(); f > 0 {
		return r, fmt.Errorf("%d of %d holds failed: %v", f, n, firstErr.Load())
	}
	// Every hold watches its own node once it has lasted 10 ms: wait until
	// the server holds a watch per hold.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if r.watch1, err = watches(ctx, c); err != nil {
			return r, err
		}
		if r.watch1-r.watch0 >= int64(n) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second) // the last reads' goroutines end
	runtime.GC()
	runtime.ReadMemStats(&ms)
	r.heap1, r.g1 = ms.HeapAlloc, runtime.NumGoroutine()
	if err := held(); err != nil {
		return r, err
	}

	rel := time.Now()
	for _, h := range holds {
		if err := h.release(ctx); err != nil {
			return r, err
		}
	}
	r.released = time.Since(rel)
	runtime.KeepAlive(holds)
	return r, nil
}

// watches is the server's watch count.
func watches(ctx context.Context, c *zktest.Cluster) (int64, error) {
	m, err := c.Mntr(ctx, 0)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(m["zk_watch_count"], 10, 64)
}
