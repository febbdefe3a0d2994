package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	promobs "github.com/shepherdzk/shepherd/observe/prometheus"
)

// newProbeServer serves elect -http, in the Kubernetes convention: /readyz
// (200 while leading and not paused, else 503: "send me traffic"), /healthz
// and /livez, the same check (200 while this process works, leader or
// follower, paused or not; 500 when it is stuck: "restart me"), and
// /metrics. The observer feeds /metrics.
func newProbeServer(st *leaderState) (*http.Server, *promobs.Observer, error) {
	reg := prometheus.NewRegistry()
	obs, err := promobs.New(reg)
	if err != nil {
		return nil, nil, fmt.Errorf("elect: metrics: %w", err)
	}
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, nil, fmt.Errorf("elect: metrics: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, nil, fmt.Errorf("elect: metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", st.serveReady)
	mux.HandleFunc("GET /healthz", st.serveHealth)
	mux.HandleFunc("GET /livez", st.serveHealth)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, obs, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
