package main_test

import (
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

// tickLine is one line a schedule's CMD wrote: "TICK ID ATTEMPT start|end".
type tickLine struct {
	n       int64
	id      string
	attempt int
	what    string
}

func tickLines(t *testing.T, file string) []tickLine {
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []tickLine
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 {
			continue
		}
		n, err1 := strconv.ParseInt(f[0], 10, 64)
		a, err2 := strconv.Atoi(f[2])
		require.NoError(t, err1, l)
		require.NoError(t, err2, l)
		out = append(out, tickLine{n, f[1], a, f[3]})
	}
	return out
}

// TestScheduleDrainRollingDeploy: a rolling deploy of three `shepherd
// schedule -drain` processes, each sent SIGTERM while its CMD runs a tick
// and replaced by a new one. With -drain longer than CMD, each stopped
// tick's CMD finishes (its "end" line) before the handover: every tick ran
// once, start and end. With -drain shorter than CMD, the stopped tick's CMD
// is stopped and the tick left interrupted: the next leader runs it again
// (attempt 2). Either way every tick from 0 to the last ended exactly once,
// and no tick's CMD ran in two places at once. (Without -drain, the
// stopped tick was recorded "cancelled" and never run again.)
func TestScheduleDrainRollingDeploy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, drain string }{{"within", "20s"}, {"past", "100ms"}} {
		t.Run(tc.name, func(t *testing.T) { cliRollingDeploy(t, tc.drain) })
	}
}

func cliRollingDeploy(t *testing.T, drain string) {
	path := uniquePath(t)
	file := filepath.Join(t.TempDir(), "ticks")
	line := func(what string) string {
		return fmt.Sprintf(`echo "$SHEPHERD_TICK $SHEPHERD_ID $SHEPHERD_ATTEMPT %s" >> %s`, what, file)
	}
	// A directory marks a running CMD: a CMD that finds it made by another
	// reports an overlap (a CMD stopped by a signal removes it first).
	mark := filepath.Join(t.TempDir(), "running")
	script := fmt.Sprintf(`mkdir %[1]s || echo "$SHEPHERD_TICK $SHEPHERD_ID $SHEPHERD_ATTEMPT overlap" >> %[2]s; `+
		`trap 'rmdir %[1]s; exit 143' TERM INT; `, mark, file) +
		line("start") + "; sleep 1 & wait $!; " + line("end") + "; rmdir " + mark
	procs := map[string]*exec.Cmd{}
	add := func(id string) {
		procs[id], _ = start(t, nil, "schedule", "-every", "300ms", "-catch-up", "all:100", "-drain", drain,
			"-grace", "5s", "-id", id, path, "--", "sh", "-c", script)
	}
	for i := range 3 {
		add(fmt.Sprintf("v1-%d", i))
	}
	running := func() (tickLine, bool) {
		ls := tickLines(t, file)
		if len(ls) == 0 || ls[len(ls)-1].what != "start" {
			return tickLine{}, false
		}
		l := ls[len(ls)-1]
		return l, strings.HasPrefix(l.id, "v1-") && procs[l.id] != nil
	}
	for i := range 3 {
		var l tickLine
		require.Eventually(t, func() bool { var ok bool; l, ok = running(); return ok },
			30*time.Second, 20*time.Millisecond, "a v1 process running a tick (%d replaced)", i)
		require.NoError(t, procs[l.id].Process.Signal(syscall.SIGTERM))
		require.Equal(t, 0, exitOf(t, procs[l.id]), "SIGTERM: exit 0")
		delete(procs, l.id)
		add(fmt.Sprintf("v2-%d", i))
	}
	var last int64
	require.Eventually(t, func() bool {
		ls := tickLines(t, file)
		if len(ls) == 0 {
			return false
		}
		l := ls[len(ls)-1]
		last = l.n
		return strings.HasPrefix(l.id, "v2-") && l.what == "end" && l.n >= 3
	}, 30*time.Second, 20*time.Millisecond)
	for id, p := range procs {
		require.NoError(t, p.Process.Signal(syscall.SIGTERM))
		require.Equal(t, 0, exitOf(t, p), id)
	}
	ls := tickLines(t, file)
	ends, starts := map[int64]int{}, map[int64]int{}
	for _, l := range ls {
		switch l.what {
		case "overlap":
			t.Fatalf("tick %d's CMD (attempt %d) started while another ran: %v", l.n, l.attempt, ls)
		case "start":
			starts[l.n]++
		case "end":
			ends[l.n]++
		}
	}
	for n := int64(0); n <= last; n++ {
		require.Equal(t, 1, ends[n], "tick %d ended %d times: %v", n, ends[n], ls)
		if drain == "20s" {
			require.Equal(t, 1, starts[n], "tick %d started %d times: %v", n, starts[n], ls)
		}
	}
}
