package main_test

import (
	"bufio"
	"bytes"
	"net"
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

// freePort returns a loopback port that is free, and claimed against
// zktest's servers until the test ends (zktest.ReservePort): never 2181,
// where another ZooKeeper may run, and never in the ephemeral range, where
// the suite's outgoing connections took one between the test's pick and
// shepherd's bind ("port 37693 is taken", once in make test).
func freePort(t *testing.T) string {
	t.Helper()
	return strconv.Itoa(zktest.ReservePort(t))
}

// TestDev: `shepherd dev` serves a ZooKeeper the other commands use through
// the export line it prints, says it is not for production, and on SIGINT
// stops it and removes its temporary directory; with -data it keeps DIR.
func TestDev(t *testing.T) {
	t.Parallel()
	for _, keep := range []bool{false, true} {
		name := map[bool]string{false: "temp", true: "data"}[keep]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			began := time.Now()
			defer func() { t.Logf("wall time %v", time.Since(began).Round(time.Millisecond)) }()
			port := freePort(t)
			args := []string{"dev", "-port", port}
			data := filepath.Join(t.TempDir(), "zkdata")
			if keep {
				args = append(args, "-data", data)
			}
			cmd := exec.Command(bin, args...)
			errb := &syncWriter{w: new(bytes.Buffer)}
			cmd.Stderr = errb
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })

			line, err := bufio.NewReader(out).ReadString('\n')
			require.NoError(t, err, "stderr: %s", errb)
			require.Equal(t, "export SHEPHERD_ZK=127.0.0.1:"+port+"\n", line)
			zkAddr := strings.TrimSpace(strings.TrimPrefix(line, "export SHEPHERD_ZK="))
			var m []string // its stderr comes after the export line
			require.Eventually(t, func() bool {
				m = regexp.MustCompile(`data in (\S+),`).FindStringSubmatch(errb.String())
				return m != nil
			}, 10*time.Second, 5*time.Millisecond, "stderr: %s", errb)
			dir := m[1]
			require.Contains(t, errb.String(), "never for production")

			r := shepherd(t, []string{"SHEPHERD_ZK=" + zkAddr}, "lock", "/dev-test", "--", "sh", "-c", "test -n \"$SHEPHERD_TOKEN\"")
			require.Equal(t, 0, r.code, r.stderr)

			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			select {
			case err := <-exited:
				exited <- err
				require.NoError(t, err, "Ctrl-C ends dev cleanly: %s", errb)
			case <-time.After(30 * time.Second):
				t.Fatalf("dev did not stop; stderr: %s", errb)
			}
			_, err = net.DialTimeout("tcp", zkAddr, time.Second)
			require.Error(t, err, "the server is gone")
			_, err = os.Stat(dir)
			if keep {
				require.NoError(t, err, "-data DIR is kept")
				require.True(t, strings.HasPrefix(dir, data))
			} else {
				require.ErrorIs(t, err, os.ErrNotExist, "the temporary directory %s is removed", dir)
			}
		})
	}
}

// TestDevMissing: without Java, `shepherd dev` says exactly what to install.
func TestDevMissing(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(bin, "dev", "-port", "0")
	cmd.Env = append(os.Environ(), "PATH="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 1, ee.ExitCode())
	require.Contains(t, string(out), "apt-get install zookeeper default-jre-headless")
	require.Contains(t, string(out), "ZOOKEEPER_CLASSPATH")
}
