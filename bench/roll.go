package bench

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Restarter is a ZooKeeper ensemble whose servers the runner can stop and
// start again (a zktest.Cluster): W8 needs one of at least 3 servers.
type Restarter interface {
	Size() int
	// Stop ends server i (SIGTERM) and waits until it is gone.
	Stop(i int) error
	// Restart starts server i again with its data and waits until it serves.
	Restart(ctx context.Context, i int) error
	// WaitServing waits until every running server serves and one leads.
	WaitServing(ctx context.Context) error
	// Leader is the index of the server that leads the ensemble.
	Leader(ctx context.Context) (int, error)
}

// Starter is a prepared run whose measured part the runner starts, does
// something to the ensemble (W8: the rolling restart), then ends with Go.
// Subprocess peers get the "start" command ({"event":"started"}).
type Starter interface {
	// Start begins the measured part and returns at once: from now on the
	// run counts what happens to its holds.
	Start(ctx context.Context) error
}

// RollingRestart restarts the servers one at a time, restarts in all, as an
// operator does: in each round every follower in turn, then the leader
// (whichever server leads when the round begins). Each is stopped for down
// and started again, and the ensemble serves with a leader before the next
// is stopped. Bounded by the deadline. It returns the number of restarts
// done.
func RollingRestart(ctx context.Context, r Restarter, restarts int, down time.Duration, deadline time.Time) (int, error) {
	if r.Size() < 3 {
		return 0, fmt.Errorf("bench: a rolling restart needs an ensemble of 3 or more servers, not %d", r.Size())
	}
	done := 0
	var order []int
	for range restarts {
		if time.Now().After(deadline) {
			return done, nil
		}
		if len(order) == 0 {
			lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			leader, err := r.Leader(lctx)
			cancel()
			if err != nil {
				return done, fmt.Errorf("bench: which server leads: %w", err)
			}
			for i := range r.Size() {
				if i != leader {
					order = append(order, i)
				}
			}
			order = append(order, leader)
		}
		i := order[0]
		order = order[1:]
		if err := r.Stop(i); err != nil {
			return done, fmt.Errorf("bench: stop server %d: %w", i, err)
		}
		t := time.NewTimer(down)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		// Started again even when ctx has ended: an ensemble is never left
		// short of a server.
		sctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := r.Restart(sctx, i)
		if err == nil {
			err = r.WaitServing(sctx)
		}
		cancel()
		if err != nil {
			return done, fmt.Errorf("bench: start server %d again: %w", i, err)
		}
		done++
		if err := ctx.Err(); err != nil {
			return done, err
		}
	}
	return done, nil
}

// runRoll is W8's part of runOne: start the measured part, roll the
// ensemble, then let the peer settle and report. The server counters are not
// read: a restarted server starts them from zero.
func (r *Runner) runRoll(ctx context.Context, run Run, spec Spec, rec *Record) error {
	rs, ok := r.target.(Restarter)
	if !ok {
		return errors.New("bench: W8 needs a target whose servers can be restarted")
	}
	st, ok := run.(Starter)
	if !ok {
		return errors.New("bench: this peer's run cannot start W8's measured part")
	}
	if err := st.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	n, rollErr := RollingRestart(ctx, rs, spec.Cycles, spec.Down(), time.Now().Add(spec.Duration()))
	r.progress("  W8 %s: %d server restarts", rec.Peer, n)
	res, err := run.Go(ctx)
	if rollErr != nil {
		return rollErr
	}
	if err != nil {
		return fmt.Errorf("go: %w", err)
	}
	if n == 0 {
		return errors.New("no server was restarted")
	}
	rec.Ops, rec.ElapsedS, rec.Metrics, rec.Quiet = n, res.ElapsedS, res.Metrics, true
	if rec.Metrics == nil {
		rec.Metrics = map[string]float64{}
	}
	rec.Metrics[MPausedS] = rec.Metrics[MLockPausedS] + rec.Metrics[MLeaderPausedS]
	return nil
}
