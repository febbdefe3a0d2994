package bench

import (
	"crypto/tls"
	"fmt"
	"strings"
	"time"
)

// The workloads. Every peer runs the same ones with the same parameters; a peer
// that cannot run one (go-zookeeper has no semaphore) says so in Supports.
const (
	// W1: one session, uncontended acquire+release cycles.
	W1 = "W1"
	// W2: Sessions sessions contend for one mutex; every acquisition checks
	// exclusion with an in-process holder counter.
	W2 = "W2"
	// W3: Sessions sessions share a semaphore of Leases leases, each holding
	// a lease for HoldMS.
	W3 = "W3"
	// W4: Sessions election candidates; the leader resigns gracefully and
	// rejoins; measured: the time until another candidate is told it leads.
	W4 = "W4"
	// W5: Sessions waiters queue behind a held mutex; the holder releases and
	// every waiter in turn takes and releases it: the handoff latency, and the
	// watch notifications one release fires.
	W5 = "W5"
	// W6: Sessions candidates, each behind a fault proxy; the leader's
	// connection is stalled (it crashes, as the others see it): the time until
	// another leads, and whether the old leader's own loss signal came first.
	W6 = "W6"
	// W7s, W7l and W7x: W5's chain of handoffs with few (10), many (1,000
	// in a full run) and very many (10,000 in a full run; Go peers only)
	// waiters queued: what a handoff costs, in bytes too, as the line grows.
	W7s = "W7-10"
	W7l = "W7-1000"
	W7x = "W7-10000"
	// W8: a rolling restart of a 3-node ensemble: Sessions lock holders
	// (each its own session and lock) and Sessions election candidates (one
	// election) ride through every server being stopped for DownMS and
	// started again, in turn, Cycles restarts in all. Measured: holds lost,
	// leadership changes, sessions lost, and how long the work stood still.
	W8 = "W8"
	// W9: a rolling deploy (issue 38): Sessions candidates of one version,
	// each replaced by one of the next (started, in line, then the old one
	// stopped gracefully, oldest first), Cycles deploys. Measured: the
	// leadership changes and leaderless milliseconds per deploy.
	W9 = "W9"
)

// Workloads lists every workload in the order the runner runs them.
var Workloads = []string{W1, W2, W3, W4, W5, W6, W7s, W7l, W7x, W8, W9}

// Title describes a workload in one line.
func Title(w string) string {
	switch w {
	case W1:
		return "uncontended mutex acquire+release, 1 session"
	case W2:
		return "mutex contended by N sessions, exclusion checked in-process"
	case W3:
		return "semaphore (maxLeases) shared by N sessions, each holding a lease for a while"
	case W4:
		return "leader election: the leader resigns and rejoins; time until the next leader knows"
	case W5:
		return "N waiters queued on a held mutex; chain of handoffs as each takes and releases it"
	case W6:
		return "leader crash: the leader's connection stalls; time until another leads, and who learns first"
	case W7s, W7l, W7x:
		return "scale: W5's chain of handoffs with a short and a long line of waiters"
	case W8:
		return "rolling restart of a 3-node ensemble: lock holders and election candidates ride through it"
	case W9:
		return "rolling deploy: each candidate replaced by a new version, one at a time; leadership changes and leaderless time"
	}
	return w
}

