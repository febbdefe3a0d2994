// Package prometheus exports what a shepherd session and its recipes do as
// Prometheus metrics. It lives in its own package so that programs that do
// not use Prometheus do not link it.
//
//	obs, err := prometheus.New(registry)
//	sess, err := session.Open(ctx, servers, session.WithObserver(obs))
//
// Metrics (namespace "shepherd"):
//
//	shepherd_session_state{state}                    1 for the current state, 0 for the others
//	shepherd_session_transitions_total{state}        transitions into each state
//	shepherd_session_suspended_seconds               time spent Suspended, per suspension
//	shepherd_session_epochs_total                    connected stretches (Connected or Reconnected)
//	shepherd_acquire_wait_seconds{recipe}            time from the call to the grant
//	shepherd_acquire_queue_position{recipe}          place in line when joining (0: the head)
//	shepherd_holds{recipe}                           holds held now
//	shepherd_hold_duration_seconds{recipe,outcome}   how long holds lasted (outcome released|lost)
//	shepherd_hold_lost_total{recipe}                 holds whose loss signal fired
//	shepherd_leader{path}                            1 while this process leads the election at path, 0 while it
//	                                                 campaigns or after its Run ended (present from Run's start)
//	shepherd_leader_term{path}                       the term of the current or last leadership
//	shepherd_leadership_changes_total{path,change}   change elected|revoked
//	shepherd_leader_stop_seconds{path}               loss signal to OnElected's return
//	shepherd_leader_callback_stuck_total{path}       OnElected overran its stop deadline
//	shepherd_hold_pauses_total{recipe}               holds paused by a lost connection (PauseOnDisconnect)
//	shepherd_hold_resumes_total{recipe}              paused holds resumed in the same session
//	shepherd_hold_pause_seconds{recipe,outcome}      pause durations, outcome resumed|lost
//	shepherd_hold_lost_after_pause_total{recipe}     paused holds lost instead of resumed
//	shepherd_orphan_cleanups_total                   abandoned nodes found and removed
//	shepherd_delete_retries_total                    releases retried in the background
//	shepherd_schedule_ticks_total{path,outcome}      tick ends recorded, outcome ok|error|timeout|cancelled|interrupted
//	shepherd_schedule_last_success_timestamp_seconds{path}  start of the last tick that ended ok (ZooKeeper's
//	                                                 clock; the epoch while none has); from the leader's takeover on
//	shepherd_schedule_last_failure_timestamp_seconds{path}  start of the last tick that ended in error or timeout
//	shepherd_schedule_tick_lag_seconds{path}         how late the last tick started, behind its due time
//	shepherd_schedule_interval_seconds{path}         the time from the last tick to the next
//	shepherd_schedule_skipped_ticks_total{path}      missed ticks skipped by the catch-up policy
//	shepherd_schedule_caught_up_ticks_total{path}    ticks run late by the catch-up policy
//	shepherd_schedule_takeovers_total{path}          leaderships of this process that took the schedule over
//	shepherd_handovers_total{path,reason,outcome}    handovers by this process's leaders: reason
//	                                                 directed|yield|stop|operator, outcome
//	                                                 handed_over|refused|not_taken|no_candidate|failed
//	shepherd_handover_seconds{path}                  how long handovers took (the leader leading meanwhile)
//
// Labels are bounded: recipe is one of a handful of names; path appears only
// on election and schedule metrics, one per election or schedule a process
// takes part in, and, with WithPathLabels, on the hold metrics.
//
// Alerts and a dashboard ship beside this package. alerts.yaml holds
// Prometheus alerting rules: an election path with no leader or more than one
// (sum by (path) (shepherd_leader), every candidate exporting 0 while it
// follows), holds lost, holds lost after a pause, a session suspended for
// long, a leader callback stuck, a high p99 acquire wait; alerts_test.yaml
// tests each with promtool (make alerts). dashboard.json is a Grafana
// dashboard of these metrics. The package's tests check that every metric
// either file names is one this package exports.
package prometheus

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/session"
)

