package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteTable writes, per workload, the median [min–max] of every metric per
// peer over the repetitions, and a ratio column: the baseline peer's median
// divided by this peer's ("shepherd / peer" once shepherd is registered). For
// throughput and leases in use a ratio above 1 favours the baseline; for
// latencies and counts, below 1 does.
func WriteTable(w io.Writer, recs []Record, peerOrder []string, baseline string) {
	byKey := map[[2]string][]Record{}
	var failures []Record
	for _, r := range recs {
		if r.Error != "" {
			failures = append(failures, r)
			continue
		}
		k := [2]string{r.Workload, r.Peer}
		byKey[k] = append(byKey[k], r)
	}
	fmt.Fprintf(w, "  each cell: median [min – max] over the runs; %s / peer = %s's median over the peer's\n"+
		"  (for /s and leases in use, below 1 means the peer did better; for µs and counts, above 1 does)\n", baseline, baseline)
	for _, wl := range Workloads {
		var peers []string
		for _, p := range peerOrder {
			if len(byKey[[2]string{wl, p}]) > 0 {
				peers = append(peers, p)
			}
		}
		if len(peers) == 0 {
			continue
		}
		spec := firstSpec(recs, wl)
		fmt.Fprintf(w, "\n%s  %s\n    %s\n", wl, Title(wl), describeSpec(spec))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "metric\tpeer\tmedian\t[min – max]\truns\t%s / peer\t\n", baseline)
		base := byKey[[2]string{wl, baseline}]
		for _, m := range tableMetrics(wl) {
			bs := metricSummary(base, m.key)
			first := true
			for _, p := range peers {
				s := metricSummary(byKey[[2]string{wl, p}], m.key)
				if s.n == 0 {
					continue
				}
				label := ""
				if first {
					label, first = m.label, false
				}
				ratio := "—"
				if bs.n > 0 && s.med != 0 && !math.IsNaN(bs.med) {
					ratio = fmt.Sprintf("%.2f", bs.med/s.med)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t[%s – %s]\t%d\t%s\t\n", label, p, fmtNum(s.med), fmtNum(s.min), fmtNum(s.max), s.n, ratio)
			}
		}
		tw.Flush()
		writeVariants(w, byKey, wl, peers, baseline)
	}
	if len(failures) > 0 {
		fmt.Fprintf(w, "\nfailed runs (left out of the medians):\n")
		for _, r := range failures {
			fmt.Fprintf(w, "  rep %d %s %s: %s\n", r.Rep, r.Workload, r.Peer, r.Error)
		}
	}
	var loud []string
	for _, r := range recs {
		if r.Error == "" && !r.Quiet {
			loud = append(loud, fmt.Sprintf("rep %d %s %s", r.Rep, r.Workload, r.Peer))
		}
	}
	if len(loud) > 0 {
		fmt.Fprintf(w, "\nserver not quiet around (counts may be off by a few requests): %s\n", strings.Join(loud, ", "))
	}
}

func metricSummary(rs []Record, key string) summary {
	var xs []float64
	for _, r := range rs {
		if v, ok := r.Metrics[key]; ok {
			xs = append(xs, v)
		}
	}
	return summarize(xs)
}

func firstSpec(recs []Record, w string) Spec {
	i := slices.IndexFunc(recs, func(r Record) bool { return r.Workload == w })
	if i < 0 {
		return Spec{}
	}
	return recs[i].Spec
}

