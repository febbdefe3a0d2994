package main_test

import (
	"bytes"
	"context"
	"errors"
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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/zktest"
)

// grandchildScript is CMD for the process-tree tests: it ignores SIGTERM
// and double-forks a grandchild that ignores SIGTERM too and records its own
// PID, as the host sees it (/proc is the host's even inside shepherd's PID
// namespace; `read` is a builtin, so /proc/self is the subshell, which then
// becomes `sleep` by exec). With exit set, CMD exits 0 and leaves the
// grandchild running.
func grandchildScript(dir string, exit bool) string {
	end := "exec sleep 60"
	if exit {
		// CMD exits once the test says so (the file "exit"), not at once:
		// the test's waiter must be in line behind shepherd first (once,
		// on a loaded machine, CMD's exit and shepherd's release came
		// before the waiter's node, and the line never showed the two).
		end = fmt.Sprintf("while [ ! -e %s/exit ]; do sleep 0.01; done; exit 0", dir)
	}
	return fmt.Sprintf(`trap '' TERM
( ( trap '' TERM; read -r pid _ < /proc/self/stat; echo $pid > %[1]s/gc.tmp; mv %[1]s/gc.tmp %[1]s/gc.pid; exec sleep 60 ) & )
while [ ! -s %[1]s/gc.pid ]; do sleep 0.01; done
%[2]s`, dir, end)
}

// proc is a process as /proc shows it.
type proc struct {
	pid   int
	state string
	ppid  int
	start string // start time in clock ticks since boot: tells a reused PID
}

func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, _ := strconv.Atoi(f[1])
	return proc{pid: pid, state: f[0], ppid: ppid, start: f[19]}, true
}

func statusField(t *testing.T, pid int, name string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in /proc/%d/status", name, pid)
	return ""
}

// watchDeath polls the process until it no longer exists (reaped, not a
// mere zombie: the init reaps at once), on the test's clock. It returns a
// function that waits for the time of death.
func watchDeath(p proc, deadline time.Duration) func() (time.Time, bool) {
	var at time.Time
	done := make(chan struct{})
	go func() {
		defer close(done)
		if testutil.Poll(deadline, time.Millisecond, func() bool {
			q, ok := readProc(p.pid)
			return !ok || q.start != p.start
		}) {
			at = time.Now()
		}
	}()
	return func() (time.Time, bool) { <-done; return at, !at.IsZero() }
}

// TestProcessTree: a grandchild that ignores SIGTERM and double-forked out
// of CMD is gone before anyone else is granted the lock, (a) after a hold
// loss, (b) after SIGTERM to shepherd, (c) after SIGKILL to shepherd, and
// (d) after CMD exited leaving it running; in the PID namespace (as root,
// and as an unprivileged user: a user namespace too) and in the subreaper
// fallback. The test's own mutex waiter, once granted, looks at the
// grandchild at once: it must be gone (reaped) by then; a poller confirms
// the death and logs the margin on the test's clock.
func TestProcessTree(t *testing.T) {
	t.Parallel()
	modes := []string{"pidns", "subreaper"}
	if os.Geteuid() == 0 {
		// As root, also run shepherd as an unprivileged user (as others,
		// pidns is that case already).
		modes = append(modes, "userns")
	}
	for _, mode := range modes {
		for _, fault := range []string{"lost", "sigterm", "sigkill", "exit"} {
			if mode == "userns" && (fault == "lost" || fault == "exit") {
				continue // the same mechanism as pidns; the user namespace is what is new
			}
			t.Run(mode+"/"+fault, func(t *testing.T) {
				t.Parallel()
				testProcessTree(t, mode, fault)
			})
		}
	}
}

