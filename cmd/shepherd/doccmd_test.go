package main_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
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

// docFiles are the documents whose shell commands are run by
// TestDocCommands.
var docFiles = []string{"../../README.md", "../../docs/operations.md", "../../docs/layouts.md",
	"../../examples/kubernetes/README.md", "../../docs/handover.md"}

// docCommands returns every `shepherd ...` line of the documents' sh blocks,
// without its trailing comment or `&`.
func docCommands(t *testing.T) []string {
	t.Helper()
	comment := regexp.MustCompile(`\s+#.*$`)
	var out []string
	for _, f := range docFiles {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		in := false
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "```sh"):
				in = true
			case strings.HasPrefix(line, "```"):
				in = false
			case in && strings.HasPrefix(line, "shepherd "):
				line = strings.TrimSpace(comment.ReplaceAllString(line, ""))
				out = append(out, strings.TrimSpace(strings.TrimSuffix(line, "&")))
			}
		}
	}
	return out
}

// TestDocCommands: every shepherd command printed in the README, the
// operations guide and the Kubernetes example runs as printed, in order,
// against a real ZooKeeper (SHEPHERD_ZK points at this package's server,
// under a chroot of the test's own: the documents' export lines name a
// ZooKeeper of the reader's), with the
// scripts they name (./backup.sh, ...) as stubs that record their runs.
// `shepherd dev` is not run here: it binds port 2181, which may be another
// ZooKeeper's on this machine (TestDev and TestDevTLS run it on a free port).
func TestDocCommands(t *testing.T) {
	t.Parallel()
	cmds := docCommands(t)
	require.NotEmpty(t, cmds, "no shepherd command in the documents")
	dir := t.TempDir()
	for _, stub := range []string{"backup.sh", "call-api.sh", "scheduler", "report.sh"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, stub),
			[]byte("#!/bin/sh\necho \"$0 $SHEPHERD_TOKEN\" >> \"$HOME/ran.log\"\n"), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".shepherd-auth"), []byte("digest:ops:docs-secret\n"), 0o600))
	// A chroot of the test's own: the documents' paths (/jobs/backup, ...)
	// are fresh on every run.
	root := strings.ReplaceAll(uniquePath(t), "/", "-")[1:]
	env := append(os.Environ(), "SHEPHERD_ZK="+zk.ConnectString()+"/"+root, "HOME="+dir, "POD_NAME=pod-a",
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	ran := func() string { b, _ := os.ReadFile(filepath.Join(dir, "ran.log")); return string(b) }
	for _, line := range cmds {
		t.Run(line, func(t *testing.T) {
			if strings.HasPrefix(line, "shepherd dev") {
				t.Skip("binds port 2181 (TestDev, TestDevTLS run it on a free port)")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "sh", "-c", "exec "+line)
			cmd.Dir, cmd.Env = dir, env
			out := &syncWriter{w: &bytes.Buffer{}}
			cmd.Stdout, cmd.Stderr = out, out
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			code := func(err error) int {
				if ee, ok := err.(*exec.ExitError); ok {
					return ee.ExitCode()
				}
				require.NoError(t, err)
				return 0
			}
			switch {
			case strings.Contains(line, " -http ") && !strings.Contains(line, " -- "):
				// A sidecar: it serves until stopped; alone on its path, it
				// leads once it has its session (/readyz 200).
				addr := regexp.MustCompile(`-http (\S+)`).FindStringSubmatch(line)[1]
				require.Eventually(t, func() bool {
					resp, err := http.Get("http://" + addr + "/readyz")
					if err != nil {
						return false
					}
					resp.Body.Close()
					return resp.StatusCode == http.StatusOK
				}, 20*time.Second, 20*time.Millisecond, "the sidecar never led: %s", out)
				require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
				require.Equal(t, 0, code(<-exited), "%s", out)
			case strings.HasPrefix(line, "shepherd schedule "):
				// It runs tick 0 at once, then waits for the next.
				before := strings.Count(ran(), "report.sh")
				require.Eventually(t, func() bool { return strings.Count(ran(), "report.sh") > before },
					20*time.Second, 20*time.Millisecond, "the first tick never ran: %s", out)
				require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
				require.Equal(t, 0, code(<-exited), "%s", out)
			default:
				c := code(<-exited)
				if strings.HasPrefix(line, "shepherd status ") || strings.HasPrefix(line, "shepherd ls ") ||
					strings.HasPrefix(line, "shepherd revoke ") || strings.HasPrefix(line, "shepherd rm ") ||
					strings.HasPrefix(line, "shepherd handover ") {
					// 7: nothing there now (the server removes a recipe's
					// empty container nodes within moments of the release;
					// a document's rm after another's finds it removed).
					require.Contains(t, []int{0, 7}, c, "%s", out)
					return
				}
				require.Equal(t, 0, c, "%s", out)
			}
		})
	}
	require.Contains(t, ran(), "backup.sh", "no documented lock ran its command")
}
