package prometheus

// The metrics of election handovers (issue 38), kept apart from the
// others.

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherdzk/shepherd/observe"
)

// handoverMetrics counts handovers (observe.HandedOver).
type handoverMetrics struct {
	total   *prometheus.CounterVec
	seconds *prometheus.HistogramVec
}

func newHandoverMetrics(ns string, buckets []float64) handoverMetrics {
	return handoverMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "handovers_total",
			Help: "Handovers of leadership by this process's leaders (reason directed|yield|stop|operator; " +
				"outcome handed_over|refused|not_taken|no_candidate|failed)."}, []string{"path", "reason", "outcome"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "handover_seconds",
			Help:    "How long handovers took, from their start (the leader leading meanwhile) to their end.",
			Buckets: buckets}, []string{"path"}),
	}
}

func (m handoverMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.total, m.seconds}
}

func (m handoverMetrics) observe(ev observe.RecipeEvent) {
	m.total.WithLabelValues(ev.Path, ev.Reason, ev.Outcome).Inc()
	m.seconds.WithLabelValues(ev.Path).Observe(ev.Took.Seconds())
}
