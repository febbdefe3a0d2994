package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/admin"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/zktest"
)

var (
	zk  *zktest.Cluster
	bin string // the built shepherd binary
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "shepherd-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "shepherd")
	if raceEnv != "" {
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" "+raceEnv))
	}
	if out, err := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-o", bin, ".")...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := testutil.Main(m, &zk, 1)
	os.RemoveAll(dir)
	os.Exit(code)
}

func uniquePath(t *testing.T) string { return testutil.UniquePath(t, "cli-test") }

type result struct {
	code           int
	stdout, stderr string
}

// shepherd runs the binary to its end (bounded by 60s).
func shepherd(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append(os.Environ(), "SHEPHERD_ZK="+zk.ConnectString()), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run shepherd: %v", err)
	}
	return result{code, out.String(), errb.String()}
}

// start runs the binary in the background.
func start(t *testing.T, env []string, args ...string) (*exec.Cmd, *syncWriter) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "SHEPHERD_ZK="+zk.ConnectString()), env...)
	errb := &syncWriter{w: new(bytes.Buffer)}
	cmd.Stderr = errb
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, errb
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func TestBadUsage(t *testing.T) {
	t.Parallel()
	cases := [][]string{
		{},
		{"bogus"},
		{"lock"},
		{"lock", "/p"},
		{"lock", "relative", "--", "true"},
		{"lock", "/p/", "--", "true"},
		{"lock", "/zookeeper/x", "--", "true"},
		{"lock", "-nope", "/p", "--", "true"},
		{"lock", "-timeout", "-1s", "/p", "--", "true"},
		{"lock", "-timeout", "soon", "/p", "--", "true"},
		{"semaphore", "/p", "--", "true"},
		{"semaphore", "-n", "0", "/p", "--", "true"},
		{"semaphore", "-n", "-2", "/p", "--", "true"},
		{"elect", "/p"},
		{"elect", "-id", "a/b", "/p", "--", "true"},
		{"elect", "-id", "", "/p", "--", "true"},
		{"status"},
		{"status", "/p", "extra"},
		{"status", "nope"},
		{"-zk", "", "status", "/p"},
		{"-zk", "127.0.0.1:99999", "status", "/p"},
		{"-session-timeout", "0s", "status", "/p"},
		{"lock", "/p", "sleep", "1"},
		{"lock", "/p", "-timeout"},
		{"lock", "-timeout=", "/p", "--", "true"},
		{"lock", "/p", "-nonfair=maybe", "--", "true"},
		{"lock", "-on-disconnect", "maybe", "/p", "--", "true"},
		{"elect", "-on-disconnect=", "/p", "--", "true"},
		{"lock", "/p", "/q", "--", "true"},
		{"elect", "-once", "-http", "127.0.0.1:0", "/p"},
		{"-zk", "127.0.0.1:2181/zookeeper", "status", "/p"},
		{"-zk", "127.0.0.1:2181/a/", "status", "/p"},
		{"-namespace", "app", "status", "/p"},
		{"status", "/p", "--", "x"},
		{"dev", "-port", "70000"},
		{"dev", "extra"},
		{"__init"},
		{"schedule", "/p", "--", "true"},
		{"schedule", "-every", "1s", "/p"},
		{"schedule", "-every", "0s", "/p", "--", "true"},
		{"schedule", "-every", "1s", "-misfire", "maybe", "/p", "--", "true"},
		{"schedule", "-every", "1s", "-catch-up", "all:0", "/p", "--", "true"},
		{"schedule", "-every", "1s", "-catch-up", "some", "/p", "--", "true"},
		{"schedule", "-every", "1s", "-min-spacing", "-1s", "/p", "--", "true"},
		{"schedule", "-every", "1s", "-timeout", "1s", "/p", "--", "true"},
	}
	for _, args := range cases {
		r := shepherd(t, nil, args...)
		require.Equal(t, 2, r.code, "shepherd %q: stderr %s", args, r.stderr)
		require.Contains(t, r.stderr, "shepherd", "shepherd %q explains", args)
	}
	r := shepherd(t, nil, "help")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stdout, "shepherd lock")
	r = shepherd(t, nil, "--help")
	require.Equal(t, 0, r.code)
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	r := shepherd(t, []string{"SHEPHERD_ZK=127.0.0.1:1"}, "-connect-timeout", "1s", "lock", "/p", "--", "true")
	require.Equal(t, 3, r.code, r.stderr)
	require.Contains(t, r.stderr, "cannot reach ZooKeeper")
}

