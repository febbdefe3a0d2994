// Package gopeers runs the workloads in the runner's own process for Go
// client libraries: go-zookeeper's zk.Lock, a hand-written minimal lock on raw
// go-zookeeper (the floor), and — through the same drivers — shepherd.
//
// A library plugs in as a Library: a way to open a session (Client) and, per
// session, the recipes it offers. The drivers here implement each workload
// once, with the same rules as the Java and Python drivers (bench/peers).
//
// Adding shepherd is a file here and one line in bench/cmd/zkbench (see the
// marked registration point there). A sketch, against the API in DESIGN.md:
//
//	func Shepherd() Library {
//		return Library{Name: "shepherd", Workloads: bench.Workloads,
//			Connect: func(ctx context.Context, spec bench.Spec) (Client, error) {
//				s, err := session.Open(ctx, spec.Servers(), session.WithTimeout(spec.SessionTimeout()))
//				...
//				return shepherdClient{s}, err
//			}}
//	}
//
//	func (c shepherdClient) NewLocker(p string) (Locker, error) { return mutex.New(c.s, p) }
//	func (c shepherdClient) NewSemaphore(p string, n int) (Semaphore, error) {
//		sem, err := semaphore.New(c.s, p, n)
//		return SemaphoreFunc(func(ctx context.Context) (func(context.Context) error, error) {
//			l, err := sem.Acquire(ctx) // a *Lease
//			if err != nil {
//				return nil, err
//			}
//			return l.Release, nil
//		}), err
//	}
//	func (c shepherdClient) NewCandidate(p, id string) (Candidate, error) { return election.New(c.s, p, id) }
//
// (*Mutex has Lock(ctx)/Unlock(ctx) and *Election has Campaign(ctx)/Resign(ctx),
// so they are a Locker and a Candidate as they stand.) Every session a run
// opens is closed when the run ends; a Client's Close must end its session.
package gopeers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shepherdzk/shepherd/bench"
)

// Locker is one session's handle on the benchmark's mutex.
type Locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// Semaphore is one session's handle on the benchmark's semaphore.
type Semaphore interface {
	// Acquire returns once a lease is held; release gives it back.
	Acquire(ctx context.Context) (release func(context.Context) error, err error)
}

// SemaphoreFunc adapts a function to a Semaphore.
type SemaphoreFunc func(ctx context.Context) (release func(context.Context) error, err error)

// Acquire calls f.
func (f SemaphoreFunc) Acquire(ctx context.Context) (func(context.Context) error, error) {
	return f(ctx)
}

// Candidate is one session's handle on the benchmark's election.
type Candidate interface {
	// Campaign returns once this candidate leads.
	Campaign(ctx context.Context) error
	// Resign gives leadership up gracefully.
	Resign(ctx context.Context) error
}

// Client is one ZooKeeper session of a library. A recipe constructor returns
// an error wrapping errors.ErrUnsupported when the library lacks the recipe
// (Library.Workloads lists the workloads it can run).
type Client interface {
	NewLocker(path string) (Locker, error)
	NewSemaphore(path string, maxLeases int) (Semaphore, error)
	NewCandidate(path, id string) (Candidate, error)
	// Children counts path's children (used only while preparing W5): from
	// its Stat, not a listing (a poll listing ten thousand waiters every
	// few milliseconds would load the server it measures).
	Children(ctx context.Context, path string) (int, error)
	Close()
}

// Library is a Go client library under test.
type Library struct {
	Name      string
	Workloads []string
	// Connect opens one session and returns once it is usable.
	Connect func(ctx context.Context, spec bench.Spec) (Client, error)
	// Roll opens one session for W8 (a rolling restart), its loss signals
	// reported to st; nil if the library does not run W8.
	Roll func(ctx context.Context, spec bench.Spec, st *RollStats) (RollClient, error)
	// Deploy makes a candidate of W9 (a rolling deploy) on c, of version;
	// nil if the library does not run W9 (see w9.go).
	Deploy func(c Client, path, id string, version int) (Deployed, error)
}