func testProcessTree(t *testing.T, mode, fault string) {
	began := time.Now()
	defer func() { t.Logf("wall time %v", time.Since(began).Round(time.Millisecond)) }()
	dir := t.TempDir()
	path := uniquePath(t)
	servers := zk.Servers()
	var proxy *zktest.Proxy
	if fault == "lost" {
		var err error
		proxy, err = zktest.NewProxy(zk.Servers()...)
		require.NoError(t, err)
		t.Cleanup(func() { proxy.Close() })
		servers = proxy.Addrs()
	}
	// -grace 10s on a loss is cut to a sixth of the session timeout (0.5 s):
	// shepherd hears of the loss at 2 s, the server expires the session at 3 s.
	// After SIGKILL the waiter is granted when the server expires the
	// session. The other faults do not involve the session: a long one, so
	// that a loaded machine does not end the hold before the fault (it did
	// once on 3 s, sigterm beside six busy loops: the waiter was granted a
	// free lock).
	timeout, grace := "20s", []string{"-grace", "300ms"}
	switch fault {
	case "lost":
		timeout, grace = "3s", nil
	case "sigkill":
		timeout = "8s"
	}
	args := append([]string{"-zk", strings.Join(servers, ","), "-session-timeout", timeout, "lock", "-id", "shepherd", path}, grace...)
	if mode == "subreaper" {
		args = append(args, "-pidns=false")
	}
	args = append(args, "--", "sh", "-c", grandchildScript(dir, fault == "exit"))
	cmd := exec.Command(bin, args...)
	cmd.Env = os.Environ()
	errb := &syncWriter{w: new(bytes.Buffer)}
	cmd.Stderr = errb
	cmd.Dir = dir
	if mode == "userns" {
		// An unprivileged user: shepherd needs a user namespace for its PID
		// namespace. Its directories must be reachable.
		for _, d := range []string{dir, filepath.Dir(dir), filepath.Dir(bin)} {
			require.NoError(t, os.Chmod(d, 0o777))
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("shepherd's stderr:\n%s", errb.String())
		}
	})

	// The grandchild runs: it is the sleeping, TERM-ignoring process whose
	// parent is the init (its own parent, a subshell, is gone).
	pidFile := filepath.Join(dir, "gc.pid")
	require.Eventually(t, func() bool { _, err := os.Stat(pidFile); return err == nil },
		20*time.Second, 5*time.Millisecond, "grandchild started; shepherd: %s", errb.String())
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	gcPID, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	// It has exec'd sleep and been orphaned to the init: the subshell that
	// forked it exits on its own time (a loaded machine may run the
	// grandchild's exec first), so both are waited for, not assumed.
	var gc proc
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var ok bool
		gc, ok = readProc(gcPID)
		if !assert.True(c, ok, "grandchild %d exists", gcPID) {
			return
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", gcPID))
		parentCmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", gc.ppid))
		assert.Equal(c, "sleep\x0060\x00", string(cmdline), "the grandchild exec'd sleep")
		assert.True(c, strings.HasPrefix(string(parentCmd), "shepherd\x00__init\x00"),
			"the grandchild was orphaned to the init, its parent is %q", parentCmd)
	}, 10*time.Second, time.Millisecond)
	sigIgn, err := strconv.ParseUint(statusField(t, gcPID, "SigIgn"), 16, 64)
	require.NoError(t, err)
	require.NotZero(t, sigIgn&(1<<(syscall.SIGTERM-1)), "the grandchild ignores SIGTERM")
	nspids := strings.Fields(statusField(t, gcPID, "NSpid"))
	switch {
	case mode == "subreaper":
		require.Len(t, nspids, 1, "no PID namespace")
		// shepherd says so as it starts CMD: the line may follow the
		// grandchild's first steps.
		require.Eventually(t, func() bool {
			return strings.Contains(errb.String(), "-pidns=false: CMD's processes are kept by a subreaper")
		}, 10*time.Second, 5*time.Millisecond, "the fallback says which guarantee applies; shepherd: %s", errb)
	case strings.Contains(errb.String(), "no PID namespace for CMD"):
		// This kernel refuses the namespace (e.g. Ubuntu's AppArmor rule on
		// unprivileged user namespaces): the announced fallback is tested.
		t.Logf("the kernel refused a PID namespace: %s", errb)
		require.Len(t, nspids, 1, "no PID namespace")
	default:
		require.Len(t, nspids, 2, "in a PID namespace below the host's")
		require.NotContains(t, errb.String(), "subreaper")
	}
	if mode == "userns" {
		require.Equal(t, "65534", strings.Fields(statusField(t, gcPID, "Uid"))[0])
	}
	death := watchDeath(gc, 60*time.Second)

	// The test's own waiter, on the test's clock.
	sess := testutil.Open(t, zk.Servers())
	m, err := mutex.New(sess, path)
	require.NoError(t, err)
	// At the grant, on the waiter's goroutine, the test looks at the
	// grandchild at once: it must already be gone (a poller alone could
	// see the death late, by its period and its scheduling, past a grant
	// that came less than a millisecond after the reaping).
	type grantSeen struct {
		at           time.Time
		aliveAtGrant bool
	}
	granted := make(chan grantSeen, 1)
	lctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if m.Lock(lctx) == nil {
			at := time.Now()
			q, ok := readProc(gc.pid)
			granted <- grantSeen{at, ok && q.start == gc.start}
		}
	}()
	defer wg.Wait()
	defer cancel()
	waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Holders) == 1 && len(s.Waiters) == 1 })

	switch fault {
	case "lost":
		proxy.Stall() // a partition: shepherd hears nothing, ZooKeeper expires its session
	case "sigterm":
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	case "sigkill":
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	case "exit": // CMD exits by itself (when told to: see grandchildScript)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "exit"), nil, 0o644))
	}

	var grant grantSeen
	select {
	case grant = <-granted:
	case <-time.After(60 * time.Second):
		t.Fatalf("the test's waiter was never granted the lock; shepherd: %s", errb.String())
	}
	require.False(t, grant.aliveAtGrant, "the grandchild %d was still there when the lock was granted; shepherd: %s", gcPID, errb.String())
	died, ok := death()
	require.True(t, ok, "the grandchild %d still runs; shepherd: %s", gcPID, errb.String())
	t.Logf("grandchild gone %v before the next grant (as the poller saw it)", grant.at.Sub(died).Round(time.Millisecond))
	_ = m.Unlock(context.Background())

	err = <-exited
	exited <- err // for the cleanup
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	switch fault {
	case "lost":
		require.Equal(t, 5, code, errb.String())
		require.Contains(t, errb.String(), "lost")
	case "sigterm":
		require.Equal(t, 128+int(syscall.SIGKILL), code, "CMD ignored SIGTERM, SIGKILL ended it: %s", errb.String())
	case "sigkill":
		require.Equal(t, -1, code, "killed")
	case "exit":
		require.Equal(t, 0, code, errb.String())
		require.Contains(t, errb.String(), "left running")
	}
}