// TestLockSerialises: two commands under one lock never overlap, and each
// sees a fencing token; the second gets a larger one.
func TestLockSerialises(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	dir := t.TempDir()
	script := fmt.Sprintf(`mkdir %[1]s/inside || exit 99; echo $SHEPHERD_TOKEN >> %[1]s/tokens; test -n "$SHEPHERD_NODE" || exit 98; sleep 0.3; rmdir %[1]s/inside`, dir)
	var wg sync.WaitGroup
	results := make([]result, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = shepherd(t, nil, "lock", path, "--", "sh", "-c", script)
		}()
	}
	wg.Wait()
	for _, r := range results {
		require.Equal(t, 0, r.code, r.stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "tokens"))
	require.NoError(t, err)
	toks := strings.Fields(string(data))
	require.Len(t, toks, 3)
	prev := int64(0)
	for _, s := range toks {
		v, err := strconv.ParseInt(s, 10, 64)
		require.NoError(t, err)
		require.Greater(t, v, prev, "tokens grow")
		prev = v
	}
	// CMD's exit status is shepherd's.
	r := shepherd(t, nil, "lock", path, "--", "sh", "-c", "exit 7")
	require.Equal(t, 7, r.code)
	r = shepherd(t, nil, "lock", path, "--", "/nonexistent/cmd")
	require.Equal(t, 127, r.code)
}

// TestLockTimeout: -timeout gives exit status 4 while the lock is held.
func TestLockTimeout(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	holder, _ := start(t, nil, "lock", "-id", "holder", path, "--", "sleep", "30")
	waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Holders) == 1 })
	r := shepherd(t, nil, "-timeout", "300ms", "lock", path, "--", "true")
	require.Equal(t, 4, r.code, r.stderr)
	require.Contains(t, r.stderr, "not acquired within")
	_ = holder.Process.Signal(syscall.SIGTERM)
	require.Error(t, holder.Wait(), "sleep killed by the forwarded SIGTERM")
	waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Holders) == 0 && len(s.Waiters) == 0 })
}

// TestSemaphoreAdmitsN: 5 commands, 2 leases: at most 2 run at once, and 2 do.
func TestSemaphoreAdmitsN(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	dir := t.TempDir()
	script := fmt.Sprintf(`d=$(mktemp -d %[1]s/slot.XXXXXX); ls -d %[1]s/slot.* | wc -l >> %[1]s/counts; sleep 0.4; rmdir $d`, dir)
	var wg sync.WaitGroup
	results := make([]result, 5)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = shepherd(t, nil, "semaphore", "-n", "2", path, "--", "sh", "-c", script)
		}()
	}
	wg.Wait()
	for _, r := range results {
		require.Equal(t, 0, r.code, r.stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "counts"))
	require.NoError(t, err)
	peak := 0
	for _, s := range strings.Fields(string(data)) {
		v, _ := strconv.Atoi(s)
		peak = max(peak, v)
	}
	require.Equal(t, 2, peak, "counts seen: %s", data)
	// While the semaphore is in use its path records its limit: another
	// limit is refused. (Idle, the path is a container the server removes,
	// limit and all: a check made then may find nothing to refuse.)
	start(t, nil, "semaphore", "-n", "2", path, "--", "sleep", "30")
	waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Holders) == 1 })
	r := shepherd(t, nil, "semaphore", "-n", "3", path, "--", "true")
	require.Equal(t, 6, r.code, "a mismatched limit is a refusal: %s", r.stderr)
	require.Contains(t, r.stderr, "maxLeases 2")
}

