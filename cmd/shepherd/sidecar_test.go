package main_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type probeBody struct {
	Leading bool   `json:"leading"`
	Paused  bool   `json:"paused"`
	ID      string `json:"id"`
	Leader  string `json:"leader"`
	Term    int64  `json:"term"`
}

// sidecar starts `elect -http 127.0.0.1:0` without CMD and returns its
// process and base URL (read from its stderr).
func sidecar(t *testing.T, id, path string) (*exec.Cmd, string) {
	t.Helper()
	cmd, errb := start(t, nil, "-session-timeout", "4s", "elect", "-http", "127.0.0.1:0", "-id", id, path)
	re := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)`)
	var url string
	require.Eventually(t, func() bool {
		m := re.FindStringSubmatch(errb.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	}, 20*time.Second, 5*time.Millisecond, "serving; stderr: %s", errb)
	return cmd, url
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
// /readyz and /healthz answer 200, the follower's 503 naming the leader;
// /metrics and /livez serve; after the leader's SIGTERM the follower's flip
// to 200.
func TestElectSidecar(t *testing.T) {
	began := time.Now()
	defer func() { t.Logf("wall time %v", time.Since(began).Round(time.Millisecond)) }()
	path := uniquePath(t)
	a, urlA := sidecar(t, "a", path)
	pa := waitProbe(t, urlA+"/readyz", 200, func(p probeBody) bool { return p.Leading })
	require.Equal(t, probeBody{Leading: true, ID: "a", Leader: "a", Term: pa.Term}, pa)
	require.NotZero(t, pa.Term)
	_, urlB := sidecar(t, "b", path)
	for _, ep := range []string{"/readyz", "/healthz"} {
		pb := waitProbe(t, urlB+ep, 503, func(p probeBody) bool { return p.Leader == "a" })
		require.Equal(t, probeBody{Leading: false, ID: "b", Leader: "a", Term: pa.Term}, pb, ep)
		waitProbe(t, urlA+ep, 200, func(p probeBody) bool { return p.Leading })
	}
	code, body := get(t, urlA+"/metrics")
	require.Equal(t, 200, code)
	require.Regexp(t, `shepherd_leader\{path="[^"]+"\} 1`, body)
	require.Contains(t, body, `shepherd_session_state{state="Connected"} 1`)
	code, body = get(t, urlB+"/metrics")
	require.Equal(t, 200, code)
	require.NotRegexp(t, `shepherd_leader\{path="[^"]+"\} 1`, body)
	code, _ = get(t, urlB+"/livez")
	require.Equal(t, 200, code)

	stopped := time.Now()
	require.NoError(t, a.Process.Signal(syscall.SIGTERM))
	require.NoError(t, a.Wait(), "a sidecar stopped by SIGTERM exits 0")
	pb := waitProbe(t, urlB+"/readyz", 200, func(p probeBody) bool { return p.Leading })
	require.Equal(t, "b", pb.Leader)
	require.Greater(t, pb.Term, pa.Term)
	t.Logf("b ready %v after a's SIGTERM", time.Since(stopped).Round(time.Millisecond))
}
