// Command workers shows bounded concurrency across processes: a pool of
// worker processes share a semaphore of maxLeases 3 to call a fake
// rate-limited resource that counts its concurrent callers and fails loudly
// past 3.
//
//	go run ./examples/workers resource -listen 127.0.0.1:9090 -max 3
//	go run ./examples/workers worker -id w1 -resource http://127.0.0.1:9090 -jobs 5
//	curl http://127.0.0.1:9090/stats
//
// Each call is made with the lease's context: if the lease is lost (the
// worker's ZooKeeper connection drops), the call is abandoned at once. Each
// lease carries a numbered slot (semaphore.WithSlots), 0..maxLeases-1, that
// no two workers holding a lease at the same moment share: here it names the
// shard of the work a worker takes while it holds the lease.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: workers resource|worker [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "resource":
		err = resource(ctx, os.Args[2:])
	case "worker":
		err = worker(ctx, os.Args[2:])
	default:
		fmt.Fprintf(os.Stderr, "workers: unknown mode %q (want resource or worker)\n", os.Args[1])
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "workers:", err)
		os.Exit(1)
	}
}

// Stats is what the resource reports at /stats.
type Stats struct {
	Max       int `json:"max"`
	Served    int `json:"served"`
	Peak      int `json:"peak"`
	Overloads int `json:"overloads"`
}

// resource is the fake rate-limited service.
func resource(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("resource", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:9090", "listen address (loopback)")
	max := fs.Int("max", 3, "concurrent callers allowed")
	work := fs.Duration("work", 100*time.Millisecond, "time each call takes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var mu sync.Mutex
	var inFlight int
	st := Stats{Max: *max}
	mux := http.NewServeMux()
	mux.HandleFunc("/call", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		n := inFlight
		st.Peak = max0(st.Peak, n)
		over := n > *max
		if over {
			st.Overloads++
		}
		mu.Unlock()
		defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
		if over {
			fmt.Fprintf(os.Stderr, "resource: OVERLOADED: %d concurrent callers, limit %d\n", n, *max)
			http.Error(w, fmt.Sprintf("overloaded: %d callers, limit %d", n, *max), http.StatusTooManyRequests)
			return
		}
		select {
		case <-time.After(*work):
		case <-r.Context().Done():
			return
		}
		mu.Lock()
		st.Served++
		mu.Unlock()
		fmt.Fprintf(w, "ok (%d in flight)\n", n)
	})
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(st)
	})
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func max0(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// worker runs jobs, each under a lease.
func worker(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	id := fs.String("id", fmt.Sprint("w", os.Getpid()), "worker id")
	res := fs.String("resource", "http://127.0.0.1:9090", "the resource's base URL")
	zk := fs.String("zk", envOr("SHEPHERD_ZK", "127.0.0.1:2181"), "ZooKeeper connect string (env SHEPHERD_ZK)")
	path := fs.String("path", "/shepherd/examples/workers", "semaphore path")
	leases := fs.Int("leases", 3, "maxLeases: callers allowed at once")
	jobs := fs.Int("jobs", 5, "calls to make")
	noLease := fs.Bool("no-lease", false, "call without taking a lease (to see the resource fail)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(ctx, 15*time.Second)
	sess, err := session.Connect(octx, *zk)
	cancel()
	if err != nil {
		return err
	}
	defer sess.Close()
	sem, err := semaphore.New(sess, *path, *leases, semaphore.WithData([]byte(*id)), semaphore.WithSlots())
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for j := 1; j <= *jobs; j++ {
		callCtx := ctx
		var lease *semaphore.Lease
		if !*noLease {
			waited := time.Now()
			lease, err = sem.Acquire(ctx)
			if err != nil {
				return err
			}
			callCtx = lease.Context() // the call ends if the lease is lost
			fmt.Printf("%s job %d: lease after %v, slot %d: shard %d of %d\n", *id, j,
				time.Since(waited).Round(time.Millisecond), lease.Slot(), lease.Slot(), *leases)
		}
		url := *res + "/call"
		if lease != nil {
			url += fmt.Sprintf("?shard=%d", lease.Slot())
		}
		req, _ := http.NewRequestWithContext(callCtx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			fmt.Printf("%s job %d: %d %s", *id, j, resp.StatusCode, b)
		} else {
			fmt.Printf("%s job %d: %v\n", *id, j, err)
		}
		if lease != nil {
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = lease.Release(rctx)
			cancel()
		}
	}
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