// TestTopLevelPath: a semaphore directly under the root (no parent to
// create) admits its command like any other.
func TestTopLevelPath(t *testing.T) {
	t.Parallel()
	r := shepherd(t, nil, "semaphore", "-n", "2", testutil.TopPath(t, "sem2"), "--", "true")
	require.Equal(t, 0, r.code, r.stderr)
}

// TestElectHandsOver: the leader's shepherd is killed with SIGKILL; its CMD
// dies with it, and the other candidate leads within the session timeout.
func TestElectHandsOver(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	dir := t.TempDir()
	script := fmt.Sprintf(`echo $SHEPHERD_ID $SHEPHERD_TERM > %s/leader.$SHEPHERD_ID; exec sleep 60`, dir)
	a, _ := start(t, nil, "-session-timeout", "2s", "elect", "-id", "a", path, "--", "sh", "-c", script)
	waitFile(t, filepath.Join(dir, "leader.a"))
	start(t, nil, "-session-timeout", "2s", "elect", "-id", "b", path, "--", "sh", "-c", script)
	waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Holders)+len(s.Waiters) == 2 })
	r := shepherd(t, nil, "status", path)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "election")
	require.Contains(t, r.stdout, "leader")
	killed := time.Now()
	require.NoError(t, a.Process.Signal(syscall.SIGKILL))
	waitFile(t, filepath.Join(dir, "leader.b"))
	t.Logf("b leads %v after a was killed", time.Since(killed).Round(time.Millisecond))
	// a's CMD died with it: nothing else holds "leader.a" open; check with
	// pgrep-free means: the status shows one candidate, b, leading.
	waitStatus(t, path, func(s admin.Snapshot) bool {
		return len(s.Holders) == 1 && s.Holders[0].Data == "b" && len(s.Waiters) == 0
	})
}

// TestElectOnce: -once exits with CMD's status after one term.
func TestElectOnce(t *testing.T) {
	t.Parallel()
	r := shepherd(t, nil, "elect", "-once", "-id", "x", uniquePath(t), "--", "sh", "-c", `test -n "$SHEPHERD_TERM" && exit 3`)
	require.Equal(t, 3, r.code, r.stderr)
}

// TestLockLostStopsCommand: the lock's connection is stalled; shepherd stops
// CMD (SIGTERM) and exits 5.
func TestLockLostStopsCommand(t *testing.T) {
	t.Parallel()
	p, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	defer p.Close()
	dir := t.TempDir()
	path := uniquePath(t)
	script := fmt.Sprintf(`trap 'echo term > %s/got; exit 0' TERM; touch %s/started; while :; do sleep 0.05; done`, dir, dir)
	cmd, stderr := start(t, []string{"SHEPHERD_ZK=" + strings.Join(p.Addrs(), ",")},
		"-session-timeout", "2s", "lock", path, "--", "sh", "-c", script)
	waitFile(t, filepath.Join(dir, "started"))
	p.Stall()
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 5, ee.ExitCode(), stderr.String())
	waitFile(t, filepath.Join(dir, "got"))
	require.Contains(t, stderr.String(), "lost")
}

// TestStatusJSON: the holder's id, session and token, the waiters in order.
func TestStatusJSON(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	start(t, nil, "lock", "-id", "first", path, "--", "sleep", "30")
	waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Holders) == 1 })
	start(t, nil, "lock", "-id", "second", path, "--", "sleep", "30")
	s := waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Waiters) == 1 })
	require.Equal(t, "mutex", s.Kind)
	require.True(t, s.Fair)
	require.Equal(t, "first", s.Holders[0].Data)
	require.Equal(t, "second", s.Waiters[0].Data)
	require.NotZero(t, s.Holders[0].SessionID)
	require.Greater(t, s.Waiters[0].Token, s.Holders[0].Token)
	r := shepherd(t, nil, "status", path)
	require.Equal(t, 0, r.code)
	require.Regexp(t, `holder\s+first\s+0x[0-9a-f]+`, r.stdout)
	require.Regexp(t, `waiter 1\s+second`, r.stdout)
	r = shepherd(t, nil, "status", uniquePath(t))
	require.Equal(t, 7, r.code, "nothing there: %s", r.stderr)
	require.Contains(t, r.stdout, "nothing here")
	require.Contains(t, r.stderr, "nothing at")
}

