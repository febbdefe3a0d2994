// Command failover is an active/passive HTTP service: every replica joins an
// election; the leader serves ("active", with its id and term), standbys
// answer 503 naming the leader. SIGTERM resigns first, so a rolling restart
// hands over in milliseconds; a crashed leader is replaced once its ZooKeeper
// session expires.
//
//	go run ./examples/failover -id a -listen 127.0.0.1:8081
//	go run ./examples/failover -id b -listen 127.0.0.1:8082
//	curl -i http://127.0.0.1:8081/
//	curl http://127.0.0.1:8081/metrics   # Prometheus metrics
//	curl -i http://127.0.0.1:8081/healthz # liveness probe
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shepherdzk/shepherd/election"
	promobs "github.com/shepherdzk/shepherd/observe/prometheus"
	"github.com/shepherdzk/shepherd/session"
)

func main() {
	id := flag.String("id", "", "replica id (required)")
	listen := flag.String("listen", "127.0.0.1:8081", "HTTP listen address (loopback)")
	zk := flag.String("zk", envOr("SHEPHERD_ZK", "127.0.0.1:2181"), "ZooKeeper connect string (env SHEPHERD_ZK)")
	path := flag.String("path", "/shepherd/examples/failover", "election path")
	timeout := flag.Duration("session-timeout", 4*time.Second, "ZooKeeper session timeout: how long a crashed leader keeps leadership")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("replica", *id)
	if err := run(*id, *listen, *zk, *path, *timeout, log); err != nil {
		log.Error("failover", "err", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// state is what the HTTP handlers show.
type state struct {
	mu     sync.Mutex
	id     string
	lead   context.Context // the current leadership's context, if any
	term   election.Term
	leader election.Leader
}

// Status is the JSON answer of /status.
type Status struct {
	ID       string `json:"id"`
	Active   bool   `json:"active"`
	Term     int64  `json:"term,omitempty"`
	LeaderID string `json:"leader"`
}

func (s *state) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Active only while the leadership's context lives: it is cancelled the
	// moment leadership may be lost, before another replica can be elected.
	active := s.lead != nil && s.lead.Err() == nil
	return Status{ID: s.id, Active: active, Term: int64(s.term), LeaderID: s.leader.ID}
}

func run(id, listen, zk, path string, timeout time.Duration, log *slog.Logger) error {
	if id == "" {
		return errors.New("-id is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Metrics: the session and the election report to a private registry,
	// served at /metrics.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	obs, err := promobs.New(reg)
	if err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	sess, err := session.Connect(octx, zk, session.WithSessionTimeout(timeout), session.WithObserver(obs))
	cancel()
	if err != nil {
		return err
	}
	defer sess.Close()
	e, err := election.New(sess, path, id)
	if err != nil {
		return err
	}

	st := &state{id: id}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s := st.status()
		if !s.Active {
			w.Header().Set("X-Leader", s.LeaderID)
			http.Error(w, fmt.Sprintf("standby %s: the leader is %q\n", s.ID, s.LeaderID), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "active %s (term %d)\n", s.ID, s.Term)
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st.status())
	})
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// A liveness probe: unhealthy when a lost leadership's callback cannot
	// stop, or the ZooKeeper connection has been suspended for over a
	// session timeout.
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := e.Healthy(timeout); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	log.Info("serving", "listen", ln.Addr().String(), "election", path)

	// SIGTERM cancels ctx: Run resigns at once (the next replica is elected
	// in milliseconds), then the HTTP server stops.
	err = e.Run(ctx, election.Callbacks{
		OnElected: func(lctx context.Context, term election.Term) {
			st.mu.Lock()
			st.lead, st.term = lctx, term
			st.mu.Unlock()
			log.Info("elected: serving as active", "term", term)
			<-lctx.Done()
			log.Info("leadership ended: standby", "term", term)
		},
		OnLeader: func(l election.Leader) {
			st.mu.Lock()
			st.leader = l
			st.mu.Unlock()
			log.Info("leader changed", "leader", l.ID, "term", l.Term)
		},
	})
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return err
}