// Observer implements session.Observer with Prometheus metrics.
type Observer struct {
	state        *prometheus.GaugeVec
	transitions  *prometheus.CounterVec
	suspended    prometheus.Histogram
	epochs       prometheus.Counter
	wait         *prometheus.HistogramVec
	position     *prometheus.HistogramVec
	holds        *prometheus.GaugeVec
	holdDuration *prometheus.HistogramVec
	holdLost     *prometheus.CounterVec
	leader       *prometheus.GaugeVec
	term         *prometheus.GaugeVec
	changes      *prometheus.CounterVec
	stop         *prometheus.HistogramVec
	stuck        *prometheus.CounterVec
	pauses       *prometheus.CounterVec
	resumes      *prometheus.CounterVec
	pauseTime    *prometheus.HistogramVec
	lostPaused   *prometheus.CounterVec
	orphans      prometheus.Counter
	deletes      prometheus.Counter
	sched        *scheduleMetrics
	byPath       bool            // the hold metrics have a path label
	handovers    handoverMetrics // handover.go
}

// Option configures an Observer.
type Option func(*Observer)

// WithPathLabels adds a path label (the recipe's path) to the hold metrics:
// shepherd_holds, shepherd_hold_lost_total, shepherd_hold_lost_after_pause_total,
// shepherd_hold_pauses_total and shepherd_hold_resumes_total, so that "which
// lock was lost?" has an answer. Each path a process holds adds series: use
// it where the paths are few (the CLI's holders use it, with one path each),
// not for locks made per request or per key.
func WithPathLabels() Option { return func(o *Observer) { o.byPath = true } }

// holdLabels are the label values of the hold metrics for ev.
func (o *Observer) holdLabels(recipe string, ev observe.RecipeEvent) []string {
	if o.byPath {
		return []string{recipe, ev.Path}
	}
	return []string{recipe}
}

var _ session.Observer = (*Observer)(nil)

var states = []session.State{session.Connected, session.Suspended, session.Reconnected, session.Lost, session.Closed}

