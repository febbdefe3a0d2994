package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shepherdzk/shepherd/observe"
	promobs "github.com/shepherdzk/shepherd/observe/prometheus"
	"github.com/shepherdzk/shepherd/session"
)

// The CLI holders' observer: -metrics ADDR serves /metrics (the
// observe/prometheus adapter, hold metrics labelled by path) and probes
// (/readyz while this process holds what it asked for, /healthz and /livez
// while it is not wedged); schedule prints its takeovers and ticks.

// cliObserver is the session's observer for lock, semaphore and schedule.
type cliObserver struct {
	prom         *promobs.Observer // nil without -metrics
	ticks        io.Writer         // schedule's lines, or nil
	maxSuspended time.Duration

	mu        sync.Mutex
	held      map[string]int // holds by path (leaderships included)
	paused    map[string]bool
	suspended time.Time // since when the session is Suspended (zero: it is not)
}

var _ session.Observer = (*cliObserver)(nil)

func (o *cliObserver) SessionEvent(ev session.Event) {
	if o.prom != nil {
		o.prom.SessionEvent(ev)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case ev.State == session.Suspended:
		o.suspended = time.Now()
	case ev.State == session.Connected || ev.State == session.Reconnected:
		o.suspended = time.Time{}
	}
}

func (o *cliObserver) RecipeEvent(ev observe.RecipeEvent) {
	if o.prom != nil {
		o.prom.RecipeEvent(ev)
	}
	if o.ticks != nil && ev.Recipe == "schedule" {
		printTick(o.ticks, ev)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	switch ev.Kind {
	case observe.Elected:
		o.held[ev.Path]++
	case observe.Acquired:
		if ev.Recipe != "election" { // leaderships count from Elected
			o.held[ev.Path]++
		}
	case observe.Released, observe.HoldLost, observe.Revoked:
		if o.held[ev.Path]--; o.held[ev.Path] <= 0 {
			delete(o.held, ev.Path)
		}
		delete(o.paused, ev.Path)
	case observe.HoldPaused:
		o.paused[ev.Path] = true
	case observe.HoldResumed:
		delete(o.paused, ev.Path)
	}
}

// printTick writes a schedule's takeover and ticks as lines on w.
func printTick(w io.Writer, ev observe.RecipeEvent) {
	switch ev.Kind {
	case observe.ScheduleTakeover:
		last := "none yet"
		if ev.Tick >= 0 {
			last = fmt.Sprintf("%d (%s)", ev.Tick, or(ev.Outcome, "started"))
		}
		fmt.Fprintf(w, "shepherd: leading schedule %s (term %d); last tick %s\n", ev.Path, ev.Term, last)
	case observe.TickStarted:
		fmt.Fprintf(w, "shepherd: tick %d (attempt %d, due %s, started %v late)\n", ev.Tick, ev.Attempt,
			ev.Scheduled.UTC().Format(time.RFC3339Nano), ev.Lag)
	case observe.TickFinished:
		fmt.Fprintf(w, "shepherd: tick %d: %s (ran %v)\n", ev.Tick, ev.Outcome, ev.Took.Round(time.Millisecond))
	case observe.TicksSkipped:
		fmt.Fprintf(w, "shepherd: %d missed tick(s) skipped, through tick %d (-catch-up)\n", ev.Count, ev.Tick)
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ready: this process holds something and none of it is paused.
func (o *cliObserver) ready() (holding, paused bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.held) > 0, len(o.paused) > 0
}

// wedged: the session has been Suspended for longer than it can be alive.
func (o *cliObserver) wedged() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.suspended.IsZero() && time.Since(o.suspended) > o.maxSuspended {
		return fmt.Errorf("suspended for %v (over %v)", time.Since(o.suspended).Round(time.Millisecond), o.maxSuspended)
	}
	return nil
}

// holderProbe is the body of -metrics' probes.
type holderProbe struct {
	Status  string `json:"status,omitempty"` // /healthz, /livez: ok or error
	Error   string `json:"error,omitempty"`
	Holding bool   `json:"holding"`
	Paused  bool   `json:"paused,omitempty"`
}

// observe makes the holders' observer (nil when neither -metrics nor a
// schedule's lines want one), and with -metrics starts serving it until the
// command ends.
func (c *cli) observe(o *options) (*cliObserver, error) {
	if o.metrics == "" && !o.tickLines {
		return nil, nil
	}
	obs := &cliObserver{held: map[string]int{}, paused: map[string]bool{}, maxSuspended: 2 * o.sessionTimeout}
	if o.tickLines {
		obs.ticks = c.stderr
	}
	if o.metrics == "" {
		return obs, nil
	}
	var err error
	reg := prometheus.NewRegistry()
	if obs.prom, err = promobs.New(reg, promobs.WithPathLabels()); err != nil {
		return nil, fmt.Errorf("-metrics: %w", err)
	}
	for _, col := range []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(col); err != nil {
			return nil, fmt.Errorf("-metrics: %w", err)
		}
	}
	ln, err := net.Listen("tcp", o.metrics)
	if err != nil {
		return nil, fmt.Errorf("-metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		h, p := obs.ready()
		code := http.StatusOK
		if !h || p {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, holderProbe{Holding: h, Paused: p})
	})
	health := func(w http.ResponseWriter, _ *http.Request) {
		h, p := obs.ready()
		body, code := holderProbe{Status: "ok", Holding: h, Paused: p}, http.StatusOK
		if err := obs.wedged(); err != nil {
			body.Status, body.Error, code = "error", err.Error(), http.StatusInternalServerError
		}
		writeJSON(w, code, body)
	}
	mux.HandleFunc("GET /healthz", health)
	mux.HandleFunc("GET /livez", health)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(c.stderr, "shepherd: serving /metrics, /readyz, /healthz and /livez on http://%s\n", ln.Addr())
	go func() { _ = srv.Serve(ln) }()
	c.atExit = append(c.atExit, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	return obs, nil
}
