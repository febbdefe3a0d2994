package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/admin"

	shold "github.com/shepherdzk/shepherd/hold"

	"github.com/stretchr/testify/require"
)

// TestHelp: -h, -help and --help on every subcommand exit 0 and print every
// flag of the subcommand with an example; so does `shepherd help SUB`.
func TestHelp(t *testing.T) {
	t.Parallel()
	conn := []string{"zk", "namespace", "session-timeout", "connect-timeout", "v", "tls", "tls-ca", "tls-cert", "tls-key", "auth-file"}
	hold := append([]string{"timeout", "grace", "pidns", "on-disconnect", "id", "acl", "metrics"}, conn...)
	flags := map[string][]string{
		"lock":      append([]string{"nonfair"}, hold...),
		"semaphore": append([]string{"n"}, hold...),
		"elect":     append([]string{"once", "nonfair", "http", "priority", "attr", "yield", "handover-wait"}, hold...),
		"handover":  append([]string{"timeout"}, conn...),
		"schedule":  append([]string{"every", "misfire", "catch-up", "min-spacing", "run-timeout", "drain", "cron", "tz"}, hold...),
		"status":    append([]string{"json", "watch"}, conn...),
		"dev":       {"port", "data", "tls", "servers"},
		"version":   nil,
		"ls":        append([]string{"json", "depth", "max-nodes"}, conn...),
	}
	for sub, names := range flags {
		for _, args := range [][]string{{sub, "-h"}, {sub, "--help"}, {sub, "-help"}, {"help", sub}, {sub, "/p", "-h"}} {
			r := shepherd(t, nil, args...)
			require.Equal(t, 0, r.code, "shepherd %q: %s", args, r.stderr)
			require.Contains(t, r.stdout, "Usage: shepherd "+sub, "shepherd %q", args)
			require.Contains(t, r.stdout, "Example", "shepherd %q", args)
			for _, f := range names {
				require.Regexp(t, `(?m)^  -`+regexp.QuoteMeta(f)+`\b`, r.stdout, "shepherd %q lists -%s", args, f)
			}
		}
	}
	r := shepherd(t, nil, "help")
	require.Equal(t, 0, r.code)
	for _, s := range []string{"SHEPHERD_PATH", "SHEPHERD_NODE", "SHEPHERD_TOKEN", "SHEPHERD_SESSION",
		"SHEPHERD_ID", "SHEPHERD_TERM", "SHEPHERD_TICK", "SHEPHERD_TICK_TIME", "SHEPHERD_ATTEMPT", "shepherd schedule", "shepherd dev", "PID namespace", "subreaper", "Exit status",
		"-on-disconnect=pause", "fenced", "SHEPHERD_TLS_CA", "SHEPHERD_AUTH", "-auth-file", "-acl creator"} {
		require.Contains(t, r.stdout, s)
	}
}

// TestFlagsAfterPath: flags after PATH are flags, up to "--"; what follows
// "--" is CMD's, even if it looks like a flag.
func TestFlagsAfterPath(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	start(t, nil, "lock", "-id", "holder", path, "--", "sleep", "30")
	waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Holders) == 1 })
	began := time.Now()
	r := shepherd(t, nil, "lock", path, "-timeout", "300ms", "--", "true")
	require.Equal(t, 4, r.code, "-timeout after PATH applies: %s", r.stderr)
	require.Less(t, time.Since(began), 20*time.Second)

	r = shepherd(t, nil, "lock", uniquePath(t), "-id=after", "--", "sh", "-c", `test "$SHEPHERD_ID" = after && test "$1" = -timeout`, "sh", "-timeout")
	require.Equal(t, 0, r.code, r.stderr)
	r = shepherd(t, nil, "lock", uniquePath(t), "sh", "-c", "true")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "put -- before CMD")
	r = shepherd(t, nil, "status", path, "-json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"holder"`)
}

// TestConnectStringChroot: "host:port,host:port/chroot" puts PATH under the
// chroot, as zkCli does; -namespace goes under the chroot.
func TestConnectStringChroot(t *testing.T) {
	t.Parallel()
	chroot := uniquePath(t)
	dir := t.TempDir()
	zkc := zk.ConnectString() + chroot
	script := fmt.Sprintf(`echo "$SHEPHERD_PATH $SHEPHERD_NODE" > %[1]s/env.tmp; mv %[1]s/env.tmp %[1]s/env; exec sleep 30`, dir)
	start(t, nil, "-zk", zkc, "lock", "-namespace", "/team", "-id", "c", "/x", "--", "sh", "-c", script)
	s := waitStatus(t, chroot+"/team/x", func(s admin.Snapshot) bool { return len(s.Holders) == 1 })
	require.Equal(t, "c", s.Holders[0].Data)
	waitFile(t, filepath.Join(dir, "env"))
	b, err := os.ReadFile(filepath.Join(dir, "env"))
	require.NoError(t, err)
	f := strings.Fields(string(b))
	require.Len(t, f, 2)
	require.Equal(t, "/x", f[0])
	require.True(t, strings.HasPrefix(f[1], "/x/_c_"), "SHEPHERD_NODE %q is under PATH, as PATH is", f[1])
	// status through the same connect string sees it at /x.
	r := shepherd(t, []string{"SHEPHERD_ZK=" + zkc}, "status", "-namespace", "/team", "/x")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `holder\s+c\s`, r.stdout)
}

