package main_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rehearsalDoc is the page whose sh block TestRehearseRollingRestart runs.
const rehearsalDoc = "../../docs/rolling-restart.md"

// shBlock returns the first sh block of a Markdown file.
func shBlock(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var lines []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		switch l := sc.Text(); {
		case l == "```sh":
			in = true
		case in && strings.HasPrefix(l, "```"):
			return strings.Join(lines, "\n") + "\n"
		case in:
			lines = append(lines, l)
		}
	}
	t.Fatalf("%s has no sh block", file)
	return ""
}

// TestRehearseRollingRestart runs docs/rolling-restart.md's commands as
// printed, with sh, in an empty directory: shepherd dev -servers 3, two
// candidates with -on-disconnect pause, SIGHUP for a rolling restart of the
// three servers. The same candidate leads, with the same term, before and
// after; the candidates' sessions were granted the CLI's default 10s (no
// "granted" note); dev restarted each server.
func TestRehearseRollingRestart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts three ZooKeeper servers and restarts each")
	}
	script := shBlock(t, rehearsalDoc)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-ec", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	// Output to a file (a pipe would stay open as long as anything the
	// script started in the background lives), and a process group of its
	// own, ended with the test whatever happened.
	outFile, err := os.Create(filepath.Join(dir, "script.out"))
	require.NoError(t, err)
	defer outFile.Close()
	cmd.Stdout, cmd.Stderr = outFile, outFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) })
	err = cmd.Wait()
	read := func(name string) string { b, _ := os.ReadFile(filepath.Join(dir, name)); return string(b) }
	require.NoError(t, err, "%s\ndev.log:\n%s\na.log:\n%s", read("script.out"), read("dev.log"), read("a.log"))

	leaderRe := regexp.MustCompile(`(?m)^leader\s+(\S+)\s+0x[0-9a-f]+\s+\S+\s+(\d+)\s`)
	before := leaderRe.FindStringSubmatch(read("before.txt"))
	after := leaderRe.FindStringSubmatch(read("after.txt"))
	require.NotNil(t, before, read("before.txt"))
	require.NotNil(t, after, read("after.txt"))
	require.Equal(t, "a", before[1])
	require.Equal(t, before[1:], after[1:], "the same leader and term after the rolling restart")
	devLog := read("dev.log")
	for _, s := range []string{"server 1 of 3", "server 2 of 3", "server 3 of 3", "rolling restart done"} {
		require.Contains(t, devLog, s)
	}
	for _, f := range []string{"a.log", "b.log"} {
		require.NotContains(t, read(f), "granted", "%s: the session timeout was lowered", f)
	}
	t.Logf("a.log:\n%s\ndev.log:\n%s", read("a.log"), devLog)
}
