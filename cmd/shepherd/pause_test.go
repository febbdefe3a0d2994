package main_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/zktest"
)

// writerScript is CMD for the pause tests: it starts a grandchild (sleep,
// its PID as the host sees it in gc.pid: /proc is the host's even in
// shepherd's PID namespace), then appends a timestamp (ns since the epoch)
// to log every 10 ms, each line a fork of date, each wait one of sleep,
// until the file stop appears; then it exits 7. SIGTERM makes it write one
// more line (a process let run after its hold was lost would), negated to
// tell it from the loop's.
func writerScript(dir string) string {
	return fmt.Sprintf(`( read -r pid _ < /proc/self/stat; echo $pid > %[1]s/gc.tmp; mv %[1]s/gc.tmp %[1]s/gc.pid; exec sleep 1000 ) &
gc=$!
trap 'echo -$(date +%%s%%N) >> %[1]s/log; exit 1' TERM
while [ ! -e %[1]s/stop ]; do date +%%s%%N >> %[1]s/log; sleep 0.01; done
kill $gc
exit 7`, dir)
}

// grandchild waits for writerScript's grandchild and returns it.
func grandchild(t *testing.T, dir string) proc {
	t.Helper()
	pidFile := filepath.Join(dir, "gc.pid")
	waitFile(t, pidFile)
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	var gc proc
	require.Eventually(t, func() bool {
		var ok bool
		gc, ok = readProc(pid)
		require.True(t, ok, "grandchild %d exists", pid)
		cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return string(cl) == "sleep\x001000\x00" // after its exec
	}, 10*time.Second, time.Millisecond)
	return gc
}

// logLines reads the timestamps written so far (a line being written may
// be cut: it is left out).
func logLines(t *testing.T, dir string) []int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "log"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []int64
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if !strings.HasSuffix(l, "\n") {
			break
		}
		v, err := strconv.ParseInt(strings.TrimSpace(l), 10, 64)
		require.NoError(t, err, "line %q", l)
		out = append(out, v)
	}
	return out
}

// treeOf lists the live processes below pid (zombies aside), from /proc.
func treeOf(pid int) []proc {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]proc{}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(n); ok && p.state != "Z" {
			children[p.ppid] = append(children[p.ppid], p)
		}
	}
	var out []proc
	queue := []int{pid}
	for len(queue) > 0 && len(out) < 10000 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

// fileString prints a file's content (for failure messages).
type fileString string

func (f fileString) String() string {
	b, _ := os.ReadFile(string(f))
	return string(b)
}

// stopped: stopped, or stopping (in uninterruptible sleep with SIGSTOP
// pending: dash waits in vfork for a child the freeze may stop before its
// exec), as the init judges it (init.go: frozen).
func stopped(p proc) bool {
	if p.state == "T" || p.state == "t" {
		return true
	}
	if p.state != "D" {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && (k == "ShdPnd" || k == "SigPnd") {
			if m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && m&(1<<(uint(syscall.SIGSTOP)-1)) != 0 {
				return true
			}
		}
	}
	return false
}

// memDir is a directory for the writer's file on tmpfs when there is one: a
// write to a disk-backed file can sleep uninterruptibly (dirty-page
// throttling while the machine compiles), and a process in uninterruptible
// sleep cannot be stopped until the write is done, so a freeze would report
// it as still running.
func memDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "shepherd-pause-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestCLIPauseInitFreeze drives the init (`shepherd __init`) over its
// control pipe as shepherd does, in both tree modes (and, as root, in a
// user namespace as an unprivileged user, as shepherd does when not root):
// "freeze" stops every process of CMD's (a grandchild too) before the init
// answers, and nothing is written while frozen; "thaw" continues them;
// "stop 9 0" while frozen kills them all without letting any run again.
func TestCLIPauseInitFreeze(t *testing.T) {
	t.Parallel()
	modes := []string{"pidns", "subreaper"}
	if os.Geteuid() == 0 {
		// Also as an unprivileged user, in a user namespace as shepherd
		// starts it then.
		modes = append(modes, "userns")
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testInitFreeze(t, mode)
		})
	}
}

