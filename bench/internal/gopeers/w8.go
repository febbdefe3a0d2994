package gopeers

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/shepherdzk/shepherd/bench"
)

// RollClient is one session of a library in W8 (a rolling restart). Hold
// and Campaign run until ctx ends, reporting to st what their holder sees:
// each library has its own loss signal, so each implements them itself.
type RollClient interface {
	// Hold holds a lock at path as holder h, and takes it again after
	// every loss.
	Hold(ctx context.Context, path string, h int, st *RollStats)
	// Campaign runs candidate c of the election at path, and campaigns
	// again after every loss.
	Campaign(ctx context.Context, path string, c int, st *RollStats)
	Close()
}

// RollStats is what W8 measures, fed by the holders and candidates of one
// run. Only what happens between Start and Stop counts.
type RollStats struct {
	mu        sync.Mutex
	measuring bool
	holders   []rollHold
	leader    rollHold // the election's current leader (who: the candidate)
	last      int      // the last candidate told it leads (-1: none yet)

	trace bool // SHEPHERD_BENCH_TRACE=1: every transition to stderr

	holdsLost, changes, moves, leaderLosses, sessionsLost int
	lockPaused, leaderPaused                              time.Duration
}

// rollHold is one hold: has it (granted and not lost), free to act (not
// paused or in doubt), and since when not free.
type rollHold struct {
	who       int
	has, free bool
	offAt     time.Time
}

// NewRollStats returns the stats of a run with n lock holders.
func NewRollStats(n int) *RollStats {
	return &RollStats{holders: make([]rollHold, n), leader: rollHold{who: -1}, last: -1,
		trace: os.Getenv("SHEPHERD_BENCH_TRACE") == "1"}
}

// Start begins counting.
func (st *RollStats) Start() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.measuring = true
}

// on marks h held and free to act; the time it was not counts.
func (st *RollStats) on(h *rollHold, paused *time.Duration) {
	if st.measuring && !h.offAt.IsZero() {
		*paused += time.Since(h.offAt)
	}
	if st.trace && !h.offAt.IsZero() {
		fmt.Fprintf(os.Stderr, "%s W8 %p on after %v\n", time.Now().Format("15:04:05.000"), h, time.Since(h.offAt))
	}
	h.has, h.free, h.offAt = true, true, time.Time{}
}

// off marks h not free to act from now (unless it was not already), and
// lost if lost; it reports whether h had a hold that is now lost.
func (st *RollStats) off(h *rollHold, lost bool) bool {
	if h.free {
		h.free, h.offAt = false, time.Now()
	}
	if st.trace {
		fmt.Fprintf(os.Stderr, "%s W8 %p off lost=%v\n", time.Now().Format("15:04:05.000"), h, lost)
	}
	if lost && h.has {
		h.has = false
		return st.measuring
	}
	return false
}

// HolderOn reports holder h granted its lock, or resumed (idempotent).
func (st *RollStats) HolderOn(h int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.holders[h].free {
		st.on(&st.holders[h], &st.lockPaused)
	}
}

// HolderOff reports holder h's lock paused (lost false) or lost: from now
// on its work stands still until HolderOn.
func (st *RollStats) HolderOff(h int, lost bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.off(&st.holders[h], lost) {
		st.holdsLost++
	}
}

// LeaderOn reports candidate c told it leads (elected true), or its
// leadership resumed (elected false).
func (st *RollStats) LeaderOn(c int, elected bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if elected {
		if st.measuring {
			st.changes++
			if c != st.last {
				st.moves++
			}
		}
		st.last = c
	} else if st.leader.who != c {
		return // a stale resume
	}
	st.leader.who = c
	st.on(&st.leader, &st.leaderPaused)
}

// LeaderOff reports candidate c's leadership paused (lost false) or lost.
func (st *RollStats) LeaderOff(c int, lost bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.leader.who != c {
		return // not the current leader: stale
	}
	if st.off(&st.leader, lost) {
		st.leaderLosses++
	}
}

// SessionLost reports a session of the run expired (or declared lost).
func (st *RollStats) SessionLost() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.measuring {
		st.sessionsLost++
	}
}

