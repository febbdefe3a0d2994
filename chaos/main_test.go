package chaos_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

var (
	ensemble   *zktest.Cluster // 3 nodes
	standalone *zktest.Cluster

	reps         = flag.Int("chaos.reps", 2, "faults injected per matrix cell")
	soakDuration = flag.Duration("chaos.duration", 40*time.Second, "length of the randomized soak")
	pauseCells   = flag.String("chaos.pause", "short", "the matrix's pause column: short (a subset, one rep each), all (every cell, -chaos.reps), none")
	soakSeed     = flag.Int64("chaos.seed", 0, "seed of the randomized soak (0: from the clock; printed)")
)

// childEnv makes the test binary a holder process (see runChild).
const childEnv = "SHEPHERD_CHAOS_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	var err error
	ensemble, err = zktest.StartCluster(ctx, 3)
	if err == nil {
		standalone, err = zktest.StartCluster(ctx, 1)
	}
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if ensemble != nil {
			ensemble.Close()
		}
		os.Exit(1)
	}
	code := m.Run()
	ensemble.Close()
	standalone.Close()
	if code == 0 {
		if err := testutil.Leaks(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// runChild is a holder process: it acquires the recipe's hold, says HELD,
// and holds until killed (bounded by a minute).
func runChild() int {
	args := strings.Split(os.Getenv(childEnv), "|")
	spec, ok := recipeByName(args[0])
	if !ok {
		fmt.Println("ERR unknown recipe", args[0])
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := session.Open(ctx, strings.Split(args[1], ","), session.WithSessionTimeout(sessionTimeout))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	c, err := spec.make(s, args[2], 0, session.StopOnDisconnect) // index 0: a writer in the rw lock
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	if _, err := c.acquire(ctx); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("HELD")
	<-ctx.Done()
	return 0
}

// startChild starts a holder process and returns once it holds, with a
// channel closed when it has exited.
func startChild(t *testing.T, spec recipeSpec, servers []string, path string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+spec.name+"|"+strings.Join(servers, ",")+"|"+path)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	lines := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		lines <- l
	}()
	select {
	case l := <-lines:
		require.Equal(t, "HELD\n", l, "child holder")
	case <-time.After(30 * time.Second):
		t.Fatal("child holder not granted within 30s")
	}
	return cmd, exited
}

const sessionTimeout = 2 * time.Second

func uniquePath(name string) string { return fmt.Sprintf("/chaos/%s-%d", name, pathN.Add(1)) }

var pathN atomic.Int64

func open(t *testing.T, servers []string) *session.Session {
	return testutil.Open(t, servers, session.WithSessionTimeout(sessionTimeout))
}
