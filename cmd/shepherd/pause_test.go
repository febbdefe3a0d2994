package main_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// writerScript is CMD for the pause tests: it starts a grandchild (sleep,
// its PID in gc.pid), then appends a timestamp (ns since the epoch) to log
// every 10 ms: each line is a fork of date, each pause one of sleep.
func writerScript(dir string) string {
	return fmt.Sprintf(`sleep 1000 & echo $! > %[1]s/gc.tmp; mv %[1]s/gc.tmp %[1]s/gc.pid
while :; do date +%%s%%N >> %[1]s/log; sleep 0.01; done`, dir)
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

func stopped(p proc) bool { return p.state == "T" || p.state == "t" }

// TestCLIPauseInitFreeze drives the init (`shepherd __init`) over its
// control pipe as shepherd does, in both tree modes: "freeze" stops every
// process of CMD's (a grandchild too) before the init answers, and nothing
// is written while frozen; "thaw" continues them; "stop 9 0" while frozen
// kills them all without letting any run again.
func TestCLIPauseInitFreeze(t *testing.T) {
	for _, mode := range []string{"pidns", "subreaper"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testInitFreeze(t, mode)
		})
	}
}

func testInitFreeze(t *testing.T, mode string) {
	dir := t.TempDir()
	ctlR, ctlW, err := os.Pipe()
	require.NoError(t, err)
	ansR, ansW, err := os.Pipe()
	require.NoError(t, err)
	cmd := exec.Command(bin, "__init", "-mode", mode, "-grace", "1s", "--", "sh", "-c", writerScript(dir))
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
	if mode == "pidns" {
		if os.Geteuid() != 0 {
			t.Skip("a PID namespace for the init needs root here (shepherd adds a user namespace; TestProcessTree covers it)")
		}
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWPID
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

	waitFile(t, filepath.Join(dir, "gc.pid"))
	b, err := os.ReadFile(filepath.Join(dir, "gc.pid"))
	require.NoError(t, err)
	// In the PID namespace $! is the namespace's PID: find the grandchild
	// as the host sees it, the tree's one `sleep 1000`.
	var gc proc
	require.Eventually(t, func() bool {
		for _, p := range treeOf(cmd.Process.Pid) {
			cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.pid))
			if string(cl) == "sleep\x001000\x00" {
				gc = p
				return true
			}
		}
		return false
	}, 10*time.Second, time.Millisecond, "the grandchild (pid %s in CMD's view) runs", strings.TrimSpace(string(b)))
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
		require.Len(t, logLines(t, dir), n, "round %d: a line was written while frozen", round)
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
	require.Len(t, logLines(t, dir), n, "no line after the freeze")
}
