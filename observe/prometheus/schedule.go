package prometheus

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherdzk/shepherd/observe"
)

// tickOutcomes are the outcome labels of shepherd_schedule_ticks_total.
var tickOutcomes = []string{"ok", "error", "timeout", "cancelled", "interrupted"}

// scheduleMetrics are the metrics of schedules (package schedule), by path.
type scheduleMetrics struct {
	ticks       *prometheus.CounterVec
	lastOK      *prometheus.GaugeVec
	lastFailure *prometheus.GaugeVec
	lag         *prometheus.GaugeVec
	interval    *prometheus.GaugeVec
	skipped     *prometheus.CounterVec
	caughtUp    *prometheus.CounterVec
	takeovers   *prometheus.CounterVec
}

func newScheduleMetrics(ns string) *scheduleMetrics {
	path := []string{"path"}
	return &scheduleMetrics{
		ticks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "schedule_ticks_total",
			Help: "Ticks whose end the leader recorded, by outcome (interrupted: left to the next leader)."}, []string{"path", "outcome"}),
		lastOK: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "schedule_last_success_timestamp_seconds",
			Help: "When the last tick that ended ok started (ZooKeeper's clock; the schedule's epoch while none has), as the leader knows it."}, path),
		lastFailure: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "schedule_last_failure_timestamp_seconds",
			Help: "When the last tick that ended in error or timeout started (ZooKeeper's clock; 0: none seen by this process)."}, path),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "schedule_tick_lag_seconds",
			Help: "How long after its due time the last tick started (ZooKeeper's clock)."}, path),
		interval: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "schedule_interval_seconds",
			Help: "The time between the leader's last tick and the next."}, path),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "schedule_skipped_ticks_total",
			Help: "Missed ticks skipped by the catch-up policy."}, path),
		caughtUp: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "schedule_caught_up_ticks_total",
			Help: "Ticks run late by the catch-up policy, after ticks were missed."}, path),
		takeovers: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "schedule_takeovers_total",
			Help: "Leaderships of this process that took the schedule over."}, path),
	}
}

func (m *scheduleMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.ticks, m.lastOK, m.lastFailure, m.lag, m.interval, m.skipped, m.caughtUp, m.takeovers}
}

func unix(ev observe.RecipeEvent) float64 { return float64(ev.LastOK.UnixMilli()) / 1000 }

func (m *scheduleMetrics) event(ev observe.RecipeEvent) {
	p := ev.Path
	switch ev.Kind {
	case observe.ScheduleTakeover:
		// Every series starts with the takeover, so that increase() sees
		// the first change and the rules can compare them.
		for _, o := range tickOutcomes {
			m.ticks.WithLabelValues(p, o)
		}
		m.skipped.WithLabelValues(p)
		m.caughtUp.WithLabelValues(p)
		m.takeovers.WithLabelValues(p).Inc()
		m.lastOK.WithLabelValues(p).Set(unix(ev))
		m.lastFailure.WithLabelValues(p)
		if ev.Outcome == "error" || ev.Outcome == "timeout" {
			m.lastFailure.WithLabelValues(p).Set(float64(ev.Started.UnixMilli()) / 1000)
		}
		m.interval.WithLabelValues(p).Set(ev.Interval.Seconds())
	case observe.TickStarted:
		m.lag.WithLabelValues(p).Set(ev.Lag.Seconds())
		m.interval.WithLabelValues(p).Set(ev.Interval.Seconds())
	case observe.TickFinished:
		m.ticks.WithLabelValues(p, ev.Outcome).Inc()
		m.lastOK.WithLabelValues(p).Set(unix(ev))
		if ev.Outcome == "error" || ev.Outcome == "timeout" {
			m.lastFailure.WithLabelValues(p).Set(float64(ev.Started.UnixMilli()) / 1000)
		}
	case observe.TicksSkipped:
		m.skipped.WithLabelValues(p).Add(float64(ev.Count))
	case observe.TickCaughtUp:
		m.caughtUp.WithLabelValues(p).Inc()
	}
}