// Peer turns a Library into a bench.Peer that runs in-process.
func Peer(lib Library) bench.Peer { return &peer{lib: lib} }

type peer struct{ lib Library }

func (p *peer) Name() string { return p.lib.Name }
func (p *peer) Close() error { return nil }

func (p *peer) Supports(w string) bool {
	for _, x := range p.lib.Workloads {
		if x == w {
			return true
		}
	}
	return false
}

// run is one prepared run. Its context bounds everything the run does; when
// it ends (Close, or the bound passes) every session is closed, which also
// unblocks calls that take no context (zk.Lock).
type run struct {
	spec    bench.Spec
	ctx     context.Context
	cancel  context.CancelFunc
	mu      sync.Mutex // guards clients
	closeMu sync.Mutex // held while closing, so Close returns after they are closed
	clients []Client
	goFn    func() (bench.Result, error)
	startFn func() error   // W8: the measured part begins
	bg      sync.WaitGroup // goroutines started in Prepare
}

func (p *peer) Prepare(ctx context.Context, spec bench.Spec) (bench.Run, error) {
	if !p.Supports(spec.Workload) {
		return nil, fmt.Errorf("gopeers: %s does not run %s", p.lib.Name, spec.Workload)
	}
	// Bound: preparing (up to a grace), the load loop, and a grace to drain.
	rctx, cancel := context.WithTimeout(context.Background(), spec.Duration()+3*spec.Grace())
	r := &run{spec: spec, ctx: rctx, cancel: cancel}
	context.AfterFunc(rctx, r.closeClients) // runs once rctx ends, whichever way
	pctx, pcancel := context.WithTimeout(ctx, spec.Grace())
	defer pcancel()
	var err error
	switch spec.Workload {
	case bench.W1:
		err = r.prepareW1(pctx, p.lib)
	case bench.W2:
		err = r.prepareW2(pctx, p.lib)
	case bench.W3:
		err = r.prepareW3(pctx, p.lib)
	case bench.W4:
		err = r.prepareW4(pctx, p.lib)
	case bench.W5, bench.W7s, bench.W7l, bench.W7x:
		err = r.prepareW5(pctx, p.lib)
	case bench.W6:
		err = r.prepareW6(pctx, p.lib)
	case bench.W8:
		err = r.prepareW8(pctx, p.lib)
	case bench.W9:
		err = r.prepareW9(pctx, p.lib)
	default:
		err = fmt.Errorf("gopeers: unknown workload %q", spec.Workload)
	}
	if err != nil {
		_ = r.Close(ctx)
		return nil, err
	}
	return r, nil
}

func (r *run) Go(ctx context.Context) (bench.Result, error) {
	stop := context.AfterFunc(ctx, r.cancel) // the caller giving up ends the run
	defer stop()
	return r.goFn()
}

// Start implements bench.Starter (W8).
func (r *run) Start(context.Context) error {
	if r.startFn == nil {
		return fmt.Errorf("gopeers: %s has no start", r.spec.Workload)
	}
	return r.startFn()
}

func (r *run) Close(context.Context) error {
	r.cancel()
	r.closeClients()
	r.bg.Wait()
	return nil
}

func (r *run) closeClients() {
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	r.mu.Lock()
	cs := r.clients
	r.clients = nil
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Close()
		}()
	}
	wg.Wait()
}

// connect opens n sessions concurrently.
func (r *run) connect(ctx context.Context, lib Library, n int) ([]Client, error) {
	cs := make([]Client, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs[i], errs[i] = lib.Connect(ctx, r.spec)
		}()
	}
	wg.Wait()
	r.mu.Lock()
	for _, c := range cs {
		if c != nil {
			r.clients = append(r.clients, c)
		}
	}
	r.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return cs, nil
}