// TestStopThenLoss: a holder told to stop (SIGTERM) keeps its lock or
// leadership while CMD's processes get their -grace (30 s here); when its
// connection is lost meanwhile, the grace is cut as for a loss, and the
// TERM-ignoring grandchild is gone before another is granted the hold.
func TestStopThenLoss(t *testing.T) {
	t.Parallel()
	for _, sub := range []string{"lock", "elect"} {
		t.Run(sub, func(t *testing.T) {
			t.Parallel()
			testStopThenLoss(t, sub)
		})
	}
}

func testStopThenLoss(t *testing.T, sub string) {
	began := time.Now()
	defer func() { t.Logf("wall time %v", time.Since(began).Round(time.Millisecond)) }()
	dir := t.TempDir()
	path := uniquePath(t)
	proxy, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { proxy.Close() })
	cmd, errb := start(t, nil, "-zk", strings.Join(proxy.Addrs(), ","), "-session-timeout", "3s",
		sub, "-id", "a", "-grace", "30s", path, "--", "sh", "-c", grandchildScript(dir, false))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pidFile := filepath.Join(dir, "gc.pid")
	require.Eventually(t, func() bool { _, err := os.Stat(pidFile); return err == nil },
		20*time.Second, 5*time.Millisecond, "grandchild started; shepherd: %s", errb)
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	gcPID, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	gc, ok := readProc(gcPID)
	require.True(t, ok)
	death := watchDeath(gc, 60*time.Second)

	sess := testutil.Open(t, zk.Servers())
	e, err := election.New(sess, path, "b")
	require.NoError(t, err)
	m, err := mutex.New(sess, path)
	require.NoError(t, err)
	elected := make(chan time.Time, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if sub == "elect" {
			if _, err := e.Campaign(ctx); err == nil {
				elected <- time.Now()
			}
		} else if m.Lock(ctx) == nil {
			elected <- time.Now()
		}
	}()
	defer wg.Wait()
	defer cancel()
	waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Holders) == 1 && len(s.Waiters) == 1 })

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool { return strings.Contains(errb.String(), "stopping sh (SIGKILL after 30s)") },
		10*time.Second, time.Millisecond, "shepherd stops CMD: %s", errb)
	proxy.Stall()
	var at time.Time
	select {
	case at = <-elected:
	case <-time.After(60 * time.Second):
		t.Fatalf("b never granted the %s; shepherd: %s", sub, errb)
	}
	died, ok := death()
	require.True(t, ok, "the grandchild still runs; shepherd: %s", errb)
	t.Logf("grandchild gone %v before the next grant", at.Sub(died).Round(time.Millisecond))
	require.True(t, died.Before(at), "grandchild gone at %v, the %s granted at %v", died, sub, at)
	if sub == "elect" {
		_ = e.Resign(context.Background())
	} else {
		_ = m.Unlock(context.Background())
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("shepherd did not exit; stderr: %s", errb)
	}
}