// Spec is one run's parameters. Subprocess peers receive it as a JSON object
// with these field names.
type Spec struct {
	Workload string `json:"workload"`
	Connect  string `json:"connect"` // ZooKeeper connect string (loopback only)
	Path     string `json:"path"`    // a fresh, existing znode for this run
	// Sessions is the number of ZooKeeper sessions that contend (W2, W3), the
	// candidates (W4) or the waiters (W5, plus one holder).
	Sessions int `json:"sessions"`
	// Conns, when set, caps the sessions W5 and W7 open: the contenders then
	// share them (several in line per session); 0: one session each.
	Conns int `json:"conns,omitempty"`
	// Cycles bounds the measured operations: W1 cycles, W2/W3 acquisitions,
	// W4 handoffs. W5 always runs one chain of Sessions handoffs.
	Cycles int `json:"cycles"`
	// Seconds bounds the load loop in time; whichever of Cycles and Seconds
	// comes first ends it. Operations already waiting when it ends complete
	// (a contended line drains instead of abandoning its nodes).
	Seconds float64 `json:"seconds"`
	// HoldMS is how long a W3 lease is held; TermMS how long a W4 leader
	// leads before it resigns (so each rejoin settles before the next handoff).
	HoldMS float64 `json:"hold_ms"`
	TermMS float64 `json:"term_ms"`
	// Leases is W3's maxLeases.
	Leases int `json:"leases"`
	// SessionTimeoutMS is every session's requested timeout.
	SessionTimeoutMS int `json:"session_timeout_ms"`
	// GraceS bounds every blocking call beyond the load loop's end: a run
	// that is not done by then has failed.
	GraceS float64 `json:"grace_s"`
	// Connects (W6, subprocess peers) holds one connect string per session,
	// separated by ';': session i connects through a fault proxy of its own.
	Connects string `json:"connects,omitempty"`
	// FaultURL (W6, subprocess peers) is a loopback HTTP endpoint: GET
	// FaultURL/stall?i=N stalls session N's proxy (no byte passes either
	// way), /heal?i=N heals it.
	FaultURL string `json:"fault_url,omitempty"`
	// DownMS (W8) is how long each server stays stopped before it is started
	// again. W8's Cycles is the number of server restarts (the ensemble's
	// size per round), Seconds bounds the whole roll.
	DownMS float64 `json:"down_ms,omitempty"`
	// TLS, when set, is the client configuration for a TLS-only cluster
	// (zktest.WithTLS): the runner sets it from the target's ClientTLS, and
	// the Go peers connect with it. Subprocess peers do not receive it.
	TLS *tls.Config `json:"-"`
}

// Duration is Seconds as a time.Duration.
func (s Spec) Duration() time.Duration { return time.Duration(s.Seconds * float64(time.Second)) }

// Grace is GraceS as a time.Duration.
func (s Spec) Grace() time.Duration { return time.Duration(s.GraceS * float64(time.Second)) }

// SessionTimeout is SessionTimeoutMS as a time.Duration.
func (s Spec) SessionTimeout() time.Duration {
	return time.Duration(s.SessionTimeoutMS) * time.Millisecond
}

// Hold is HoldMS as a time.Duration.
func (s Spec) Hold() time.Duration { return time.Duration(s.HoldMS * float64(time.Millisecond)) }

// Term is TermMS as a time.Duration.
func (s Spec) Term() time.Duration { return time.Duration(s.TermMS * float64(time.Millisecond)) }

// Down is DownMS as a time.Duration.
func (s Spec) Down() time.Duration { return time.Duration(s.DownMS * float64(time.Millisecond)) }

// Servers splits the connect string into addresses.
func (s Spec) Servers() []string { return strings.Split(s.Connect, ",") }

// Validate reports a spec that no peer could run.
func (s Spec) Validate() error {
	switch {
	case s.Connect == "" || s.Path == "" || !strings.HasPrefix(s.Path, "/"):
		return fmt.Errorf("bench: spec needs a connect string and an absolute path: %+v", s)
	case s.Cycles < 1 || s.Seconds <= 0 || s.GraceS <= 0:
		return fmt.Errorf("bench: spec needs cycles, seconds and grace > 0: %+v", s)
	case s.SessionTimeoutMS < 1:
		return fmt.Errorf("bench: spec needs a session timeout: %+v", s)
	}
	switch s.Workload {
	case W1:
	case W2, W4, W5, W6, W7s, W7l, W7x, W8, W9:
		if s.Sessions < 2 {
			return fmt.Errorf("bench: %s needs at least 2 sessions", s.Workload)
		}
		if s.Workload == W8 && s.DownMS <= 0 {
			return fmt.Errorf("bench: W8 needs down_ms > 0")
		}
	case W3:
		if s.Sessions < 1 || s.Leases < 1 {
			return fmt.Errorf("bench: W3 needs sessions and leases >= 1")
		}
	default:
		return fmt.Errorf("bench: unknown workload %q", s.Workload)
	}
	return nil
}

