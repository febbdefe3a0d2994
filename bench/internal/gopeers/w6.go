package gopeers

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shepherdzk/shepherd/bench"
	"github.com/shepherdzk/shepherd/zktest"
)

// Loser is a Candidate that can tell its leader it may have lost leadership
// (shepherd's election does; a zk.Lock cannot).
type Loser interface {
	Lost() <-chan struct{}
}

// W6: Sessions candidates, each through a fault proxy of its own. On Go the
// leader's connection is stalled (a crash as the others see it: it stays
// silent); measured: the time until another candidate leads, and whether the
// old leader's own loss signal came first. The stalled leader is then healed
// and rejoins. Cycles crashes.
func (r *run) prepareW6(ctx context.Context, lib Library) error {
	n := r.spec.Sessions
	proxies := make([]*zktest.Proxy, n)
	cands := make([]Candidate, n)
	for i := range n {
		p, err := zktest.NewProxy(r.spec.Servers()...)
		if err != nil {
			return err
		}
		proxies[i] = p
		r.bg.Add(1)
		go func() { defer r.bg.Done(); <-r.ctx.Done(); p.Close() }()
		spec := r.spec
		spec.Connect = strings.Join(p.Addrs(), ",")
		c, err := lib.Connect(ctx, spec)
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.clients = append(r.clients, c)
		r.mu.Unlock()
		if cands[i], err = c.NewCandidate(r.spec.Path, fmt.Sprintf("candidate-%d", i)); err != nil {
			return err
		}
	}
	electedC := make(chan elected, n)
	rejoin := make([]chan struct{}, n)
	lostAt := make([]chan time.Time, n)
	for i := range n {
		rejoin[i] = make(chan struct{})
		lostAt[i] = make(chan time.Time, 1)
		r.bg.Add(1)
		go func() {
			defer r.bg.Done()
			for r.ctx.Err() == nil {
				if err := cands[i].Campaign(r.ctx); err != nil {
					// A stalled or expired session: try again (bounded by
					// the run's context).
					if SleepCtx(r.ctx, 50*time.Millisecond) != nil {
						return
					}
					continue
				}
				if l, ok := cands[i].(Loser); ok {
					lost := l.Lost()
					go func() {
						select {
						case <-lost:
							lostAt[i] <- time.Now()
						case <-r.ctx.Done():
						}
					}()
				}
				electedC <- elected{i, time.Now()}
				select {
				case <-rejoin[i]:
					rctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
					_ = cands[i].Resign(rctx)
					cancel()
				case <-r.ctx.Done():
					return
				}
			}
		}()
	}
	var leader elected
	select {
	case leader = <-electedC:
	case <-ctx.Done():
		return fmt.Errorf("no first leader: %w", ctx.Err())
	}
	r.goFn = func() (bench.Result, error) {
		var lat []time.Duration
		first, signalled := 0, 0
		start := time.Now()
		deadline := start.Add(r.spec.Duration())
		for len(lat) < r.spec.Cycles && time.Now().Before(deadline) {
			old := leader.who
			t0 := time.Now()
			proxies[old].Stall()
			var next elected
			select {
			case next = <-electedC:
			case <-r.ctx.Done():
				return bench.Result{}, fmt.Errorf("no new leader: %w", r.ctx.Err())
			}
			if next.who == old {
				return bench.Result{}, fmt.Errorf("candidate %d re-elected while stalled", old)
			}
			lat = append(lat, next.at.Sub(t0))
			select {
			case at := <-lostAt[old]:
				signalled++
				if at.Before(next.at) {
					first++
				}
			default: // no loss signal (or not yet: then it came after)
			}
			proxies[old].Heal()
			select {
			case rejoin[old] <- struct{}{}:
			case <-r.ctx.Done():
				return bench.Result{}, r.ctx.Err()
			}
			leader = next
		}
		el := time.Since(start).Seconds()
		m := map[string]float64{bench.MOpsPerS: float64(len(lat)) / el}
		bench.LatencyMetrics(m, lat)
		if _, ok := cands[0].(Loser); ok {
			m[bench.MLossFirst] = float64(first) / float64(len(lat))
		}
		_ = signalled
		return bench.Result{Ops: len(lat), ElapsedS: el, Metrics: m}, nil
	}
	return nil
}
