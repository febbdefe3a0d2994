package main_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/zktest"
)

type probeBody struct {
	Status  string `json:"status"` // /healthz and /livez: "ok" or "error"
	Leading bool   `json:"leading"`
	Paused  bool   `json:"paused"`
	ID      string `json:"id"`
	Leader  string `json:"leader"`
	Term    int64  `json:"term"`
}

// sidecar starts `elect -http 127.0.0.1:0` without CMD and returns its
// process and base URL (read from its stderr).
func sidecar(t *testing.T, id, path string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd, _, url := sidecarErr(t, id, path, extra...)
	return cmd, url
}

// sidecarErr is sidecar with its stderr; extra flags come first.
func sidecarErr(t *testing.T, id, path string, extra ...string) (*exec.Cmd, *syncWriter, string) {
	t.Helper()
	args := append(append([]string{}, extra...), "-session-timeout", "4s", "elect", "-http", "127.0.0.1:0", "-id", id, path)
	cmd, errb := start(t, nil, args...)
	re := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)`)
	var url string
	require.Eventually(t, func() bool {
		m := re.FindStringSubmatch(errb.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	}, 20*time.Second, 5*time.Millisecond, "serving; stderr: %s", errb)
	return cmd, errb, url
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func waitProbe(t *testing.T, url string, code int, cond func(probeBody) bool) probeBody {
	t.Helper()
	var p probeBody
	var last string
	require.Eventually(t, func() bool {
		c, body := get(t, url)
		last = body
		p = probeBody{}
		return c == code && json.Unmarshal([]byte(body), &p) == nil && cond(p)
	}, 20*time.Second, 10*time.Millisecond, "%s: want %d; last body %s", url, code, last)
	return p
}

// TestElectSidecar: two `elect -http` sidecars without CMD: the leader's
// /readyz answers 200, the follower's 503 naming the leader; /metrics
// serves; after the leader's SIGTERM the follower's /readyz flips to 200.
// The probes' codes on each side: TestElectProbes.
func TestElectSidecar(t *testing.T) {
	began := time.Now()
	defer func() { t.Logf("wall time %v", time.Since(began).Round(time.Millisecond)) }()
	path := uniquePath(t)
	a, urlA := sidecar(t, "a", path)
	pa := waitProbe(t, urlA+"/readyz", 200, func(p probeBody) bool { return p.Leading })
	require.Equal(t, probeBody{Leading: true, ID: "a", Leader: "a", Term: pa.Term}, pa)
	require.NotZero(t, pa.Term)
	_, urlB := sidecar(t, "b", path)
	pb := waitProbe(t, urlB+"/readyz", 503, func(p probeBody) bool { return p.Leader == "a" })
	require.Equal(t, probeBody{Leading: false, ID: "b", Leader: "a", Term: pa.Term}, pb)
	code, body := get(t, urlA+"/metrics")
	require.Equal(t, 200, code)
	require.Regexp(t, `shepherd_leader\{path="[^"]+"\} 1`, body)
	require.Contains(t, body, `shepherd_session_state{state="Connected"} 1`)
	code, body = get(t, urlB+"/metrics")
	require.Equal(t, 200, code)
	require.NotRegexp(t, `shepherd_leader\{path="[^"]+"\} 1`, body)

	stopped := time.Now()
	require.NoError(t, a.Process.Signal(syscall.SIGTERM))
	require.NoError(t, a.Wait(), "a sidecar stopped by SIGTERM exits 0")
	pb = waitProbe(t, urlB+"/readyz", 200, func(p probeBody) bool { return p.Leading })
	require.Equal(t, "b", pb.Leader)
	require.Greater(t, pb.Term, pa.Term)
	t.Logf("b ready %v after a's SIGTERM", time.Since(stopped).Round(time.Millisecond))
}

// probes reads /healthz, /readyz and /livez once each: their codes, and
// /healthz's body (/livez must answer the same).
func probes(t *testing.T, url string) (health, ready, live int, hb probeBody) {
	t.Helper()
	health, hbody := get(t, url+"/healthz")
	ready, _ = get(t, url+"/readyz")
	live, lbody := get(t, url+"/livez")
	require.NoError(t, json.Unmarshal([]byte(hbody), &hb), "/healthz body %s", hbody)
	var lb probeBody
	require.NoError(t, json.Unmarshal([]byte(lbody), &lb), "/livez body %s", lbody)
	require.Equal(t, hb, lb, "/livez answers as /healthz")
	return health, ready, live, hb
}

// TestElectProbes: the Kubernetes convention. /healthz (and /livez, the
// same) means "this process is alive and working": 200 on the leader and on
// a follower alike, so a livenessProbe on it never restarts a follower.
// /readyz means "this process leads": 200 on the leader, 503 on a follower.
func TestElectProbes(t *testing.T) {
	path := uniquePath(t)
	_, urlA := sidecar(t, "a", path)
	waitProbe(t, urlA+"/readyz", 200, func(p probeBody) bool { return p.Leading })
	_, urlB := sidecar(t, "b", path)
	waitProbe(t, urlB+"/readyz", 503, func(p probeBody) bool { return p.Leader == "a" })

	health, ready, live, hb := probes(t, urlA)
	require.Equal(t, [3]int{200, 200, 200}, [3]int{health, ready, live}, "the leader: /healthz, /readyz, /livez")
	require.Equal(t, probeBody{Status: "ok", Leading: true, ID: "a", Leader: "a", Term: hb.Term}, hb)

	health, ready, live, hb = probes(t, urlB)
	require.Equal(t, [3]int{200, 503, 200}, [3]int{health, ready, live}, "a follower: /healthz, /readyz, /livez")
	require.Equal(t, probeBody{Status: "ok", Leading: false, ID: "b", Leader: "a", Term: hb.Term}, hb)
}

// TestElectProbesPaused: a sidecar leader with -on-disconnect=pause whose
// connection is cut: paused, it answers 200 on /healthz and /livez (alive:
// a restart would only end the leadership it keeps) and 503 on /readyz
// (traffic moves away); all 200 again once the same session is back.
func TestElectProbesPaused(t *testing.T) {
	s := zk.Servers()[0]
	proxy, err := zktest.NewProxy(s, s)
	require.NoError(t, err)
	t.Cleanup(func() { proxy.Close() })
	_, errb, url := sidecarErr(t, "p", uniquePath(t), "-zk", strings.Join(proxy.Addrs(), ","), "-on-disconnect=pause")
	waitProbe(t, url+"/readyz", 200, func(p probeBody) bool { return p.Leading })

	proxy.Refuse(true)
	proxy.Sever()
	require.Eventually(t, func() bool { return strings.Contains(errb.String(), "connection to ZooKeeper lost") },
		20*time.Second, time.Millisecond, "paused; stderr: %s", errb)
	pb := waitProbe(t, url+"/readyz", 503, func(p probeBody) bool { return p.Paused })
	require.True(t, pb.Leading)
	health, ready, live, hb := probes(t, url)
	require.Equal(t, [3]int{200, 503, 200}, [3]int{health, ready, live}, "paused: /healthz, /readyz, /livez; stderr: %s", errb)
	require.Equal(t, probeBody{Status: "ok", Leading: true, Paused: true, ID: "p", Leader: "p", Term: hb.Term}, hb)

	proxy.Refuse(false)
	waitProbe(t, url+"/readyz", 200, func(p probeBody) bool { return p.Leading && !p.Paused })
	health, ready, live, _ = probes(t, url)
	require.Equal(t, [3]int{200, 200, 200}, [3]int{health, ready, live}, "resumed; stderr: %s", errb)
}