// Settled reports every holder holding and a leader leading, none paused.
func (st *RollStats) Settled() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, h := range st.holders {
		if !h.free {
			return false
		}
	}
	return st.leader.free
}

// WaitSettled waits (polling: a benchmark's bookkeeping, not a recipe)
// until Settled or ctx ends.
func (st *RollStats) WaitSettled(ctx context.Context) error {
	for !st.Settled() {
		if err := SleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// Stop ends counting and returns the metrics.
func (st *RollStats) Stop() map[string]float64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.measuring = false
	return map[string]float64{
		bench.MHoldsLost:     float64(st.holdsLost),
		bench.MLeaderChanges: float64(st.changes),
		bench.MLeaderMoves:   float64(st.moves),
		bench.MLeaderLosses:  float64(st.leaderLosses),
		bench.MSessionsLost:  float64(st.sessionsLost),
		bench.MLockPausedS:   st.lockPaused.Seconds(),
		bench.MLeaderPausedS: st.leaderPaused.Seconds(),
	}
}

// W8: Sessions lock holders, each on its own session and lock, and Sessions
// election candidates, each on its own session, settle (all hold, one
// leads); Start begins counting; the runner restarts the servers one by
// one; Go waits until the run has settled again (twice, a second apart) and
// reports.
func (r *run) prepareW8(ctx context.Context, lib Library) error {
	if lib.Roll == nil {
		return fmt.Errorf("gopeers: %s has no W8 driver", lib.Name)
	}
	n := r.spec.Sessions
	st := NewRollStats(n)
	cs := make([]RollClient, 2*n)
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	for i := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs[i], errs[i] = lib.Roll(ctx, r.spec, st)
		}()
	}
	wg.Wait()
	r.mu.Lock()
	for _, c := range cs {
		if c != nil {
			r.clients = append(r.clients, rollCloser{c})
		}
	}
	r.mu.Unlock()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for h := range n {
		r.bg.Add(1)
		go func() {
			defer r.bg.Done()
			cs[h].Hold(r.ctx, fmt.Sprintf("%s/lock-%d", r.spec.Path, h), h, st)
		}()
	}
	for c := range n {
		r.bg.Add(1)
		go func() {
			defer r.bg.Done()
			cs[n+c].Campaign(r.ctx, r.spec.Path+"/election", c, st)
		}()
	}
	if err := st.WaitSettled(ctx); err != nil {
		return fmt.Errorf("holders and a leader not settled: %w", err)
	}
	var start time.Time
	r.startFn = func() error {
		start = time.Now()
		st.Start()
		return nil
	}
	r.goFn = func() (bench.Result, error) {
		if start.IsZero() {
			return bench.Result{}, fmt.Errorf("W8: go before start")
		}
		sctx, cancel := context.WithTimeout(r.ctx, r.spec.Grace())
		defer cancel()
		// Settled, then settled still a second later: a reset that follows
		// a reconnect (a latch re-entering its line) comes within it.
		for range 2 {
			if err := st.WaitSettled(sctx); err != nil {
				m := st.Stop()
				return bench.Result{}, fmt.Errorf("not settled after the roll (%v): %w", m, err)
			}
			if err := SleepCtx(sctx, time.Second); err != nil {
				return bench.Result{}, err
			}
		}
		if err := st.WaitSettled(sctx); err != nil {
			return bench.Result{}, fmt.Errorf("not settled after the roll: %w", err)
		}
		m := st.Stop()
		return bench.Result{Ops: 1, ElapsedS: time.Since(start).Seconds(), Metrics: m}, nil
	}
	return nil
}

// rollCloser lets a RollClient sit among a run's clients (closed with them).
type rollCloser struct{ RollClient }

func (rollCloser) NewLocker(string) (Locker, error)            { return nil, errUnused }
func (rollCloser) NewSemaphore(string, int) (Semaphore, error) { return nil, errUnused }
func (rollCloser) NewCandidate(string, string) (Candidate, error) {
	return nil, errUnused
}
func (rollCloser) Children(context.Context, string) (int, error) { return 0, errUnused }

var errUnused = fmt.Errorf("gopeers: a W8 session runs only its holder or candidate")