// W1: one session, acquire+release cycles until Cycles or Seconds.
func (r *run) prepareW1(ctx context.Context, lib Library) error {
	cs, err := r.connect(ctx, lib, 1)
	if err != nil {
		return err
	}
	l, err := cs[0].NewLocker(r.spec.Path)
	if err != nil {
		return err
	}
	r.goFn = func() (bench.Result, error) {
		lat := make([]time.Duration, 0, r.spec.Cycles)
		start := time.Now()
		deadline := start.Add(r.spec.Duration())
		for len(lat) < r.spec.Cycles && time.Now().Before(deadline) {
			t0 := time.Now()
			if err := l.Lock(r.ctx); err != nil {
				return bench.Result{}, fmt.Errorf("lock: %w", err)
			}
			lat = append(lat, time.Since(t0))
			if err := l.Unlock(r.ctx); err != nil {
				return bench.Result{}, fmt.Errorf("unlock: %w", err)
			}
		}
		el := time.Since(start).Seconds()
		m := map[string]float64{bench.MOpsPerS: float64(len(lat)) / el}
		bench.LatencyMetrics(m, lat)
		return bench.Result{Ops: len(lat), ElapsedS: el, Metrics: m}, nil
	}
	return nil
}

// loadLoop runs body on n goroutines until Cycles operations were claimed or
// Seconds passed. A goroutine checks both before it starts an operation, and
// an operation once started completes: a contended line drains rather than
// abandoning its nodes. It returns the per-operation wait latencies.
func (r *run) loadLoop(n int, body func(i int) (time.Duration, error)) ([]time.Duration, float64, error) {
	var tickets atomic.Int64
	start := time.Now()
	deadline := start.Add(r.spec.Duration())
	lats := make([][]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && tickets.Add(1) <= int64(r.spec.Cycles) {
				d, err := body(i)
				if err != nil {
					errs[i] = err
					r.cancel() // fail fast: unblock the others
					return
				}
				lats[i] = append(lats[i], d)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	return all, el, errors.Join(errs...)
}

// W2: Sessions sessions contend for one mutex; each acquisition checks with
// an in-process holder counter that nobody else holds it.
func (r *run) prepareW2(ctx context.Context, lib Library) error {
	cs, err := r.connect(ctx, lib, r.spec.Sessions)
	if err != nil {
		return err
	}
	ls := make([]Locker, len(cs))
	for i, c := range cs {
		if ls[i], err = c.NewLocker(r.spec.Path); err != nil {
			return err
		}
	}
	r.goFn = func() (bench.Result, error) {
		var holders, violations atomic.Int64
		lat, el, err := r.loadLoop(len(ls), func(i int) (time.Duration, error) {
			t0 := time.Now()
			if err := ls[i].Lock(r.ctx); err != nil {
				return 0, fmt.Errorf("lock: %w", err)
			}
			d := time.Since(t0)
			if holders.Add(1) != 1 {
				violations.Add(1)
			}
			holders.Add(-1)
			if err := ls[i].Unlock(r.ctx); err != nil {
				return 0, fmt.Errorf("unlock: %w", err)
			}
			return d, nil
		})
		if err != nil {
			return bench.Result{}, err
		}
		m := map[string]float64{bench.MOpsPerS: float64(len(lat)) / el, bench.MViolations: float64(violations.Load())}
		bench.LatencyMetrics(m, lat)
		return bench.Result{Ops: len(lat), ElapsedS: el, Metrics: m}, nil
	}
	return nil
}

// W3: Sessions sessions share a semaphore of Leases leases, each holding a
// lease for HoldMS; an in-process counter tracks the leases in use.
func (r *run) prepareW3(ctx context.Context, lib Library) error {
	cs, err := r.connect(ctx, lib, r.spec.Sessions)
	if err != nil {
		return err
	}
	ss := make([]Semaphore, len(cs))
	for i, c := range cs {
		if ss[i], err = c.NewSemaphore(r.spec.Path, r.spec.Leases); err != nil {
			return err
		}
	}
	r.goFn = func() (bench.Result, error) {
		var over atomic.Int64
		inUse := bench.NewTimeWeighted()
		lat, el, err := r.loadLoop(len(ss), func(i int) (time.Duration, error) {
			t0 := time.Now()
			release, err := ss[i].Acquire(r.ctx)
			if err != nil {
				return 0, fmt.Errorf("acquire: %w", err)
			}
			d := time.Since(t0)
			if inUse.Add(1) > r.spec.Leases {
				over.Add(1)
			}
			time.Sleep(r.spec.Hold()) // the work done under the lease
			inUse.Add(-1)
			if err := release(r.ctx); err != nil {
				return 0, fmt.Errorf("release: %w", err)
			}
			return d, nil
		})
		if err != nil {
			return bench.Result{}, err
		}
		m := map[string]float64{
			bench.MOpsPerS:     float64(len(lat)) / el,
			bench.MLeasesInUse: inUse.Mean(),
			bench.MOverLimit:   float64(over.Load()),
		}
		bench.LatencyMetrics(m, lat)
		return bench.Result{Ops: len(lat), ElapsedS: el, Metrics: m}, nil
	}
	return nil
}

type elected struct {
	who int
	at  time.Time
}

// W4: Sessions candidates; the leader leads for TermMS, then resigns; the
// time from its resignation to the moment another candidate's Campaign
// returns is one handoff. The resigned candidate campaigns again at once.
func (r *run) prepareW4(ctx context.Context, lib Library) error {
	cs, err := r.connect(ctx, lib, r.spec.Sessions)
	if err != nil {
		return err
	}
	cands := make([]Candidate, len(cs))
	for i, c := range cs {
		if cands[i], err = c.NewCandidate(r.spec.Path, fmt.Sprintf("candidate-%d", i)); err != nil {
			return err
		}
	}
	electedC := make(chan elected, len(cands))
	resigned := make([]chan struct{}, len(cands))
	failed := make(chan error, len(cands))
	for i := range cands {
		resigned[i] = make(chan struct{})
		r.bg.Add(1)
		go func() {
			defer r.bg.Done()
			for {
				if err := cands[i].Campaign(r.ctx); err != nil {
					if r.ctx.Err() == nil {
						failed <- fmt.Errorf("candidate %d: campaign: %w", i, err)
					}
					return
				}
				electedC <- elected{i, time.Now()} // buffered: one leader at a time
				select {
				case <-resigned[i]: // the driver resigned for us: rejoin
				case <-r.ctx.Done():
					return
				}
			}
		}()
	}
	var leader elected
	select {
	case leader = <-electedC:
	case err := <-failed:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no first leader: %w", ctx.Err())
	}
	r.goFn = func() (bench.Result, error) {
		var lat []time.Duration
		start := time.Now()
		deadline := start.Add(r.spec.Duration())
		for len(lat) < r.spec.Cycles && time.Now().Before(deadline) {
			if err := SleepCtx(r.ctx, r.spec.Term()); err != nil {
				return bench.Result{}, err
			}
			t0 := time.Now()
			if err := cands[leader.who].Resign(r.ctx); err != nil {
				return bench.Result{}, fmt.Errorf("resign: %w", err)
			}
			select {
			case resigned[leader.who] <- struct{}{}:
			case <-r.ctx.Done():
				return bench.Result{}, r.ctx.Err()
			}
			select {
			case next := <-electedC:
				if next.who == leader.who {
					return bench.Result{}, fmt.Errorf("candidate %d re-elected itself over %d waiting candidates", next.who, len(cands)-1)
				}
				lat = append(lat, next.at.Sub(t0))
				leader = next
			case err := <-failed:
				return bench.Result{}, err
			case <-r.ctx.Done():
				return bench.Result{}, fmt.Errorf("no new leader: %w", r.ctx.Err())
			}
		}
		el := time.Since(start).Seconds()
		m := map[string]float64{bench.MOpsPerS: float64(len(lat)) / el}
		bench.LatencyMetrics(m, lat)
		return bench.Result{Ops: len(lat), ElapsedS: el, Metrics: m}, nil
	}
	return nil
}

// SleepCtx waits d, or until ctx ends (its error then).
func SleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// w5Wave bounds how many of W5's (and W7's) waiters enter the line at
// once: each wave is in line before the next enters. Ten thousand waiters
// entering together each list a line of up to ten thousand at once (every
// library lists the line when it enters; a shepherd value's first Lock
// twice, its path check and its entry): 3 to 6 GB of answers queued on
// the connections for tens of seconds, behind which a client that must
// prove its session lives (shepherd's holder, on one of them) has its
// latest request answered. The measured part, the chain of handoffs,
// starts once all are in line either way.
const w5Wave = 1000

// awaitInLine waits until n contenders are in line (their nodes created).
// Polling is fine here: this is before counting starts, and a watch would
// fire during the measured part.
func (r *run) awaitInLine(ctx context.Context, c Client, n int) error {
	for {
		got, err := c.Children(ctx, r.spec.Path) // one node per contender
		if err != nil {
			return fmt.Errorf("%d contenders in line: %w", n, err)
		}
		if got == n {
			return nil
		}
		if err := SleepCtx(ctx, 5*time.Millisecond); err != nil {
			return fmt.Errorf("%d of %d contenders in line: %w", got, n, err)
		}
	}
}

// W5: one session holds the mutex while Sessions others queue behind it; on
// Go the holder releases and every waiter in turn takes the mutex and
// releases it at once. Handoff = the next waiter's Lock returning, measured
// from the previous holder's release. The first handoff has every waiter
// queued.
func (r *run) prepareW5(ctx context.Context, lib Library) error {
	conns := r.spec.Sessions + 1
	if r.spec.Conns > 0 {
		conns = min(conns, r.spec.Conns)
	}
	cs, err := r.connect(ctx, lib, conns)
	if err != nil {
		return err
	}
	// One contender per session, or, with spec.Conns, several on each
	// (a go-zookeeper connection keeps 1.5 MB of buffers: ten thousand
	// sessions in one process would not fit).
	ls := make([]Locker, r.spec.Sessions+1)
	for i := range ls {
		if ls[i], err = cs[i%len(cs)].NewLocker(r.spec.Path); err != nil {
			return err
		}
	}
	if err := ls[0].Lock(ctx); err != nil {
		return fmt.Errorf("holder: lock: %w", err)
	}
	var (
		mu          sync.Mutex
		lastRelease time.Time
		lat         []time.Duration
		holders     atomic.Int64
		violations  atomic.Int64
	)
	done := make(chan error, r.spec.Sessions)
	for i := 1; i < len(ls); i++ {
		if i%w5Wave == 0 {
			// A wave in line before the next enters (see w5Wave).
			if err := r.awaitInLine(ctx, cs[0], i); err != nil {
				return err
			}
		}
		r.bg.Add(1)
		go func() {
			defer r.bg.Done()
			if err := ls[i].Lock(r.ctx); err != nil {
				done <- fmt.Errorf("waiter %d: lock: %w", i, err)
				return
			}
			if holders.Add(1) != 1 {
				violations.Add(1)
			}
			mu.Lock()
			lat = append(lat, time.Since(lastRelease))
			lastRelease = time.Now()
			mu.Unlock()
			holders.Add(-1)
			done <- ls[i].Unlock(r.ctx)
		}()
	}
	if err := r.awaitInLine(ctx, cs[0], len(ls)); err != nil {
		return err
	}
	r.goFn = func() (bench.Result, error) {
		start := time.Now()
		mu.Lock()
		lastRelease = start
		mu.Unlock()
		if err := ls[0].Unlock(r.ctx); err != nil {
			return bench.Result{}, fmt.Errorf("holder: unlock: %w", err)
		}
		for range r.spec.Sessions {
			select {
			case err := <-done:
				if err != nil {
					return bench.Result{}, err
				}
			case <-r.ctx.Done():
				return bench.Result{}, fmt.Errorf("chain incomplete: %w", r.ctx.Err())
			}
		}
		el := time.Since(start).Seconds()
		mu.Lock()
		defer mu.Unlock()
		m := map[string]float64{
			bench.MOpsPerS:      float64(len(lat)) / el,
			bench.MFirstHandoff: float64(lat[0]) / float64(time.Microsecond),
			bench.MViolations:   float64(violations.Load()),
		}
		bench.LatencyMetrics(m, lat)
		return bench.Result{Ops: len(lat), ElapsedS: el, Metrics: m}, nil
	}
	return nil
}
