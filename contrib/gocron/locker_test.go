package gocron_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// claim is one line of the helpers' file.
type claim struct {
	run int64 // ms
	id  string
}

func claims(t *testing.T, file string) []claim {
	t.Helper()
	f, err := os.Open(file)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var out []claim
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		run, id, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.ParseInt(run, 10, 64)
		if ok && err == nil {
			out = append(out, claim{n, id})
		}
	}
	return out
}

// helper is one helper process.
type helper struct {
	id  string
	cmd *exec.Cmd
}

func startHelper(t *testing.T, id, path, file string, skew time.Duration, env ...string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+id, zkEnv+"="+strings.Join(zkc.Servers(), ","),
		pathEnv+"="+path, skewEnv+"="+skew.String(), outEnv+"="+file), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	h := &helper{id: id, cmd: cmd}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return h
}

// TestLockerEveryRunOnce: four processes run gocron's scheduler with the
// Locker, a job every second, their clocks 200 ms fast (two: their claims
// race), right and 200 ms slow (gocron's WithClock). The process running a claimed run is killed
// (SIGKILL) in the middle of it, and another one is stopped (SIGSTOP)
// mid-run for three seconds, then continued. Every second from the first
// claim to the last is claimed exactly once: none twice, none missed.
func TestLockerEveryRunOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("three processes, about 20 s")
	}
	path := fmt.Sprintf("/gocron-test/%s-%d", t.Name(), time.Now().UnixNano())
	file := filepath.Join(t.TempDir(), "claims")
	procs := map[string]*helper{}
	// Two clocks alike: their claims race for each run.
	for i, skew := range []time.Duration{200 * time.Millisecond, 200 * time.Millisecond, 0, -200 * time.Millisecond} {
		id := fmt.Sprintf("p%d", i)
		procs[id] = startHelper(t, id, path, file, skew)
	}
	waitClaims := func(n int, what string) []claim {
		t.Helper()
		var cs []claim
		require.Eventually(t, func() bool { cs = claims(t, file); return len(cs) >= n },
			60*time.Second, 10*time.Millisecond, "%s: %v claims, want %d", what, &cs, n)
		return cs
	}
	cs := waitClaims(3, "first runs")

	// Kill the process of the run just claimed, in the middle of its job.
	victim := cs[len(cs)-1].id
	require.NoError(t, procs[victim].cmd.Process.Kill())
	_ = procs[victim].cmd.Wait()
	delete(procs, victim)
	procs["p4"] = startHelper(t, "p4", path, file, 100*time.Millisecond)
	cs = waitClaims(len(cs)+3, "after the kill")

	// Stop the process of the run just claimed, mid-run, while the others
	// claim three more; then let it go on.
	stopped := cs[len(cs)-1].id
	require.NoError(t, procs[stopped].cmd.Process.Signal(syscall.SIGSTOP))
	n := len(cs)
	require.Eventually(t, func() bool {
		var others int
		for _, c := range claims(t, file)[n:] {
			if c.id != stopped {
				others++
			}
		}
		return others >= 3
	}, 60*time.Second, 10*time.Millisecond, "the others go on while %s is stopped", stopped)
	require.NoError(t, procs[stopped].cmd.Process.Signal(syscall.SIGCONT))
	cs = waitClaims(len(claims(t, file))+3, "after the stop")

	for id, h := range procs {
		require.NoError(t, h.cmd.Process.Signal(syscall.SIGTERM), id)
	}
	for id, h := range procs {
		done := make(chan error, 1)
		go func() { done <- h.cmd.Wait() }()
		select {
		case err := <-done:
			require.NoError(t, err, "helper %s", id)
		case <-time.After(30 * time.Second):
			t.Fatalf("helper %s did not stop", id)
		}
	}

	cs = claims(t, file)
	sort.Slice(cs, func(i, j int) bool { return cs[i].run < cs[j].run })
	var bad []string
	for i := 1; i < len(cs); i++ {
		switch d := cs[i].run - cs[i-1].run; {
		case d == 0:
			bad = append(bad, fmt.Sprintf("run %d claimed by %s and %s", cs[i].run, cs[i-1].id, cs[i].id))
		case d != 1000:
			bad = append(bad, fmt.Sprintf("runs %d..%d missed (%d ms after %d)", cs[i-1].run+1000, cs[i].run-1000, d, cs[i-1].run))
		}
	}
	require.Empty(t, bad, "claims: %v", cs)
	require.GreaterOrEqual(t, len(cs), 9)
	byID := map[string]int{}
	for _, c := range cs {
		byID[c.id]++
	}
	t.Logf("%d runs, once each, by %v (killed %s, stopped %s)", len(cs), byID, victim, stopped)
}