func describeSpec(s Spec) string {
	switch s.Workload {
	case W1:
		return fmt.Sprintf("up to %d cycles or %gs; requests/op = per acquire+release cycle", s.Cycles, s.Seconds)
	case W2:
		return fmt.Sprintf("%d sessions, up to %d acquisitions or %gs; requests/op = per acquisition", s.Sessions, s.Cycles, s.Seconds)
	case W3:
		return fmt.Sprintf("maxLeases %d, %d sessions, hold %gms, up to %d acquisitions or %gs; per-op counts per acquisition;\n"+
			"    raw here is the textbook semaphore (every waiter watches the children), not a floor", s.Leases, s.Sessions, s.HoldMS, s.Cycles, s.Seconds)
	case W4:
		return fmt.Sprintf("%d candidates, up to %d handoffs or %gs, term %gms; per-op counts include the resigned candidate's rejoin", s.Sessions, s.Cycles, s.Seconds, s.TermMS)
	case W6:
		return fmt.Sprintf("%d candidates, each behind a fault proxy, session timeout %dms, %d crashes (a stalled leader); Kazoo's signal is its client leaving CONNECTED, Curator's LeaderLatch notLeader", s.Sessions, s.SessionTimeoutMS, s.Cycles)
	case W8:
		return fmt.Sprintf("%d lock holders and %d candidates (a session each), session timeout %dms; %d server restarts (followers, then the leader),\n"+
			"    each down %gms; counted from the first restart until all hold and one leads again; ops = restarts", s.Sessions, s.Sessions, s.SessionTimeoutMS, s.Cycles, s.DownMS)
	case W9:
		return fmt.Sprintf("%d candidates of one version, each replaced by one of the next (started and in line, then the old one stopped,\n"+
			"    oldest first), %d deploys; per deploy; leaderless: from the old leader told its leadership ended to the next told it leads", s.Sessions, s.Cycles)
	case W5, W7s, W7l, W7x:
		conns := ""
		if s.Conns > 0 && s.Conns < s.Sessions+1 {
			conns = fmt.Sprintf(" (sharing %d sessions)", s.Conns)
		}
		return fmt.Sprintf("%d waiters + 1 holder%s, one chain of %d handoffs; per-op counts per handoff (the holder's release included);\n"+
			"    bytes: received by the server plus its responses and notifications (server-counted)", s.Sessions, conns, s.Sessions)
	}
	return ""
}

// writeVariants writes, for each variant of the baseline on wl (a peer
// named baseline + "-...": the same library driven another way), its ratio
// over every other library on wl's first metric.
func writeVariants(w io.Writer, byKey map[[2]string][]Record, wl string, peers []string, baseline string) {
	ms := tableMetrics(wl)
	if len(ms) == 0 {
		return
	}
	m := ms[0]
	for _, v := range peers {
		if !strings.HasPrefix(v, baseline+"-") {
			continue
		}
		vs := metricSummary(byKey[[2]string{wl, v}], m.key)
		if vs.n == 0 {
			continue
		}
		var parts []string
		for _, p := range peers {
			if p == v || p == baseline || strings.HasPrefix(p, baseline+"-") {
				continue
			}
			if s := metricSummary(byKey[[2]string{wl, p}], m.key); s.n > 0 && s.med != 0 {
				parts = append(parts, fmt.Sprintf("%s %.2f", p, vs.med/s.med))
			}
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "    %s / peer (%s): %s\n", v, m.label, strings.Join(parts, ", "))
		}
	}
}

// WriteComparison writes, per workload and per peer found in both base and
// other, every table metric's median in each and their ratio, other's over
// base's ("TLS / plaintext" when other ran over TLS): the same setup but for
// one change, in one run.
func WriteComparison(w io.Writer, base, other []Record, peerOrder []string, baseName, otherName string) {
	group := func(recs []Record) map[[2]string][]Record {
		m := map[[2]string][]Record{}
		for _, r := range recs {
			if r.Error == "" {
				k := [2]string{r.Workload, r.Peer}
				m[k] = append(m[k], r)
			}
		}
		return m
	}
	bg, og := group(base), group(other)
	for _, wl := range Workloads {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		header := false
		for _, m := range tableMetrics(wl) {
			first := true
			for _, p := range peerOrder {
				b := metricSummary(bg[[2]string{wl, p}], m.key)
				o := metricSummary(og[[2]string{wl, p}], m.key)
				if b.n == 0 || o.n == 0 {
					continue
				}
				if !header {
					fmt.Fprintf(w, "\n%s  %s\n", wl, Title(wl))
					fmt.Fprintf(tw, "metric\tpeer\t%s\t%s\t%s / %s\t\n", baseName, otherName, otherName, baseName)
					header = true
				}
				label := ""
				if first {
					label, first = m.label, false
				}
				ratio := "—"
				if b.med != 0 && !math.IsNaN(b.med) && !math.IsNaN(o.med) {
					ratio = fmt.Sprintf("%.2f", o.med/b.med)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", label, p, fmtNum(b.med), fmtNum(o.med), ratio)
			}
		}
		tw.Flush()
	}
}
