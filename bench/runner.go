package bench

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Target is the ZooKeeper the runs use: a zktest.Cluster.
type Target interface {
	MntrSource
	ConnectString() string
}

// TLSTarget is a Target that serves clients over TLS only (a zktest.Cluster
// started WithTLS): ClientTLS returns the configuration clients connect with,
// nil for a plaintext cluster.
type TLSTarget interface {
	ClientTLS() *tls.Config
}

// Config configures a Runner.
type Config struct {
	// Repeat is the number of repetitions (the table shows medians over them).
	Repeat int
	// Workloads to run, in order (default: all).
	Workloads []string
	// Params holds each workload's parameters (default: Params(false)).
	Params map[string]Spec
	// Passes is, per workload, how many times every repetition runs it on
	// each peer (default 1): more samples, in the same windows, for a
	// workload whose run-to-run spread is wider than the peers' differences
	// (W2: 16 clients and the server share the machine's cores).
	Passes map[string]int
	// Warmup runs a short unrecorded W1 on every peer first (a JVM warms up).
	Warmup bool
	// Label describes the setup in records and the table ("standalone, tmpfs").
	Label string
	// JSON, if set, receives one JSON line per run as it completes.
	JSON io.Writer
	// Progress, if set, receives one human-readable line per run.
	Progress io.Writer
}

// Record is one run, as written to the JSON lines output.
type Record struct {
	Time     time.Time          `json:"time"`
	Label    string             `json:"label"`
	Rep      int                `json:"rep"`
	Peer     string             `json:"peer"`
	Workload string             `json:"workload"`
	Spec     Spec               `json:"spec"`
	Ops      int                `json:"ops"`
	ElapsedS float64            `json:"elapsed_s"`
	Metrics  map[string]float64 `json:"metrics"`
	// Packets is zk_packets_received over the measured part (every node,
	// less the meter's own reads): requests, pings included.
	Packets int64 `json:"packets"`
	// Notifications is the watch notifications the servers fired meanwhile.
	Notifications int64 `json:"notifications"`
	// Bytes is what went through the servers both ways meanwhile (see
	// byteKeys), less the meter's own reads.
	Bytes int64 `json:"bytes"`
	// Quiet is false when the server was still busy when counting started or
	// ended (the counts may then include a neighbour's requests).
	Quiet bool   `json:"quiet"`
	Error string `json:"error,omitempty"`
}

// Runner runs peers on workloads against one ZooKeeper and collects Records.
type Runner struct {
	cfg    Config
	target Target
	meter  *Meter
	runID  string
	start  time.Time
	mu     sync.Mutex
	paths  map[string]int // runs per path: each run's path is its own
}