func testInitFreeze(t *testing.T, mode string) {
	dir := memDir(t)
	ctlR, ctlW, err := os.Pipe()
	require.NoError(t, err)
	ansR, ansW, err := os.Pipe()
	require.NoError(t, err)
	initMode := mode
	if mode == "userns" {
		initMode = "pidns"
	}
	cmd := exec.Command(bin, "__init", "-mode", initMode, "-grace", "1s", "--", "sh", "-c", writerScript(dir))
	cmd.Args[0] = "shepherd"
	cmd.ExtraFiles = []*os.File{ctlR, ansW}
	// A file, not a pipe: Wait must not wait for a leftover process that
	// holds stderr open.
	errf, err := os.Create(filepath.Join(dir, "init.stderr"))
	require.NoError(t, err)
	defer errf.Close()
	errb := fileString(errf.Name())
	cmd.Stderr = errf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	switch mode {
	case "pidns":
		if os.Geteuid() != 0 {
			t.Skip("a PID namespace for the init needs root here (shepherd adds a user namespace; TestProcessTree covers it)")
		}
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWPID
	case "userns":
		// As shepherd starts the init when not root (see child.go).
		for _, d := range []string{dir, filepath.Dir(dir), filepath.Dir(bin)} {
			require.NoError(t, os.Chmod(d, 0o777))
		}
		const nobody = 65534
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody}
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWPID | syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: nobody, HostID: nobody, Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: nobody, HostID: nobody, Size: 1}}
	}
	require.NoError(t, cmd.Start())
	ctlR.Close()
	ansW.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		// End of file on the control pipe: the init kills every process.
		ctlW.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			for _, p := range treeOf(cmd.Process.Pid) {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
			_ = cmd.Process.Kill()
			<-exited
		}
		exited <- nil
		ansR.Close()
	})
	answers := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(ansR)
		for sc.Scan() {
			answers <- sc.Text()
		}
		close(answers)
	}()
	send := func(line string) {
		_, err := fmt.Fprintln(ctlW, line)
		require.NoError(t, err)
	}
	freeze := func(seq int) {
		send(fmt.Sprintf("freeze %d", seq))
		select {
		case a := <-answers:
			require.Equal(t, fmt.Sprintf("frozen %d 0", seq), a, "every process stopped")
		case <-time.After(20 * time.Second):
			t.Fatalf("no answer to freeze; init: %s", errb)
		}
	}

	gc := grandchild(t, dir)
	if mode == "subreaper" {
		require.Len(t, strings.Fields(statusField(t, gc.pid, "NSpid")), 1, "no PID namespace")
	} else {
		require.Len(t, strings.Fields(statusField(t, gc.pid, "NSpid")), 2, "in a PID namespace")
	}
	if mode == "userns" {
		require.Equal(t, "65534", strings.Fields(statusField(t, gc.pid, "Uid"))[0])
	}
	require.Eventually(t, func() bool { return len(logLines(t, dir)) >= 5 }, 10*time.Second, 5*time.Millisecond)

	for round := 1; round <= 3; round++ {
		freeze(round)
		tree := treeOf(cmd.Process.Pid)
		require.GreaterOrEqual(t, len(tree), 2, "CMD and the grandchild at least")
		for _, p := range tree {
			require.True(t, stopped(p), "round %d: process %d is %s, not stopped", round, p.pid, p.state)
		}
		n := len(logLines(t, dir))
		time.Sleep(300 * time.Millisecond) // the freeze's length: the fault under test
		require.Equal(t, n, len(logLines(t, dir)), "round %d: a line was written while frozen", round)
		for _, p := range treeOf(cmd.Process.Pid) {
			require.True(t, stopped(p), "round %d: process %d is %s after 300ms frozen", round, p.pid, p.state)
		}
		send("thaw")
		require.Eventually(t, func() bool { return len(logLines(t, dir)) >= n+3 }, 10*time.Second, 5*time.Millisecond,
			"round %d: lines again after the thaw", round)
	}

	// A loss while frozen: SIGKILL at once, and nothing runs again.
	freeze(4)
	n := len(logLines(t, dir))
	send("stop 9 0")
	var werr error
	select {
	case werr = <-exited:
		exited <- werr
	case <-time.After(20 * time.Second):
		t.Fatalf("the init did not end after stop 9 0; init: %s", errb)
	}
	var ee *exec.ExitError
	require.ErrorAs(t, werr, &ee)
	require.Equal(t, 128+9, ee.ExitCode(), "CMD killed by SIGKILL; init: %s", errb)
	q, ok := readProc(gc.pid)
	require.False(t, ok && q.start == gc.start, "the grandchild %d is gone", gc.pid)
	require.Equal(t, n, len(logLines(t, dir)), "no line after the freeze")
}

// initOf is the init (`shepherd __init`) below shepherd's process.
func initOf(t *testing.T, shepherdPID int) int {
	t.Helper()
	for _, p := range treeOf(shepherdPID) {
		cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.pid))
		if strings.HasPrefix(string(cl), "shepherd\x00__init\x00") {
			return p.pid
		}
	}
	t.Fatalf("no init below shepherd %d", shepherdPID)
	return 0
}

