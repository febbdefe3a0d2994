package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"time"
)

// resourceStats mirrors examples/workers' /stats.
type resourceStats struct {
	Max       int `json:"max"`
	Served    int `json:"served"`
	Peak      int `json:"peak"`
	Overloads int `json:"overloads"`
}

// runWorkers runs examples/workers: a fake resource that allows 3 callers,
// and 6 worker processes sharing a semaphore of 3 leases; then the same
// workers without the semaphore, to show what it prevents.
func (d *demo) runWorkers(ctx context.Context) error {
	fmt.Fprintln(d.out, "bounded concurrency: 6 worker processes, a semaphore of 3 leases, a resource that fails past 3 callers")
	for _, withLease := range []bool{true, false} {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		if _, err := d.spawn("workers", "resource", "-listen", addr, "-max", "3"); err != nil {
			return err
		}
		base := "http://" + addr
		if err := waitHTTP(ctx, base+"/stats"); err != nil {
			return err
		}
		what := "with the semaphore"
		if !withLease {
			what = "without it (-no-lease)"
		}
		d.say("6 workers × 4 calls, %s", what)
		var ws []*exec.Cmd
		t0 := time.Now()
		for i := 1; i <= 6; i++ {
			args := []string{"worker", "-id", fmt.Sprint("w", i), "-resource", base, "-zk", d.zk.ConnectString(),
				"-leases", "3", "-jobs", "4"}
			if !withLease {
				args = append(args, "-no-lease")
			}
			w, err := d.spawn("workers", args...)
			if err != nil {
				return err
			}
			ws = append(ws, w)
		}
		for _, w := range ws {
			if err := d.waitExit(ctx, w); err != nil {
				return err
			}
		}
		st, err := getStats(ctx, base+"/stats")
		if err != nil {
			return err
		}
		d.say("%d calls served in %v; peak %d concurrent callers (limit %d); %d overloads",
			st.Served, time.Since(t0).Round(time.Millisecond), st.Peak, st.Max, st.Overloads)
		if withLease && (st.Overloads > 0 || st.Peak > st.Max) {
			return fmt.Errorf("the semaphore let %d callers in at once (limit %d)", st.Peak, st.Max)
		}
	}
	d.note("with the semaphore the resource never sees more than 3 callers; without it, it is overloaded")
	return nil
}

func waitHTTP(ctx context.Context, url string) error {
	for i := 0; i < 100; i++ {
		if _, err := getStats(ctx, url); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not answer", url)
}

func getStats(ctx context.Context, url string) (resourceStats, error) {
	var st resourceStats
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// waitExit waits (bounded) for a spawned process to end.
func (d *demo) waitExit(ctx context.Context, c *exec.Cmd) error {
	select {
	case <-d.done[c]:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(60 * time.Second):
		return fmt.Errorf("%s did not finish", c.Path)
	}
	if !c.ProcessState.Success() {
		return fmt.Errorf("%s: %v", c.Path, c.ProcessState)
	}
	return nil
}