// NewRunner returns a runner against target; it calibrates the counters.
func NewRunner(ctx context.Context, target Target, cfg Config) (*Runner, error) {
	if cfg.Repeat < 1 {
		cfg.Repeat = 1
	}
	if len(cfg.Workloads) == 0 {
		cfg.Workloads = Workloads
	}
	if cfg.Params == nil {
		cfg.Params = Params(false)
	}
	r := &Runner{cfg: cfg, target: target, meter: NewMeter(target),
		runID: time.Now().Format("20060102-150405.000"), start: time.Now()}
	if err := r.meter.Calibrate(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Meter is the runner's counter reader.
func (r *Runner) Meter() *Meter { return r.meter }

func (r *Runner) progress(format string, args ...any) {
	if r.cfg.Progress != nil {
		fmt.Fprintf(r.cfg.Progress, "[%6.1fs] ", time.Since(r.start).Seconds())
		fmt.Fprintf(r.cfg.Progress, format+"\n", args...)
	}
}

// Run runs every repetition: within one, each workload in turn, and for each
// workload every peer that supports it, one after the other, Passes times
// (the order rotates with the repetition and the pass, so no peer always
// runs first or last).
func (r *Runner) Run(ctx context.Context, peers []Peer) ([]Record, error) {
	if r.cfg.Warmup {
		// Unrecorded short W1 and W2 on every peer: the server's and the
		// JVM's JIT compilers get to work before anything counts.
		for _, p := range peers {
			for _, w := range []string{W1, W2} {
				s, ok := r.cfg.Params[w]
				if !ok || !p.Supports(w) {
					continue
				}
				s.Seconds = min(s.Seconds, 1)
				rec := r.RunOne(ctx, p, s, 0)
				r.progress("warm-up %s %-10s %s", w, p.Name(), brief(rec))
			}
		}
	}
	var recs []Record
	for rep := 1; rep <= r.cfg.Repeat; rep++ {
		for _, w := range r.cfg.Workloads {
			var ps []Peer
			for _, p := range peers {
				if p.Supports(w) {
					ps = append(ps, p)
				}
			}
			for i := range max(r.cfg.Passes[w], 1) * len(ps) {
				if err := ctx.Err(); err != nil {
					return recs, err
				}
				p := ps[(i+rep-1+i/len(ps))%len(ps)] // each pass starts one peer later
				rec := r.RunOne(ctx, p, r.cfg.Params[w], rep)
				recs = append(recs, rec)
				r.progress("rep %d/%d %s %-10s %s", rep, r.cfg.Repeat, w, p.Name(), brief(rec))
				if r.cfg.JSON != nil {
					b, err := json.Marshal(rec)
					if err != nil {
						return recs, err
					}
					if _, err := r.cfg.JSON.Write(append(b, '\n')); err != nil {
						return recs, err
					}
				}
			}
		}
	}
	return recs, nil
}

func brief(rec Record) string {
	if rec.Error != "" {
		return "FAILED: " + rec.Error
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ops=%d in %.2fs", rec.Ops, rec.ElapsedS)
	for _, k := range []string{MOpsPerS, MLatencyP50, MLeasesInUse, MRequestsPerOp, MNotifsPerOp, MBytesPerOp, MViolations, MOverLimit} {
		if v, ok := rec.Metrics[k]; ok {
			fmt.Fprintf(&b, " %s=%s", k, fmtNum(v))
		}
	}
	if !rec.Quiet {
		b.WriteString(" (server not quiet around the run)")
	}
	return b.String()
}

// RunOne runs peer p once on spec's workload, in a fresh path, and returns
// the record (Error set if it failed).
func (r *Runner) RunOne(ctx context.Context, p Peer, spec Spec, rep int) Record {
	spec.Connect = r.target.ConnectString()
	if t, ok := r.target.(TLSTarget); ok {
		spec.TLS = t.ClientTLS()
	}
	spec.Path = r.newPath(fmt.Sprintf("/shepherd-bench/%s/%d-%s-%s", r.runID, rep, spec.Workload, p.Name()))
	rec := Record{Time: time.Now(), Label: r.cfg.Label, Rep: rep, Peer: p.Name(), Workload: spec.Workload, Spec: spec}
	if err := r.runOne(ctx, p, spec, &rec); err != nil {
		rec.Error = err.Error()
	}
	return rec
}

// newPath returns p, or p with a suffix if a run had it already (a second
// pass of a workload): a path of its own for every run. The first run's is p
// itself, so that bytes counted per operation (the paths are in every
// request) compare with earlier runs'.
func (r *Runner) newPath(p string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.paths == nil {
		r.paths = map[string]int{}
	}
	r.paths[p]++
	if n := r.paths[p]; n > 1 {
		return fmt.Sprintf("%s.%d", p, n)
	}
	return p
}

func (r *Runner) runOne(ctx context.Context, p Peer, spec Spec, rec *Record) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	if err := ensurePath(ctx, spec.Servers(), ZKDialer(spec.TLS), spec.Path); err != nil {
		return err
	}
	run, err := p.Prepare(ctx, spec)
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	closed := false
	defer func() {
		if !closed {
			cctx, cancel := context.WithTimeout(context.Background(), spec.Grace())
			defer cancel()
			_ = run.Close(cctx)
		}
	}()
	if spec.Workload == W8 {
		return r.runRoll(ctx, run, spec, rec)
	}
	before, quiet1, err := r.meter.Quiet(ctx, 3*time.Second)
	if err != nil {
		return err
	}
	res, err := run.Go(ctx)
	if err != nil {
		return fmt.Errorf("go: %w", err)
	}
	after, quiet2, err := r.meter.Quiet(ctx, 3*time.Second)
	if err != nil {
		return err
	}
	closed = true
	if err := run.Close(ctx); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	d := r.meter.Delta(before, after)
	rec.Ops, rec.ElapsedS, rec.Metrics = res.Ops, res.ElapsedS, res.Metrics
	if rec.Metrics == nil {
		rec.Metrics = map[string]float64{}
	}
	rec.Packets, rec.Notifications, rec.Bytes, rec.Quiet = d.Packets, d.Notifications, d.Bytes, quiet1 && quiet2
	rec.Metrics[MBytesTotal] = float64(d.Bytes)
	if res.Ops > 0 {
		rec.Metrics[MBytesPerOp] = float64(d.Bytes) / float64(res.Ops)
		rec.Metrics[MRequestsPerOp] = float64(d.Packets) / float64(res.Ops)
		rec.Metrics[MNotifsPerOp] = float64(d.Notifications) / float64(res.Ops)
	} else {
		return errors.New("no operation completed")
	}
	return nil
}

// EnsurePath creates path and its parents (persistent, empty) through a
// short-lived session of its own, so that no peer pays for them in its
// counts and no idle session pings during a run.
func EnsurePath(ctx context.Context, servers []string, path string) error {
	return ensurePath(ctx, servers, nil, path)
}

func ensurePath(ctx context.Context, servers []string, dialer zk.Dialer, path string) error {
	conn, err := DialWith(ctx, servers, 10*time.Second, dialer)
	if err != nil {
		return err
	}
	defer conn.Close()
	p := ""
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		p += "/" + part
		// Empty data, not nil: a node with null data breaks Kazoo's
		// Semaphore (it calls .decode() on the None it reads).
		if _, err := conn.Create(p, []byte{}, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("bench: create %s: %w", p, err)
		}
	}
	return nil
}

// Dial opens a go-zookeeper session (its logging off) and waits until it is
// usable or ctx ends.
func Dial(ctx context.Context, servers []string, sessionTimeout time.Duration) (*zk.Conn, error) {
	return DialWith(ctx, servers, sessionTimeout, nil)
}

// DialWith is Dial through dialer (nil: go-zookeeper's).
func DialWith(ctx context.Context, servers []string, sessionTimeout time.Duration, dialer zk.Dialer) (*zk.Conn, error) {
	quiet := zk.WithLogger(log.New(io.Discard, "", 0))
	var conn *zk.Conn
	var events <-chan zk.Event
	var err error
	if dialer != nil {
		conn, events, err = zk.Connect(servers, sessionTimeout, quiet, zk.WithDialer(dialer))
	} else {
		conn, events, err = zk.Connect(servers, sessionTimeout, quiet)
	}
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(15 * time.Second)
	defer t.Stop()
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn, nil
			}
		case <-t.C:
			conn.Close()
			return nil, fmt.Errorf("bench: no session with %v within 15s", servers)
		case <-ctx.Done():
			conn.Close()
			return nil, ctx.Err()
		}
	}
}

// ZKDialer is a go-zookeeper dialer that speaks TLS with cfg, or nil (the
// default, plaintext dialer) when cfg is nil. The server name, unless cfg
// names one, is the host of the address dialled.
func ZKDialer(cfg *tls.Config) zk.Dialer {
	if cfg == nil {
		return nil
	}
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		d := &net.Dialer{Timeout: timeout}
		return tls.DialWithDialer(d, network, addr, cfg)
	}
}

func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "—"
	case a >= 100 || v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