// Params are the default parameters of every workload, for a full or a quick
// run. The connect string and path are filled in per run.
func Params(quick bool) map[string]Spec {
	base := Spec{SessionTimeoutMS: 30000, GraceS: 30}
	with := func(f func(*Spec)) Spec { s := base; f(&s); return s }
	if quick {
		return map[string]Spec{
			W1: with(func(s *Spec) { s.Workload, s.Sessions, s.Cycles, s.Seconds = W1, 1, 1000, 1 }),
			W2: with(func(s *Spec) { s.Workload, s.Sessions, s.Cycles, s.Seconds = W2, 16, 5000, 1.5 }),
			W3: with(func(s *Spec) {
				s.Workload, s.Sessions, s.Cycles, s.Seconds, s.Leases, s.HoldMS = W3, 16, 2000, 1.5, 4, 10
			}),
			W4: with(func(s *Spec) { s.Workload, s.Sessions, s.Cycles, s.Seconds, s.TermMS = W4, 5, 10, 5, 20 }),
			W5: with(func(s *Spec) { s.Workload, s.Sessions, s.Cycles, s.Seconds = W5, 50, 50, 10 }),
			W6: with(func(s *Spec) {
				s.Workload, s.Sessions, s.Cycles, s.Seconds, s.SessionTimeoutMS = W6, 3, 2, 20, 2000
			}),
			W7s: with(func(s *Spec) { s.Workload, s.Sessions, s.Cycles, s.Seconds = W7s, 10, 10, 10 }),
			W7l: with(func(s *Spec) { s.Workload, s.Sessions, s.Cycles, s.Seconds = W7l, 300, 300, 20 }),
			W7x: with(func(s *Spec) { s.Workload, s.Sessions, s.Cycles, s.Seconds, s.Conns = W7x, 1000, 1000, 20, 100 }),
			// One round: each of the 3 servers restarted once.
			W8: with(func(s *Spec) {
				s.Workload, s.Sessions, s.Cycles, s.Seconds, s.DownMS, s.SessionTimeoutMS = W8, 3, 3, 60, 1000, 10000
			}),
			W9: with(func(s *Spec) { s.Workload, s.Sessions, s.Cycles, s.Seconds = W9, 3, 2, 60 }),
		}
	}
	return map[string]Spec{
		W1: with(func(s *Spec) { s.Workload, s.Sessions, s.Cycles, s.Seconds = W1, 1, 5000, 3 }),
		W2: with(func(s *Spec) { s.Workload, s.Sessions, s.Cycles, s.Seconds = W2, 16, 20000, 4 }),
		W3: with(func(s *Spec) {
			s.Workload, s.Sessions, s.Cycles, s.Seconds, s.Leases, s.HoldMS = W3, 16, 5000, 4, 4, 10
		}),
		W4: with(func(s *Spec) { s.Workload, s.Sessions, s.Cycles, s.Seconds, s.TermMS = W4, 5, 30, 8, 20 }),
		W5: with(func(s *Spec) { s.Workload, s.Sessions, s.Cycles, s.Seconds = W5, 50, 50, 10 }),
		W6: with(func(s *Spec) {
			s.Workload, s.Sessions, s.Cycles, s.Seconds, s.SessionTimeoutMS = W6, 3, 4, 40, 2000
		}),
		W7s: with(func(s *Spec) { s.Workload, s.Sessions, s.Cycles, s.Seconds = W7s, 10, 10, 10 }),
		W7l: with(func(s *Spec) { s.Workload, s.Sessions, s.Cycles, s.Seconds = W7l, 1000, 1000, 30 }),
		W7x: with(func(s *Spec) {
			s.Workload, s.Sessions, s.Cycles, s.Seconds, s.GraceS, s.Conns = W7x, 10000, 10000, 60, 120, 200
		}),
		// Two rounds: each of the 3 servers restarted twice, in turn.
		W8: with(func(s *Spec) {
			s.Workload, s.Sessions, s.Cycles, s.Seconds, s.DownMS, s.SessionTimeoutMS = W8, 3, 6, 120, 1000, 10000
		}),
		W9: with(func(s *Spec) { s.Workload, s.Sessions, s.Cycles, s.Seconds = W9, 3, 5, 120 }),
	}
}

// Result is what a peer reports for one run. Metrics use the names below;
// the runner adds the server-side counts.
type Result struct {
	Ops      int                `json:"ops"`       // operations measured (the denominator of per-op counts)
	ElapsedS float64            `json:"elapsed_s"` // the measured part only
	Metrics  map[string]float64 `json:"metrics"`
}