// pauseRun is shepherd with -on-disconnect=pause (or not) running
// writerScript behind a fault proxy.
type pauseRun struct {
	dir    string
	proxy  *zktest.Proxy
	cmd    *exec.Cmd
	errb   *syncWriter
	exited chan error
	url    string // elect -http's base URL
	path   string // PATH
}

func startPauseRun(t *testing.T, sub string, sessionTimeout string, extra ...string) *pauseRun {
	t.Helper()
	r := &pauseRun{dir: memDir(t), exited: make(chan error, 1)}
	// Two front doors to the one server: a client that finds one refusing
	// tries the other at once.
	s := zk.Servers()[0]
	var err error
	r.proxy, err = zktest.NewProxy(s, s)
	require.NoError(t, err)
	t.Cleanup(func() { r.proxy.Close() })
	args := []string{"-zk", strings.Join(r.proxy.Addrs(), ","), "-session-timeout", sessionTimeout, sub}
	switch sub {
	case "semaphore":
		args = append(args, "-n", "2")
	case "elect":
		args = append(args, "-http", "127.0.0.1:0", "-id", "p")
	case "schedule":
		args = append(args, "-every", "1h", "-id", "p")
	}
	r.path = uniquePath(t)
	args = append(append(args, extra...), r.path, "--", "sh", "-c", writerScript(r.dir))
	// Not start's: its cleanup's Wait would race with this one.
	r.cmd = exec.Command(bin, args...)
	r.errb = &syncWriter{w: new(bytes.Buffer)}
	r.cmd.Stderr = r.errb
	require.NoError(t, r.cmd.Start())
	go func() { r.exited <- r.cmd.Wait() }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		r.exited <- <-r.exited
	})
	if sub == "elect" {
		re := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)`)
		require.Eventually(t, func() bool {
			m := re.FindStringSubmatch(r.errb.String())
			if m != nil {
				r.url = m[1]
			}
			return m != nil
		}, 20*time.Second, 5*time.Millisecond, "serving; stderr: %s", r.errb)
	}
	require.Eventually(t, func() bool { return len(logLines(t, r.dir)) >= 5 }, 20*time.Second, 5*time.Millisecond,
		"CMD writes; shepherd: %s", r.errb)
	return r
}

// waitStderr waits for the nth s in shepherd's stderr and returns when it
// saw it.
func (r *pauseRun) waitStderr(t *testing.T, s string, nth int) time.Time {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Count(r.errb.String(), s) >= nth }, 20*time.Second, time.Millisecond,
		"shepherd says %q (%d times); stderr: %s", s, nth, r.errb)
	return time.Now()
}

// exitCode waits for shepherd's exit status.
func (r *pauseRun) exitCode(t *testing.T) int {
	t.Helper()
	var err error
	select {
	case err = <-r.exited:
		r.exited <- err
	case <-time.After(30 * time.Second):
		t.Fatalf("shepherd did not exit; stderr: %s", r.errb)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, err)
	return 0
}

// disconnect cuts shepherd's connection at once while the server keeps its
// session: the proxy severs it and refuses new ones until reconnect.
func (r *pauseRun) disconnect() (reconnect func()) {
	r.proxy.Refuse(true)
	r.proxy.Sever()
	return func() { r.proxy.Refuse(false) }
}

// TestCLIPauseRidesThrough: with -on-disconnect=pause, a disconnect shorter
// than the session timeout freezes CMD's whole tree (nothing is written
// while the connection is gone) and the reconnect of the same session
// thaws it; shepherd goes on and exits with CMD's status. For lock (PID
// namespace), semaphore (subreaper) and elect (whose /readyz answers 503
// while paused and /healthz 200).
func TestCLIPauseRidesThrough(t *testing.T) {
	t.Parallel()
	for _, sub := range []string{"lock", "semaphore", "elect"} {
		t.Run(sub, func(t *testing.T) {
			t.Parallel()
			var extra []string
			if sub == "semaphore" {
				extra = []string{"-pidns=false"}
			}
			// Session timeout 10s: the session is lost (on shepherd's
			// clock) at the earliest 6.5s after the cut (the last ping may
			// be 3.3s old); the cut lasts 1.5s, and the client may take 1s
			// more to try again. At 6s (lost 3.9s after the cut at the
			// earliest) a loaded make test lost both lock's and elect's
			// sessions in the second round: the reconnect and its sync took
			// longer than the 1.4s left.
			r := startPauseRun(t, sub, "10s", append(extra, "-on-disconnect=pause")...)
			gc := grandchild(t, r.dir)
			if sub == "elect" {
				waitProbe(t, r.url+"/readyz", 200, func(p probeBody) bool { return p.Leading })
			}
			// Two rounds: a hold pauses again after a resume.
			for round := 1; round <= 2; round++ {
				cut := time.Now()
				reconnect := r.disconnect()
				frozen := "shepherd: connection to ZooKeeper lost: sh frozen (the "
				pauseSeen := r.waitStderr(t, frozen, round)
				n := len(logLines(t, r.dir))
				for _, p := range treeOf(initOf(t, r.cmd.Process.Pid)) {
					require.True(t, stopped(p), "round %d: process %d of CMD's is %s, not stopped", round, p.pid, p.state)
				}
				if sub == "elect" {
					pb := waitProbe(t, r.url+"/readyz", 503, func(p probeBody) bool { return p.Leading })
					require.True(t, pb.Paused, "the body says paused")
					waitProbe(t, r.url+"/healthz", 200, func(p probeBody) bool { return p.Leading })
				}
				time.Sleep(1500*time.Millisecond - time.Since(cut)) // the disconnect's length: the fault
				require.Equal(t, n, len(logLines(t, r.dir)), "round %d: no line written while frozen; shepherd: %s", round, r.errb)
				healed := time.Now()
				reconnect()
				require.Eventually(t, func() bool { return len(logLines(t, r.dir)) >= n+5 }, 20*time.Second, 5*time.Millisecond,
					"round %d: lines again after the heal; shepherd: %s", round, r.errb)
				resumeSeen := r.waitStderr(t, "resumed after", round)
				require.Regexp(t, `shepherd: the (lock|lease|leadership) (on|at) /\S+ resumed after \S+: sh thawed`, r.errb.String())
				if sub == "elect" {
					waitProbe(t, r.url+"/readyz", 200, func(p probeBody) bool { return p.Leading && !p.Paused })
				}
				// On the timestamps: nothing from the pause line to the heal
				// (the hold cannot resume before it).
				for _, ts := range logLines(t, r.dir) {
					at := time.Unix(0, ts)
					require.False(t, at.After(pauseSeen) && at.Before(healed),
						"round %d: a line at %v, between the pause line (%v) and the heal (%v)", round, at, pauseSeen, healed)
				}
				t.Logf("round %d: frozen %v after the cut; resumed (as the test saw it) %v after the heal", round,
					pauseSeen.Sub(cut).Round(time.Millisecond), resumeSeen.Sub(healed).Round(time.Millisecond))
			}
			q, ok := readProc(gc.pid)
			require.True(t, ok && q.start == gc.start && !stopped(q), "the grandchild runs again")
			require.NoError(t, os.WriteFile(filepath.Join(r.dir, "stop"), nil, 0o644))
			require.Equal(t, 7, r.exitCode(t), "CMD's status; shepherd: %s", r.errb)
			require.NotRegexp(t, `(lock|lease|leadership) (on|at) \S+ lost`, r.errb.String())
		})
	}
}

// TestCLIPauseSchedule: schedule -on-disconnect=pause rides the tick's CMD
// through a disconnect shorter than the session timeout as elect does
// (frozen, nothing written, thawed at the reconnect); the tick then ends
// with CMD's status as its outcome, and SIGTERM stops shepherd: exit 0.
func TestCLIPauseSchedule(t *testing.T) {
	t.Parallel()
	r := startPauseRun(t, "schedule", "10s", "-on-disconnect=pause") // 10s: see TestCLIPauseRidesThrough
	grandchild(t, r.dir)
	cut := time.Now()
	reconnect := r.disconnect()
	r.waitStderr(t, "shepherd: connection to ZooKeeper lost: sh frozen (the leadership at ", 1)
	n := len(logLines(t, r.dir))
	for _, p := range treeOf(initOf(t, r.cmd.Process.Pid)) {
		require.True(t, stopped(p), "process %d of CMD's is %s, not stopped", p.pid, p.state)
	}
	time.Sleep(1500*time.Millisecond - time.Since(cut)) // the disconnect's length: the fault
	require.Equal(t, n, len(logLines(t, r.dir)), "no line written while frozen; shepherd: %s", r.errb)
	reconnect()
	require.Eventually(t, func() bool { return len(logLines(t, r.dir)) >= n+5 }, 20*time.Second, 5*time.Millisecond,
		"lines again after the heal; shepherd: %s", r.errb)
	r.waitStderr(t, "resumed after", 1)
	require.NoError(t, os.WriteFile(filepath.Join(r.dir, "stop"), nil, 0o644))
	var st scheduleStatus
	require.Eventually(t, func() bool {
		var ok bool
		st, ok = readSchedule(t, r.path)
		return ok && st.Tick >= 0 && st.State == "finished" // not the first record's (tick -1)
	}, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, "error: exit 7", st.Outcome, "CMD's status; shepherd: %s", r.errb)
	require.Equal(t, 1, st.Attempt, "not rerun: the leadership was never lost")
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, r.exitCode(t), "shepherd: %s", r.errb)
	require.NotRegexp(t, `leadership at \S+ lost`, r.errb.String())
}

// TestCLIPauseLost: with -on-disconnect=pause, a partition longer than the
// session timeout: CMD's tree is frozen when the connection falls silent,
// then SIGKILLed when the session is lost on shepherd's clock, frozen (no
// line after the pause line), its grandchild too; shepherd exits 5.
func TestCLIPauseLost(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"pidns", "subreaper"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var extra []string
			if mode == "subreaper" {
				extra = []string{"-pidns=false"}
			}
			r := startPauseRun(t, "lock", "3s", append(extra, "-on-disconnect=pause")...)
			gc := grandchild(t, r.dir)
			death := watchDeath(gc, 30*time.Second)
			r.proxy.Stall() // until shepherd exits: longer than the session timeout
			r.waitStderr(t, "shepherd: connection to ZooKeeper lost: sh frozen (the lock on ", 1)
			n := len(logLines(t, r.dir))
			require.Equal(t, 5, r.exitCode(t), "lost: %s", r.errb)
			require.Equal(t, n, len(logLines(t, r.dir)), "no line after the pause line (not even by a SIGTERM trap); shepherd: %s", r.errb)
			_, ok := death()
			require.True(t, ok, "the grandchild %d is gone", gc.pid)
			require.Contains(t, r.errb.String(), "lost while paused: killing sh")
		})
	}
}

// TestCLIPauseDefaultStops: without -on-disconnect=pause, the disconnect
// TestCLIPauseRidesThrough survives stops CMD (SIGTERM) and shepherd exits 5.
func TestCLIPauseDefaultStops(t *testing.T) {
	t.Parallel()
	r := startPauseRun(t, "lock", "6s")
	reconnect := r.disconnect()
	defer reconnect()
	require.Equal(t, 5, r.exitCode(t), "lost: %s", r.errb)
	require.Contains(t, r.errb.String(), "lost: stopping sh")
	require.NotContains(t, r.errb.String(), "frozen")
}

// TestCLIPauseSignalThaws: SIGTERM to shepherd while CMD is frozen is the
// operator's stop, not a loss: CMD is thawed to handle it (its trap writes
// a line and exits 1), and shepherd exits with CMD's status.
func TestCLIPauseSignalThaws(t *testing.T) {
	t.Parallel()
	r := startPauseRun(t, "lock", "6s", "-on-disconnect=pause")
	reconnect := r.disconnect()
	pauseSeen := r.waitStderr(t, "shepherd: connection to ZooKeeper lost: sh frozen (the lock on ", 1)
	n := len(logLines(t, r.dir))
	signalled := time.Now()
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	// Still disconnected: only the signal can have thawed CMD.
	trapped := func() bool { l := logLines(t, r.dir); return len(l) > 0 && l[len(l)-1] < 0 }
	require.Eventually(t, trapped, 5*time.Second, 5*time.Millisecond, "the trap's line; shepherd: %s", r.errb)
	reconnect() // shepherd releases the lock once CMD has ended
	require.Equal(t, 1, r.exitCode(t), "CMD's status, from its trap; shepherd: %s", r.errb)
	// After the freeze, the trap's line, and before it at most one of the
	// loop's: a date forked before the freeze, stopped before it wrote, and
	// let finish by the thaw. None was written between the pause line and
	// the signal.
	after := logLines(t, r.dir)[n:]
	t.Logf("after the freeze: %d lines", len(after))
	require.True(t, len(after) == 1 || len(after) == 2 && after[0] > 0, "the trap's line, after at most one of the loop's: %v", after)
	for _, ts := range after[:len(after)-1] {
		at := time.Unix(0, ts)
		require.False(t, at.After(pauseSeen) && at.Before(signalled),
			"a line at %v, between the pause line (%v) and the signal (%v)", at, pauseSeen, signalled)
	}
	require.Contains(t, r.errb.String(), "SIGTERM: stopping sh")
}
