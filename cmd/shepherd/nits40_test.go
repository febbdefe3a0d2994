package main_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/shepherdzk/shepherd/admin"

	"github.com/stretchr/testify/require"
)

// TestUnresolvableHostFailsFast: a host name that does not resolve counts
// as a refused connection: shepherd gives up as for a refused port, not at
// -connect-timeout (it waited the whole timeout and said "context deadline
// exceeded"). The name is not a valid domain name, so that no DNS server
// is asked.
func TestUnresolvableHostFailsFast(t *testing.T) {
	t.Parallel()
	r := shepherd(t, nil, "status", "-connect-timeout", "50s", "-zk", "no-such-host..invalid:2181", "/p")
	require.Equal(t, 3, r.code, r.stderr)
	require.Contains(t, r.stderr, "connection refused or host not found")
	require.Contains(t, r.stderr, "no such host")
}

// TestConnectStringTypos: an empty server between commas, and a chroot
// before the last server, are usage errors (both were accepted: the second
// as the chroot "/a,h:2181/b").
func TestConnectStringTypos(t *testing.T) {
	t.Parallel()
	for zk, want := range map[string]string{
		"127.0.0.1:2181,,127.0.0.1:2182":       "server 2 is empty",
		"127.0.0.1:2181/a,127.0.0.1:2182/b":    "a chroot (/path) comes once, after the last server",
		"127.0.0.1:2181,":                      "server 2 is empty",
		"127.0.0.1:2181/a,127.0.0.1:2182,h:1/": "a chroot (/path) comes once",
	} {
		r := shepherd(t, nil, "status", "-zk", zk, "/p")
		require.Equal(t, 2, r.code, "%s: %s", zk, r.stderr)
		require.Contains(t, r.stderr, want, zk)
	}
}

// TestSessionTimeoutLoweredSaid: a -session-timeout above the server's
// maximum is said without -v (it was logged only under -v).
func TestSessionTimeoutLoweredSaid(t *testing.T) {
	t.Parallel()
	r := shepherd(t, nil, "lock", "-session-timeout", "1h", uniquePath(t), "--", "true")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `-session-timeout 1h0m0s: ZooKeeper at \S+ granted \S+ \(its maxSessionTimeout\)`, r.stderr)
	r = shepherd(t, nil, "lock", uniquePath(t), "--", "true")
	require.NotContains(t, r.stderr, "granted")
}

// TestMessageNits: a waiter interrupted by SIGINT says "interrupted by
// SIGINT" (not "interrupted by interrupt"); a semaphore's bad -n says
// "semaphore:" once; status shows no token for a waiter (it has none yet)
// and a lock's naming without "(InterProcessMutex, LeaderSelector)".
func TestMessageNits(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	start(t, nil, "lock", "-id", "first", path, "--", "sleep", "30")
	waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Holders) == 1 })
	w, werr := start(t, nil, "lock", "-id", "second", path, "--", "true")
	waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Waiters) == 1 })

	r := shepherd(t, nil, "status", path)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^holder\s+first\s+0x[0-9a-f]+\s+\S+\s+\d+\s+\S+\s+curator lock-$`, r.stdout)
	require.Regexp(t, `(?m)^waiter 1\s+second\s+0x[0-9a-f]+\s+\S+\s+-\s+\S+\s+curator lock-$`, r.stdout)
	require.NotContains(t, r.stdout, "LeaderSelector")

	require.NoError(t, w.Process.Signal(syscall.SIGINT))
	require.Equal(t, 130, exitOf(t, w))
	require.Contains(t, werr.String(), "interrupted by SIGINT while waiting")

	r = shepherd(t, nil, "semaphore", "-n", "99999999", uniquePath(t), "--", "true")
	require.Equal(t, 2, r.code, r.stderr)
	require.Equal(t, 1, strings.Count(r.stderr, "semaphore:"), r.stderr)
}

// TestVersionWithoutVCS: a binary built without VCS stamping says its
// revision is unknown (it printed no revision line, silently).
func TestVersionWithoutVCS(t *testing.T) {
	t.Parallel()
	b := filepath.Join(t.TempDir(), "shepherd")
	out, err := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-buildvcs=false", "-o", b, ".")...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(b, "version").Output()
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`(?m)^revision unknown \(built without VCS stamping`), string(out))
}
