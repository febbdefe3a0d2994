package main_test

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
)

// candidate starts `elect -http 127.0.0.1:0 -id ID PATH FLAGS...` without
// CMD and returns its process and base URL.
func candidate(t *testing.T, id, path string, flags ...string) (*exec.Cmd, string) {
	t.Helper()
	args := append([]string{"-session-timeout", "4s", "elect", "-http", "127.0.0.1:0", "-id", id, path}, flags...)
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
	return cmd, url
}

// waitLeads waits until the sidecar at url leads (its /readyz answers 200).
func waitLeads(t *testing.T, url string) probeBody {
	t.Helper()
	return waitProbe(t, url+"/readyz", 200, func(p probeBody) bool { return p.Leading })
}

// TestElectHandsOverOnSIGTERM: a leader stopped by SIGTERM hands over to
// the candidate of highest -priority, not the next in line; status shows
// the candidates' priorities and attributes.
func TestElectHandsOverOnSIGTERM(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	a, urlA := candidate(t, "a", path, "-priority", "1")
	waitLeads(t, urlA)
	_, urlB := candidate(t, "b", path, "-priority", "1")
	_, urlC := candidate(t, "c", path, "-priority", "2", "-attr", "version=2.0.0", "-attr", "zone=eu-1")
	waitProbe(t, urlC+"/readyz", 503, func(p probeBody) bool { return p.Leader == "a" })
	waitProbe(t, urlB+"/readyz", 503, func(p probeBody) bool { return p.Leader == "a" })
	r := shepherd(t, nil, "status", path)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "c (priority 2, version=2.0.0,zone=eu-1)")
	require.Contains(t, r.stdout, "a (priority 1)")
	require.NoError(t, a.Process.Signal(syscall.SIGTERM))
	require.NoError(t, a.Wait(), "SIGTERM: exit 0")
	pc := waitLeads(t, urlC)
	require.Equal(t, "c", pc.Leader, "the best candidate, not the next in line")
	code, _ := get(t, urlB+"/readyz")
	require.Equal(t, 503, code)
}

// TestElectHandoverWait: on SIGTERM a leader with -handover-wait keeps
// leading (its /readyz 200) until a candidate of higher priority is in
// line, then hands over to it.
func TestElectHandoverWait(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	a, urlA := candidate(t, "a", path, "-priority", "1", "-handover-wait", "30s")
	waitLeads(t, urlA)
	_, urlB := candidate(t, "b", path, "-priority", "1")
	waitProbe(t, urlB+"/readyz", 503, func(p probeBody) bool { return p.Leader == "a" })
	require.NoError(t, a.Process.Signal(syscall.SIGTERM))
	// It leads on: the one candidate in line is no better.
	for range 5 {
		code, body := get(t, urlA+"/readyz")
		require.Equal(t, 200, code, "a let go before a better candidate came: %s", body)
	}
	_, urlC := candidate(t, "c", path, "-priority", "2")
	pc := waitLeads(t, urlC)
	require.Equal(t, "c", pc.Leader)
	require.NoError(t, a.Wait(), "SIGTERM: exit 0")
}

// TestHandoverCommand: `shepherd handover PATH ID` moves leadership to ID,
// and to the best candidate without ID; it exits 7 for a candidate not in
// line or a path with no leader; status shows a pending handover.
func TestHandoverCommand(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	_, urlA := candidate(t, "a", path)
	waitLeads(t, urlA)
	_, urlB := candidate(t, "b", path)
	_, urlC := candidate(t, "c", path, "-priority", "5")
	waitProbe(t, urlC+"/readyz", 503, func(p probeBody) bool { return p.Leader == "a" })
	waitProbe(t, urlB+"/readyz", 503, func(p probeBody) bool { return p.Leader == "a" })

	r := shepherd(t, nil, "handover", path, "b")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "b leads "+path)
	waitLeads(t, urlB)
	r = shepherd(t, nil, "handover", path)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "c leads "+path, "the best")
	waitLeads(t, urlC)
	r = shepherd(t, nil, "handover", path, "nobody")
	require.Equal(t, 7, r.code, r.stderr)
	r = shepherd(t, nil, "handover", uniquePath(t))
	require.Equal(t, 7, r.code, r.stderr)
	r = shepherd(t, nil, "handover", path, "b", "c")
	require.Equal(t, 2, r.code, r.stderr)

	// A pending handover, as status shows it (a record no leader acts on:
	// it names no candidate in line).
	s := testutil.Open(t, zk.Servers())
	ep, err := s.Wait(testutil.Ctx(t, 10*time.Second))
	require.NoError(t, err)
	_, err = ep.Conn().Create(path+"/handover", []byte(`{"to":"gone","id":"z","by":"operator","reason":"operator"}`),
		gozk.FlagEphemeral, gozk.WorldACL(gozk.PermAll))
	require.NoError(t, err)
	r = shepherd(t, nil, "status", path)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "handover pending: to z (operator, by operator")
	r = shepherd(t, nil, "status", "-json", path)
	require.Equal(t, 0, r.code, r.stderr)
	var j struct {
		HandOver struct{ ID, By string } `json:"handover"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &j))
	require.Equal(t, "z", j.HandOver.ID)
	r = shepherd(t, nil, "ls", strings.TrimSuffix(path, path[strings.LastIndex(path, "/"):]))
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "handover pending to z")
}

// TestElectNonFairStatus: a non-fair election's candidates, invisible in
// the race, show in status through their registration, with priorities.
func TestElectNonFairStatus(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	_, urlA := candidate(t, "a", path, "-nonfair", "-priority", "1")
	waitLeads(t, urlA)
	_, urlB := candidate(t, "b", path, "-nonfair", "-priority", "3")
	waitProbe(t, urlB+"/readyz", 503, func(p probeBody) bool { return p.Leader == "a" })
	r := shepherd(t, nil, "status", path)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "2 candidates")
	require.Contains(t, r.stdout, "b (priority 3)")
	r = shepherd(t, nil, "handover", path)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "b leads")
	waitLeads(t, urlB)
}
