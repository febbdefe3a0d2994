package main_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var servingRe = regexp.MustCompile(`serving /metrics, /readyz, /healthz and /livez on (http://\S+)`)

// served waits for a -metrics line on stderr and returns the base URL.
func served(t *testing.T, stderr *syncWriter) string {
	t.Helper()
	var base string
	require.Eventually(t, func() bool {
		m := servingRe.FindStringSubmatch(stderr.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	}, 20*time.Second, 10*time.Millisecond, "no -metrics line: %s", stderr)
	return base
}

// sample is the value of the series name{labels} in a /metrics page, if any.
func sample(page, name string, labels map[string]string) (float64, bool) {
next:
	for _, l := range strings.Split(page, "\n") {
		if !strings.HasPrefix(l, name+"{") {
			continue
		}
		for k, v := range labels {
			if !strings.Contains(l, k+`="`+v+`"`) {
				continue next
			}
		}
		f, err := strconv.ParseFloat(l[strings.LastIndex(l, " ")+1:], 64)
		return f, err == nil
	}
	return 0, false
}

// TestHoldersServeMetrics: lock, semaphore and schedule with -metrics
// serve /metrics (hold metrics labelled by path, the session Connected)
// and /readyz (200 while holding or leading, 503 while waiting or
// following); schedule prints its takeover and its ticks.
func TestHoldersServeMetrics(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	metricsOf := func(base string, name string, labels map[string]string) float64 {
		t.Helper()
		var v float64
		require.Eventually(t, func() bool {
			_, page := get(t, base+"/metrics")
			var ok bool
			v, ok = sample(page, name, labels)
			return ok
		}, 20*time.Second, 20*time.Millisecond, "%s%v", name, labels)
		return v
	}
	ready := func(base string, want int) {
		t.Helper()
		require.Eventually(t, func() bool { code, _ := get(t, base+"/readyz"); return code == want },
			20*time.Second, 20*time.Millisecond, "/readyz %d", want)
	}
	for _, tc := range []struct{ kind, recipe string }{{"lock", "mutex"}, {"semaphore", "semaphore"}} {
		p := path + "-" + tc.kind
		args := []string{tc.kind, "-metrics", "127.0.0.1:0", p, "--", "sleep", "60"}
		if tc.kind == "semaphore" {
			args = append([]string{tc.kind, "-n", "1"}, args[1:]...)
		}
		holder, herr := start(t, nil, args...)
		hb := served(t, herr)
		require.Equal(t, 1.0, metricsOf(hb, "shepherd_holds", map[string]string{"recipe": tc.recipe, "path": p}), tc.kind)
		require.Equal(t, 1.0, metricsOf(hb, "shepherd_session_state", map[string]string{"state": "Connected"}))
		ready(hb, 200)
		code, body := get(t, hb+"/healthz")
		require.Equal(t, 200, code, body)
		waiter, werr := start(t, nil, args...)
		wb := served(t, werr)
		ready(wb, 503)
		require.NoError(t, holder.Process.Kill())
		require.NoError(t, waiter.Process.Kill())
	}

	p := path + "-schedule"
	args := []string{"schedule", "-every", "200ms", "-metrics", "127.0.0.1:0", p, "--", "true"}
	a, aerr := start(t, nil, args...)
	ab := served(t, aerr)
	require.GreaterOrEqual(t, metricsOf(ab, "shepherd_schedule_ticks_total", map[string]string{"path": p, "outcome": "ok"}), 0.0)
	require.Eventually(t, func() bool {
		_, page := get(t, ab+"/metrics")
		v, _ := sample(page, "shepherd_schedule_ticks_total", map[string]string{"path": p, "outcome": "ok"})
		return v >= 2
	}, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, 1.0, metricsOf(ab, "shepherd_leader", map[string]string{"path": p + "/leader"}))
	ready(ab, 200)
	b, berr := start(t, nil, args...)
	bb := served(t, berr)
	require.Equal(t, 0.0, metricsOf(bb, "shepherd_leader", map[string]string{"path": p + "/leader"}))
	ready(bb, 503)
	require.Regexp(t, `shepherd: leading schedule `+regexp.QuoteMeta(p)+` \(term \d+\); last tick none yet`, aerr.String())
	// A tick begun and its end, whichever tick (on a loaded machine a
	// tick's CMD can outlast the next ones: -catch-up skips them).
	begun := regexp.MustCompile(`shepherd: tick (\d+) \(attempt 1, due \S+, started \S+ late\)`).FindStringSubmatch(aerr.String())
	require.NotNil(t, begun, aerr.String())
	require.Regexp(t, `shepherd: tick `+begun[1]+`: ok \(ran \S+\)`, aerr.String())
	require.NoError(t, a.Process.Kill())
	require.NoError(t, b.Process.Kill())
}
