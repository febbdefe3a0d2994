package gopeers

// W9, a rolling deploy (issue 38): every candidate of one version is
// replaced by one of the next, one at a time (the new one in line before
// the old one stops, oldest first), Cycles deploys; measured: the
// leadership changes per deploy, how many went to an old version, and the
// leaderless time.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/shepherdzk/shepherd/bench"
	"github.com/shepherdzk/shepherd/election"
)

// Deployed is a W9 candidate: it campaigns from Start until Stop, which
// gives its leadership up as a graceful stop of the library does.
type Deployed interface {
	// Start campaigns in the background, calling elected each time it is
	// told it leads and ended each time it is told that leadership ended.
	Start(ctx context.Context, elected, ended func())
	// Stop stops the candidate gracefully and returns once it has.
	Stop()
}

// deployLog records the leaderships of a W9 run, on one clock.
type deployLog struct {
	mu      sync.Mutex
	leader  string    // the current leader ("" none)
	ended   time.Time // when the last leadership was told it ended
	changes int       // elections since the deploy began
	toOld   int
	gap     time.Duration
	version int // the deploy's new version
	first   chan struct{}
}

func (l *deployLog) elected(id string, version int) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.leader == "" && l.first != nil {
		close(l.first)
		l.first = nil
		l.leader = id
		return
	}
	l.changes++
	if version < l.version {
		l.toOld++
	}
	if !l.ended.IsZero() {
		l.gap += now.Sub(l.ended)
	}
	l.leader = id
}

func (l *deployLog) endedNow() {
	l.mu.Lock()
	l.ended = time.Now()
	l.mu.Unlock()
}

// begin starts counting a deploy to version, returning the counts of the
// one before.
func (l *deployLog) begin(version int) (changes, toOld int, gap time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	changes, toOld, gap = l.changes, l.toOld, l.gap
	l.changes, l.toOld, l.gap, l.version = 0, 0, 0, version
	return changes, toOld, gap
}

// W9's driver: Sessions candidates of version 1, then Cycles deploys.
func (r *run) prepareW9(ctx context.Context, lib Library) error {
	if lib.Deploy == nil {
		return fmt.Errorf("gopeers: %s does not run W9", lib.Name)
	}
	log := &deployLog{first: make(chan struct{})}
	first := log.first
	start := func(ctx context.Context, version, i int) (Deployed, error) {
		cs, err := r.connect(ctx, lib, 1)
		if err != nil {
			return nil, err
		}
		id := fmt.Sprintf("v%d-%d", version, i)
		d, err := lib.Deploy(cs[0], r.spec.Path, id, version)
		if err != nil {
			return nil, err
		}
		d.Start(r.ctx, func() { log.elected(id, version) }, log.endedNow)
		// In line before the next step (a new version's candidate joins
		// before an old one stops): the first version's i+1, then the old
		// ones left and the new ones.
		n := i + 1
		if version > 1 {
			n = r.spec.Sessions + 1
		}
		return d, r.awaitIn(ctx, cs[0], n)
	}
	var old []Deployed
	for i := range r.spec.Sessions {
		d, err := start(ctx, 1, i)
		if err != nil {
			return err
		}
		old = append(old, d)
	}
	select {
	case <-first:
	case <-ctx.Done():
		return fmt.Errorf("no first leader: %w", ctx.Err())
	}
	r.goFn = func() (bench.Result, error) {
		var changes, toOld, leaderless float64
		began := time.Now()
		deadline := began.Add(r.spec.Duration())
		deploys := 0
		for v := 2; deploys < r.spec.Cycles && time.Now().Before(deadline); v++ {
			log.begin(v)
			var next []Deployed
			for i, o := range old {
				n, err := start(r.ctx, v, i)
				if err != nil {
					return bench.Result{}, err
				}
				o.Stop()
				next = append(next, n)
			}
			if err := r.awaitLeader(log, v); err != nil {
				return bench.Result{}, err
			}
			c, o, g := log.begin(v + 1)
			changes, toOld, leaderless = changes+float64(c), toOld+float64(o), leaderless+float64(g.Microseconds())/1000
			old = next
			deploys++
		}
		for _, o := range old {
			o.Stop()
		}
		n := float64(max(deploys, 1))
		return bench.Result{Ops: deploys, ElapsedS: time.Since(began).Seconds(), Metrics: map[string]float64{
			bench.MLeaderChanges: changes / n, bench.MChangesToOld: toOld / n, bench.MLeaderlessMS: leaderless / n}}, nil
	}
	return nil
}

// awaitIn waits until the path has n candidates in line (its children).
func (r *run) awaitIn(ctx context.Context, c Client, n int) error {
	for {
		got, err := c.Children(ctx, r.spec.Path)
		if err == nil && got >= n {
			return nil
		}
		if err := SleepCtx(ctx, 2*time.Millisecond); err != nil {
			return fmt.Errorf("%d candidates never in line (%d): %w", n, got, err)
		}
	}
}

// awaitLeader waits until a candidate of version leads.
func (r *run) awaitLeader(log *deployLog, version int) error {
	for {
		log.mu.Lock()
		id := log.leader
		log.mu.Unlock()
		if strings.HasPrefix(id, fmt.Sprintf("v%d-", version)) {
			return nil
		}
		if err := SleepCtx(r.ctx, 2*time.Millisecond); err != nil {
			return fmt.Errorf("no leader of version %d after the deploy: %w", version, err)
		}
	}
}

// runDeployed is a shepherd candidate under Run (W9).
type runDeployed struct {
	e      *election.Election
	cancel context.CancelFunc
	done   chan struct{}
}

// shepherdDeploy makes W9's shepherd candidates: with priorities (the
// version), a leader that stops hands over to the best candidate.
func shepherdDeploy(priorities bool) func(c Client, path, id string, version int) (Deployed, error) {
	return func(c Client, path, id string, version int) (Deployed, error) {
		var opts []election.Option
		if priorities {
			opts = append(opts, election.WithPriority(version), election.HandOverOnStop(0))
		}
		e, err := election.New(c.(shepherdClient).s, path, id, opts...)
		if err != nil {
			return nil, err
		}
		return &runDeployed{e: e, done: make(chan struct{})}, nil
	}
}

func (d *runDeployed) Start(ctx context.Context, elected, ended func()) {
	ctx, d.cancel = context.WithCancel(ctx)
	go func() {
		defer close(d.done)
		_ = d.e.Run(ctx, election.Callbacks{OnElected: func(lctx context.Context, _ election.Term) {
			elected()
			<-lctx.Done()
			ended()
		}})
	}()
}

func (d *runDeployed) Stop() {
	d.cancel()
	<-d.done
}