// New creates the metrics and registers them with reg.
func New(reg prometheus.Registerer, opts ...Option) (*Observer, error) {
	const ns = "shepherd"
	var probe Observer
	for _, opt := range opts {
		opt(&probe)
	}
	hold := []string{"recipe"}
	if probe.byPath {
		hold = []string{"recipe", "path"}
	}
	lat := []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	o := &Observer{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "session_state",
			Help: "1 for the session manager's current state, 0 for the others."}, []string{"state"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "session_transitions_total",
			Help: "Session state transitions, by the state entered."}, []string{"state"}),
		suspended: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "session_suspended_seconds",
			Help: "Time spent Suspended, per suspension.", Buckets: lat}),
		epochs: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "session_epochs_total",
			Help: "Connected stretches of sessions (Connected or Reconnected)."}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "acquire_wait_seconds",
			Help: "Time from an acquire call to the grant.", Buckets: lat}, []string{"recipe"}),
		position: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "acquire_queue_position",
			Help: "Place in line when joining (0: the head).", Buckets: []float64{0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 1024}},
			[]string{"recipe"}),
		holds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "holds",
			Help: "Holds (locks, leases, leaderships) held now."}, hold),
		holdDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "hold_duration_seconds",
			Help: "How long holds lasted, by how they ended.", Buckets: lat}, []string{"recipe", "outcome"}),
		holdLost: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "hold_lost_total",
			Help: "Holds whose loss signal fired while held."}, hold),
		leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "leader",
			Help: "1 while this process leads the election at path."}, []string{"path"}),
		term: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "leader_term",
			Help: "The term (fencing token) of this process's current or last leadership."}, []string{"path"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "leadership_changes_total",
			Help: "Leadership gained (elected) and given up or lost (revoked)."}, []string{"path", "change"}),
		stop: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "leader_stop_seconds",
			Help: "Time from a leadership's loss signal to its OnElected returning.", Buckets: lat}, []string{"path"}),
		stuck: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "leader_callback_stuck_total",
			Help: "OnElected calls that overran their stop deadline."}, []string{"path"}),
		pauses: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "hold_pauses_total",
			Help: "Holds paused by a lost connection (PauseOnDisconnect)."}, hold),
		resumes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "hold_resumes_total",
			Help: "Paused holds resumed (same session back, node confirmed)."}, hold),
		pauseTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "hold_pause_seconds",
			Help: "How long holds stayed paused, by how the pause ended.", Buckets: lat}, []string{"recipe", "outcome"}),
		lostPaused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "hold_lost_after_pause_total",
			Help: "Paused holds that were lost instead of resumed."}, hold),
		orphans: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "orphan_cleanups_total",
			Help: "Nodes of abandoned or answer-lost creates found and removed."}),
		deletes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "delete_retries_total",
			Help: "Releases that met a connection problem and were retried in the background."}),
		sched:     newScheduleMetrics(ns),
		byPath:    probe.byPath,
		handovers: newHandoverMetrics(ns, lat),
	}
	for _, c := range append([]prometheus.Collector{o.state, o.transitions, o.suspended, o.epochs, o.wait, o.position,
		o.holds, o.holdDuration, o.holdLost, o.leader, o.term, o.changes, o.stop, o.stuck, o.pauses, o.resumes,
		o.pauseTime, o.lostPaused, o.orphans, o.deletes}, o.handovers.collectors()...) {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, c := range o.sched.collectors() {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// SessionEvent implements session.Observer.
func (o *Observer) SessionEvent(ev session.Event) {
	for _, st := range states {
		v := 0.0
		if st == ev.State {
			v = 1
		}
		o.state.WithLabelValues(st.String()).Set(v)
	}
	o.transitions.WithLabelValues(ev.State.String()).Inc()
	if ev.Previous == session.Suspended {
		o.suspended.Observe(ev.InPrevious.Seconds())
	}
	if ev.State == session.Connected || ev.State == session.Reconnected {
		o.epochs.Inc()
	}
}

// RecipeEvent implements session.Observer.
func (o *Observer) RecipeEvent(ev observe.RecipeEvent) {
	switch ev.Kind {
	case observe.Acquired:
		// The loss counters start at 0 with the first hold, so that
		// increase() sees a recipe's first loss too.
		o.holdLost.WithLabelValues(o.holdLabels(ev.Recipe, ev)...)
		o.lostPaused.WithLabelValues(o.holdLabels(ev.Recipe, ev)...)
		o.wait.WithLabelValues(ev.Recipe).Observe(ev.Wait.Seconds())
		o.position.WithLabelValues(ev.Recipe).Observe(float64(ev.Position))
		o.holds.WithLabelValues(o.holdLabels(ev.Recipe, ev)...).Inc()
	case observe.Released:
		o.holds.WithLabelValues(o.holdLabels(ev.Recipe, ev)...).Dec()
		o.holdDuration.WithLabelValues(ev.Recipe, "released").Observe(ev.Held.Seconds())
	case observe.HoldLost:
		o.holds.WithLabelValues(o.holdLabels(ev.Recipe, ev)...).Dec()
		o.holdLost.WithLabelValues(o.holdLabels(ev.Recipe, ev)...).Inc()
		o.holdDuration.WithLabelValues(ev.Recipe, "lost").Observe(ev.Held.Seconds())
		if ev.Paused > 0 {
			o.lostPaused.WithLabelValues(o.holdLabels(ev.Recipe, ev)...).Inc()
			o.pauseTime.WithLabelValues(ev.Recipe, "lost").Observe(ev.Paused.Seconds())
		}
	case observe.HoldPaused:
		o.pauses.WithLabelValues(o.holdLabels(ev.Recipe, ev)...).Inc()
	case observe.HoldResumed:
		o.resumes.WithLabelValues(o.holdLabels(ev.Recipe, ev)...).Inc()
		o.pauseTime.WithLabelValues(ev.Recipe, "resumed").Observe(ev.Paused.Seconds())
	case observe.Campaigning:
		// A follower exports leader{path} 0 (sum by (path) is the number of
		// leaders); the counters start at 0 so increase() sees the first.
		o.leader.WithLabelValues(ev.Path)
		o.changes.WithLabelValues(ev.Path, "elected")
		o.changes.WithLabelValues(ev.Path, "revoked")
		o.stuck.WithLabelValues(ev.Path)
	case observe.Elected:
		o.leader.WithLabelValues(ev.Path).Set(1)
		o.term.WithLabelValues(ev.Path).Set(float64(ev.Term))
		o.changes.WithLabelValues(ev.Path, "elected").Inc()
	case observe.Revoked:
		o.leader.WithLabelValues(ev.Path).Set(0)
		o.changes.WithLabelValues(ev.Path, "revoked").Inc()
		o.stop.WithLabelValues(ev.Path).Observe(ev.Took.Seconds())
	case observe.CallbackStuck:
		o.stuck.WithLabelValues(ev.Path).Inc()
	case observe.OrphanCleanup:
		o.orphans.Inc()
	case observe.DeleteRetry:
		o.deletes.Inc()
	case observe.ScheduleTakeover, observe.TickStarted, observe.TickFinished, observe.TicksSkipped, observe.TickCaughtUp:
		o.sched.event(ev)
	case observe.HandedOver:
		o.handovers.observe(ev)
	}
}
