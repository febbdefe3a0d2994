package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/admin"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/semaphore"
)

// TestVersion: `shepherd version`, --version and -version print the module
// version (a dev build: "(devel)"), and the Go version, and exit 0.
func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		r := shepherd(t, nil, args...)
		require.Equal(t, 0, r.code, "shepherd %q: %s", args, r.stderr)
		require.Regexp(t, `^shepherd (\(devel\)|v\d+\.\d+\.\d+\S*)`, r.stdout, "shepherd %q", args)
		require.Regexp(t, `go1\.\d+`, r.stdout, "shepherd %q names the Go version", args)
	}
	r := shepherd(t, nil, "help")
	require.Contains(t, r.stdout, "shepherd version")
}

// TestStatusJSONSession: status -json gives each entry's session as the
// text view and SHEPHERD_SESSION do, "0x…", beside the numeric session_id.
func TestStatusJSONSession(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	dir := t.TempDir()
	start(t, nil, "lock", "-id", "j", path, "--", "sh", "-c",
		fmt.Sprintf(`echo $SHEPHERD_SESSION > %[1]s/s.tmp; mv %[1]s/s.tmp %[1]s/s; exec sleep 30`, dir))
	waitFile(t, filepath.Join(dir, "s"))
	b, err := os.ReadFile(filepath.Join(dir, "s"))
	require.NoError(t, err)
	env := strings.TrimSpace(string(b))
	r := shepherd(t, nil, "status", "-json", path)
	require.Equal(t, 0, r.code, r.stderr)
	var raw struct {
		Holders []map[string]any `json:"holders"`
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.UseNumber() // session ids pass 2^53: a float64 rounds them
	require.NoError(t, dec.Decode(&raw))
	require.Len(t, raw.Holders, 1)
	require.Equal(t, env, raw.Holders[0]["session"], "JSON session as SHEPHERD_SESSION: %s", r.stdout)
	sid, err := raw.Holders[0]["session_id"].(json.Number).Int64()
	require.NoError(t, err, "session_id stays a number")
	require.Equal(t, env, fmt.Sprintf("0x%x", sid))
	r = shepherd(t, nil, "status", path)
	require.Regexp(t, `holder\s+j\s+`+regexp.QuoteMeta(env)+`\s`, r.stdout)
}

// TestStatusSemaphoreLabels: a semaphore's waiters are labelled as lease
// waiters (their nodes are named lock-, as Curator's
// InterProcessSemaphoreV2 names them, but they wait for a lease, not a
// lock); a library semaphore's holder shows its WithData in the ID column,
// as the CLI's -id does.
func TestStatusSemaphoreLabels(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	sess := testutil.Open(t, zk.Servers())
	sem, err := semaphore.New(sess, path, 1, semaphore.WithData([]byte("lib-holder")))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := sem.Acquire(ctx)
	require.NoError(t, err)
	defer l.Release(context.Background())
	start(t, nil, "semaphore", "-n", "1", "-id", "cli-waiter", path, "--", "true")
	waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Waiters) == 1 })
	r := shepherd(t, nil, "status", path)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^holder\s+lib-holder\s.*curator lease- \(InterProcessSemaphoreV2\)$`, r.stdout)
	require.Regexp(t, `(?m)^waiter 1\s+cli-waiter\s.*curator lock- \(InterProcessSemaphoreV2 lease waiters\)$`, r.stdout)
	require.NotContains(t, r.stdout, "InterProcessMutex")
}

// TestFlagErrors: bad durations and arguments are usage errors (exit 2)
// whose message names the flag and says what to write.
func TestFlagErrors(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"timeout", "grace", "session-timeout", "connect-timeout"} {
		r := shepherd(t, nil, "lock", "-"+f, "5", "/p", "--", "true")
		require.Equal(t, 2, r.code, "-%s 5: %s", f, r.stderr)
		require.Contains(t, r.stderr, "-"+f+" 5: missing unit (e.g. 5s)")
	}
	for _, args := range [][]string{
		{"-session-timeout", "0s", "status", "/p"},
		{"-connect-timeout", "0s", "status", "/p"},
		{"lock", "-timeout", "-1s", "/p", "--", "true"},
		{"lock", "-grace", "-1s", "/p", "--", "true"},
	} {
		r := shepherd(t, nil, args...)
		require.Equal(t, 2, r.code, "%q: %s", args, r.stderr)
		flag := args[0]
		if flag == "lock" {
			flag = args[1]
		}
		require.Contains(t, r.stderr, flag, "%q names the flag", args)
	}
	r := shepherd(t, nil, "status", "/x", "/y")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "status takes one PATH")
	require.NotContains(t, r.stderr, "CMD")
}

// TestSessionTimeoutRejected: a session timeout below the server's minimum
// (2 ticks: 400ms here) is bad usage, not an unreachable ZooKeeper.
func TestSessionTimeoutRejected(t *testing.T) {
	t.Parallel()
	r := shepherd(t, nil, "-session-timeout", "100ms", "status", "/p")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "-session-timeout 100ms")
	require.Contains(t, r.stderr, "minimum is "+(2*zk.TickTime()).String())
	require.NotContains(t, r.stderr, "cannot reach")
}

// TestConnectionRefused: when every server refuses the connection, shepherd
// gives up within seconds (exit 3, "connection refused"), not after the
// whole -connect-timeout.
func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	addr := "127.0.0.1:" + freePort(t)
	began := time.Now()
	r := shepherd(t, []string{"SHEPHERD_ZK=" + addr}, "-connect-timeout", "40s", "status", "/p")
	took := time.Since(began)
	require.Equal(t, 3, r.code, r.stderr)
	require.Contains(t, r.stderr, "connection refused")
	require.Less(t, took, 15*time.Second, "fails fast: %s", r.stderr)
	t.Logf("gave up after %v: %s", took.Round(time.Millisecond), r.stderr)
}

// TestConnectionRefusedWhileStarting: a server that refuses connections for
// its first second (ZooKeeper starting) is waited for.
func TestConnectionRefusedWhileStarting(t *testing.T) {
	t.Parallel()
	addr := "127.0.0.1:" + freePort(t)
	go func() {
		time.Sleep(time.Second) // the fault: nothing listens for the first second
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return // the test fails on its own
		}
		t.Cleanup(func() { ln.Close() })
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", zk.Servers()[0])
			if err != nil {
				c.Close()
				continue
			}
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
	r := shepherd(t, []string{"SHEPHERD_ZK=" + addr}, "-connect-timeout", "20s", "status", uniquePath(t))
	require.Equal(t, 7, r.code, "connected, found nothing: %s", r.stderr)
}