// Metric names shared by every peer, in every language.
const (
	MOpsPerS       = "ops_per_s"            // W1 cycles/s, W2/W3 acquisitions/s, W4/W5 handoffs/s
	MLatencyP50    = "latency_p50_us"       // W1 acquire, W2/W3 wait, W4/W5 handoff
	MLatencyP99    = "latency_p99_us"       //
	MViolations    = "violations"           // W2, W5: two holders at once, seen in-process
	MOverLimit     = "over_limit"           // W3: more than maxLeases holders at once
	MLeasesInUse   = "leases_in_use"        // W3: time-weighted mean of held leases
	MFirstHandoff  = "first_handoff_us"     // W5: the handoff with every waiter queued
	MLossFirst     = "loss_signal_first"    // W6: share of crashes where the old leader was told before the new one led
	MRequestsPerOp = "requests_per_op"      // added by the runner: zk_packets_received delta / ops
	MNotifsPerOp   = "notifications_per_op" // added by the runner: watch notifications fired / ops
	MBytesPerOp    = "bytes_per_op"         // added by the runner: bytes both ways (server-counted) / ops
	MBytesTotal    = "bytes_total"          // added by the runner: bytes both ways over the measured part

	// W8 (rolling restart). Counted from the first restart until the run
	// has settled (every holder holds again, a leader leads, nothing paused);
	// the first grants and the first election are not counted.
	MHoldsLost     = "holds_lost"      // lock holders' loss signals
	MLeaderChanges = "leader_changes"  // a candidate told it leads (again), after the first election
	MLeaderMoves   = "leader_moves"    // ... of which a different candidate than the last leader
	MLeaderLosses  = "leader_losses"   // the leader told it may have lost leadership
	MSessionsLost  = "sessions_lost"   // sessions expired (or declared lost by the client), all of the run's
	MPausedS       = "paused_s"        // lock_paused_s + leader_paused_s
	MLockPausedS   = "lock_paused_s"   // holders: sum of pauses, and of each loss to the next grant
	MLeaderPausedS = "leader_paused_s" // the election: time with no leader free to act

	// W9 (rolling deploy), per deploy: leader_changes (as W8's: a candidate
	// told it leads, after the deploy's first leader), how many of those went
	// to a candidate of the old version, and the leaderless time (from a
	// leader being told its leadership ended to the next one told it leads).
	MChangesToOld = "changes_to_old"
	MLeaderlessMS = "leaderless_ms"
)

// metricInfo is how the summary table shows a metric.
type metricInfo struct{ key, label string }

// tableMetrics lists, per workload, the metrics the summary table shows.
func tableMetrics(w string) []metricInfo {
	rpo := metricInfo{MRequestsPerOp, "requests/op"}
	npo := metricInfo{MNotifsPerOp, "notifications/op"}
	switch w {
	case W1:
		return []metricInfo{{MOpsPerS, "cycles/s"}, {MLatencyP50, "acquire p50 µs"},
			{MLatencyP99, "acquire p99 µs"}, rpo}
	case W2:
		return []metricInfo{{MOpsPerS, "acquisitions/s"}, {MLatencyP50, "wait p50 µs"},
			{MLatencyP99, "wait p99 µs"}, {MViolations, "violations"}, rpo, npo}
	case W3:
		return []metricInfo{{MOpsPerS, "acquisitions/s"}, {MLeasesInUse, "leases in use"},
			{MOverLimit, "over-limit"}, {MLatencyP50, "wait p50 µs"},
			{MLatencyP99, "wait p99 µs"}, rpo, npo}
	case W4:
		return []metricInfo{{MLatencyP50, "handoff p50 µs"}, {MLatencyP99, "handoff p99 µs"}, rpo, npo}
	case W6:
		return []metricInfo{{MLatencyP50, "time to new leader p50 µs"}, {MLatencyP99, "p99 µs"},
			{MLossFirst, "old leader told first"}}
	case W9:
		return []metricInfo{{MLeaderChanges, "leadership changes/deploy"}, {MChangesToOld, "... to an old version"},
			{MLeaderlessMS, "leaderless ms/deploy"}}
	case W8:
		return []metricInfo{{MHoldsLost, "holds lost"}, {MLeaderChanges, "leadership changes"},
			{MLeaderMoves, "... to another candidate"}, {MLeaderLosses, "leader's loss signals"},
			{MSessionsLost, "sessions lost"}, {MPausedS, "work paused/stopped s"},
			{MLockPausedS, "... locks s"}, {MLeaderPausedS, "... leadership s"}}
	case W5, W7s, W7l, W7x:
		return []metricInfo{{MFirstHandoff, "first handoff µs"}, {MLatencyP50, "handoff p50 µs"},
			{MLatencyP99, "handoff p99 µs"}, {MViolations, "violations"}, rpo, npo,
			{MBytesPerOp, "bytes/handoff"}, {MBytesTotal, "drain bytes"}}
	}
	return nil
}