// TestRefused: what is at PATH refuses a request: exit 6 and a message that
// says what is there.
func TestRefused(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	start(t, nil, "semaphore", "-n", "2", "-id", "s1", path, "--", "sleep", "30")
	waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Holders) == 1 })
	r := shepherd(t, nil, "semaphore", "-n", "3", path, "--", "true")
	require.Equal(t, 6, r.code, r.stderr)
	require.Contains(t, r.stderr, "a semaphore with maxLeases 2")
	r = shepherd(t, nil, "lock", path, "--", "true")
	require.Equal(t, 6, r.code, r.stderr)
	require.Contains(t, r.stderr, "a semaphore with maxLeases 2")

	lockPath := uniquePath(t)
	start(t, nil, "lock", lockPath, "--", "sleep", "30")
	waitStatus(t, lockPath, func(s admin.Snapshot) bool { return len(s.Holders) == 1 })
	r = shepherd(t, nil, "semaphore", "-n", "2", lockPath, "--", "true")
	require.Equal(t, 6, r.code, r.stderr)
	require.Contains(t, r.stderr, "a lock (1 holding")
}

// TestEnvironment: lock, semaphore and elect give CMD the same documented
// variables; the token is decimal everywhere, status included.
func TestEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dump := func(name string) []string {
		return []string{"sh", "-c", fmt.Sprintf(`echo $$ > %[1]s/%[2]s.pid; env | grep ^SHEPHERD_ | grep -v ^SHEPHERD_ZK= | sort > %[1]s/%[2]s.tmp; mv %[1]s/%[2]s.tmp %[1]s/%[2]s; exec sleep 30`, dir, name)}
	}
	paths := map[string]string{"lock": uniquePath(t), "semaphore": uniquePath(t), "elect": uniquePath(t)}
	start(t, nil, append([]string{"lock", "-id", "L", paths["lock"], "--"}, dump("lock")...)...)
	start(t, nil, append([]string{"semaphore", "-n", "2", "-id", "S", paths["semaphore"], "--"}, dump("semaphore")...)...)
	start(t, nil, append([]string{"elect", "-id", "E", paths["elect"], "--"}, dump("elect")...)...)
	for sub, path := range paths {
		waitFile(t, filepath.Join(dir, sub))
		b, err := os.ReadFile(filepath.Join(dir, sub))
		require.NoError(t, err)
		env := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			k, v, _ := strings.Cut(l, "=")
			env[k] = v
		}
		want := []string{"SHEPHERD_ID", "SHEPHERD_NODE", "SHEPHERD_PATH", "SHEPHERD_SESSION", "SHEPHERD_TOKEN"}
		if sub == "elect" {
			want = append(want, "SHEPHERD_TERM")
			require.Equal(t, env["SHEPHERD_TOKEN"], env["SHEPHERD_TERM"])
		}
		if sub == "semaphore" {
			want = append(want, "SHEPHERD_SLOT")
			require.Equal(t, "0", env["SHEPHERD_SLOT"], "the only lease holder's slot")
		}
		keys := make([]string, 0, len(env))
		for k := range env {
			keys = append(keys, k)
		}
		require.ElementsMatch(t, want, keys, "%s: %s", sub, b)
		require.Equal(t, path, env["SHEPHERD_PATH"])
		require.Equal(t, strings.ToUpper(sub[:1]), env["SHEPHERD_ID"])
		require.True(t, strings.HasPrefix(env["SHEPHERD_NODE"], path+"/"), "%s: node %s", sub, env["SHEPHERD_NODE"])
		tok, err := strconv.ParseInt(env["SHEPHERD_TOKEN"], 10, 64)
		require.NoError(t, err, "%s: decimal token", sub)
		sid, err := strconv.ParseInt(strings.TrimPrefix(env["SHEPHERD_SESSION"], "0x"), 16, 64)
		require.NoError(t, err, "%s: 0x-hex session", sub)
		// status shows the same token, in decimal, and the same session.
		s := waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Holders) == 1 })
		require.Equal(t, shold.Token(tok), s.Holders[0].Token, sub)
		require.Equal(t, sid, s.Holders[0].SessionID, sub)
		require.Equal(t, env["SHEPHERD_NODE"], s.Holders[0].Node, sub)
		r := shepherd(t, nil, "status", path)
		require.Equal(t, 0, r.code)
		require.Regexp(t, fmt.Sprintf(`\s%d\s`, tok), r.stdout, "%s: status prints the decimal token", sub)
	}
	if os.Geteuid() == 0 {
		// As root, each CMD's PIDs start at a random place in its
		// namespace: $$ differs between CMDs run side by side.
		pids := map[string]bool{}
		for sub := range paths {
			b, err := os.ReadFile(filepath.Join(dir, sub+".pid"))
			require.NoError(t, err)
			pids[strings.TrimSpace(string(b))] = true
		}
		require.Len(t, pids, len(paths), "distinct $$: %v", pids)
	}
}

// TestStatusWording: "1 candidate", not "1 candidates"; no table header
// over an empty table.
func TestStatusWording(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	cmd, _ := start(t, nil, "elect", "-id", "only", path, "--", "sleep", "30")
	waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Holders) == 1 })
	r := shepherd(t, nil, "status", path)
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stdout, "election (fair, curator names), 1 candidate\n")
	require.Contains(t, r.stdout, "curator latch- (LeaderLatch)", "the naming column")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	_ = cmd.Wait()

	sem := uniquePath(t)
	r = shepherd(t, nil, "semaphore", "-n", "2", sem, "--", "true")
	require.Equal(t, 0, r.code, r.stderr)
	r = shepherd(t, nil, "status", sem)
	if r.code == 0 { // the semaphore's node may already be gone (a container)
		require.Contains(t, r.stdout, "0 of 2 leases held, 0 waiting")
		require.NotContains(t, r.stdout, "ROLE")
	} else {
		require.Equal(t, 7, r.code, r.stderr)
	}
}
