package prometheus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	promobs "github.com/shepherdzk/shepherd/observe/prometheus"
	"github.com/shepherdzk/shepherd/schedule"
	"github.com/shepherdzk/shepherd/session"
)

// TestScheduleMetrics: a schedule on real ZooKeeper, its job failing at
// the first tick from 2 on that runs and running long at the first from two
// after that one (so that ticks are missed, skipped and caught up under
// CatchUpOnce; the first that runs, as a busy machine may start a tick late
// enough that the policy skips it): the metrics count the takeover, the ticks
// by outcome, the last success and failure (the failure is the latest),
// the lag of a late tick, the interval, and the skipped and caught-up
// ticks. A second leader, after the first's Run ends, takes the last
// success over from the record.
func TestScheduleMetrics(t *testing.T) {
	path := uniquePath(t)
	every := 100 * time.Millisecond
	reg := prometheus.NewRegistry()
	obs, err := promobs.New(reg)
	require.NoError(t, err)
	sess := open(t, zk.Servers(), session.WithObserver(obs))
	s, err := schedule.New(sess, path, "a", every)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	past := make(chan int64, 100)
	ranLong := make(chan int64, 1)
	var failed, long int64 // the tick that failed, the tick that ran long; the job's goroutine only
	go func() {
		done <- s.Run(ctx, func(ctx context.Context, tk schedule.Tick) error {
			past <- tk.N
			switch {
			case failed == 0 && tk.N >= 2:
				failed = tk.N
				return errors.New("disk full")
			case failed != 0 && long == 0 && tk.N >= failed+2:
				long = tk.N
				ranLong <- long
				select { // the job's work: long enough to miss ticks
				case <-time.After(5 * every):
				case <-ctx.Done():
				}
			}
			return nil
		})
	}()
	lbl := map[string]string{"path": path}
	deadline := time.After(20 * time.Second)
	var slow int64
	select {
	case slow = <-ranLong:
	case <-deadline:
		t.Fatal("no tick ran long")
	}
	for n := int64(0); n <= slow+1; { // until a tick caught up after the long one
		select {
		case n = <-past:
		case <-deadline:
			t.Fatalf("no tick caught up after the long one (tick %d)", slow)
		}
	}
	require.Eventually(t, func() bool {
		return metric(t, reg, "shepherd_schedule_ticks_total", map[string]string{"path": path, "outcome": "ok"}) >= 4
	}, 10*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)

	require.Equal(t, 1.0, metric(t, reg, "shepherd_schedule_takeovers_total", lbl))
	require.Equal(t, 1.0, metric(t, reg, "shepherd_schedule_ticks_total", map[string]string{"path": path, "outcome": "error"}))
	require.Equal(t, 0.0, metric(t, reg, "shepherd_schedule_ticks_total", map[string]string{"path": path, "outcome": "timeout"}))
	require.Equal(t, every.Seconds(), metric(t, reg, "shepherd_schedule_interval_seconds", lbl))
	require.GreaterOrEqual(t, metric(t, reg, "shepherd_schedule_skipped_ticks_total", lbl), 2.0, "ticks missed during tick 4's run")
	require.GreaterOrEqual(t, metric(t, reg, "shepherd_schedule_caught_up_ticks_total", lbl), 1.0)
	okAt := metric(t, reg, "shepherd_schedule_last_success_timestamp_seconds", lbl)
	failAt := metric(t, reg, "shepherd_schedule_last_failure_timestamp_seconds", lbl)
	require.NotZero(t, failAt)
	require.Greater(t, okAt, failAt, "ticks ended ok after the failure")
	rec, err := s.Record(context.Background())
	require.NoError(t, err)
	require.Equal(t, float64(rec.LastOK)/1000, okAt, "the last success is the record's")
	require.Equal(t, float64(rec.Started)/1000, okAt, "the last tick ended ok")

	// Another process takes over: it exports the last success it read.
	reg2 := prometheus.NewRegistry()
	obs2, err := promobs.New(reg2)
	require.NoError(t, err)
	s2, err := schedule.New(open(t, zk.Servers(), session.WithObserver(obs2)), path, "b", every)
	require.NoError(t, err)
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	taken := make(chan struct{}, 100)
	go func() {
		done <- s2.Run(ctx2, func(context.Context, schedule.Tick) error { taken <- struct{}{}; return nil })
	}()
	select {
	case <-taken:
	case <-time.After(20 * time.Second):
		t.Fatal("b never ran a tick")
	}
	cancel2()
	require.NoError(t, <-done)
	require.Equal(t, 1.0, metric(t, reg2, "shepherd_schedule_takeovers_total", lbl))
	require.GreaterOrEqual(t, metric(t, reg2, "shepherd_schedule_last_success_timestamp_seconds", lbl), okAt)
	_, ok := series(t, reg2, "shepherd_schedule_tick_lag_seconds", lbl)
	require.True(t, ok)
}