// TestStatusWatch: --watch prints a new snapshot on each change.
func TestStatusWatch(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	cmd := exec.Command(bin, "status", "-watch", "-json", path)
	cmd.Env = append(os.Environ(), "SHEPHERD_ZK="+zk.ConnectString())
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	dec := json.NewDecoder(out)
	next := func() admin.Snapshot {
		var s admin.Snapshot
		require.NoError(t, dec.Decode(&s))
		return s
	}
	require.Equal(t, "empty", next().Kind)
	holder, _ := start(t, nil, "lock", "-id", "w1", path, "--", "sleep", "30")
	var s admin.Snapshot
	for i := 0; i < 10; i++ {
		if s = next(); len(s.Holders) == 1 {
			break
		}
	}
	require.Equal(t, "w1", s.Holders[0].Data)
	_ = holder.Process.Signal(syscall.SIGTERM)
	for i := 0; i < 10; i++ {
		if s = next(); len(s.Holders) == 0 {
			break
		}
	}
	require.Empty(t, s.Holders)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, cmd.Wait(), "Ctrl-C ends the watch cleanly")
}

func waitFile(t *testing.T, p string) {
	t.Helper()
	require.Eventually(t, func() bool { _, err := os.Stat(p); return err == nil }, 20*time.Second, 10*time.Millisecond, "waiting for %s", p)
}

func waitStatus(t *testing.T, path string, cond func(admin.Snapshot) bool) admin.Snapshot {
	t.Helper()
	var s admin.Snapshot
	require.Eventually(t, func() bool {
		r := shepherd(t, nil, "status", "-json", path)
		if r.code != 0 && r.code != 7 { // 7: nothing there
			return false
		}
		s = admin.Snapshot{}
		return json.Unmarshal([]byte(r.stdout), &s) == nil && cond(s)
	}, 60*time.Second, 50*time.Millisecond, "status of %s never as awaited; last seen: %+v", path, &s)
	return s
}

// TestSemaphoreSlot: every CMD of a semaphore gets SHEPHERD_SLOT, a number
// below N that no other CMD holding a lease at the same moment has; a lock's
// CMD gets none.
func TestSemaphoreSlot(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	dir := t.TempDir()
	// mkdir fails if another CMD holds the same slot now.
	script := fmt.Sprintf(`mkdir %[1]s/slot-$SHEPHERD_SLOT || exit 9; echo $SHEPHERD_SLOT >> %[1]s/seen; sleep 0.3; rmdir %[1]s/slot-$SHEPHERD_SLOT`, dir)
	var wg sync.WaitGroup
	results := make([]result, 5)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = shepherd(t, nil, "semaphore", "-n", "2", path, "--", "sh", "-c", script)
		}()
	}
	wg.Wait()
	for _, r := range results {
		require.Equal(t, 0, r.code, "a slot held twice at once, or none: %s", r.stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "seen"))
	require.NoError(t, err)
	seen := strings.Fields(string(data))
	require.Len(t, seen, 5)
	for _, s := range seen {
		require.Contains(t, []string{"0", "1"}, s)
	}
	r := shepherd(t, nil, "lock", uniquePath(t), "--", "sh", "-c", `test -z "${SHEPHERD_SLOT+x}"`)
	require.Equal(t, 0, r.code, "a lock's CMD got SHEPHERD_SLOT: %s", r.stderr)
}
