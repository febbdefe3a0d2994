package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/semaphore"
)

// TestVersion: `shepherd version`, --version and -version print the module
// version (a dev build: "(devel)"), and the Go version, and exit 0.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		r := shepherd(t, nil, args...)
		require.Equal(t, 0, r.code, "shepherd %q: %s", args, r.stderr)
		require.Regexp(t, `^shepherd (\(devel\)|v\d+\.\d+\.\d+\S*)`, r.stdout, "shepherd %q", args)
		require.Regexp(t, `go1\.\d+`, r.stdout, "shepherd %q names the Go version", args)
	}
	r := shepherd(t, nil, "help")
	require.Contains(t, r.stdout, "shepherd version")
}

// TestStatusJSONSession: status -json gives each entry's session as the
// text view and SHEPHERD_SESSION do, "0x…", beside the numeric session_id.
func TestStatusJSONSession(t *testing.T) {
	path := uniquePath(t)
	dir := t.TempDir()
	start(t, nil, "lock", "-id", "j", path, "--", "sh", "-c",
		fmt.Sprintf(`echo $SHEPHERD_SESSION > %[1]s/s.tmp; mv %[1]s/s.tmp %[1]s/s; exec sleep 30`, dir))
	waitFile(t, filepath.Join(dir, "s"))
	b, err := os.ReadFile(filepath.Join(dir, "s"))
	require.NoError(t, err)
	env := strings.TrimSpace(string(b))
	r := shepherd(t, nil, "status", "-json", path)
	require.Equal(t, 0, r.code, r.stderr)
	var raw struct {
		Holders []map[string]any `json:"holders"`
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.UseNumber() // session ids pass 2^53: a float64 rounds them
	require.NoError(t, dec.Decode(&raw))
	require.Len(t, raw.Holders, 1)
	require.Equal(t, env, raw.Holders[0]["session"], "JSON session as SHEPHERD_SESSION: %s", r.stdout)
	sid, err := raw.Holders[0]["session_id"].(json.Number).Int64()
	require.NoError(t, err, "session_id stays a number")
	require.Equal(t, env, fmt.Sprintf("0x%x", sid))
	r = shepherd(t, nil, "status", path)
	require.Regexp(t, `holder\s+j\s+`+regexp.QuoteMeta(env)+`\s`, r.stdout)
}

// TestStatusSemaphoreLabels: a semaphore's waiters are labelled as lease
// waiters (their nodes are named lock-, as Curator's
// InterProcessSemaphoreV2 names them, but they wait for a lease, not a
// lock); a library semaphore's holder shows its WithData in the ID column,
// as the CLI's -id does.
func TestStatusSemaphoreLabels(t *testing.T) {
	path := uniquePath(t)
	sess := testutil.Open(t, zk.Servers())
	sem, err := semaphore.New(sess, path, 1, semaphore.WithData([]byte("lib-holder")))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := sem.Acquire(ctx)
	require.NoError(t, err)
	defer l.Release(context.Background())
	start(t, nil, "semaphore", "-n", "1", "-id", "cli-waiter", path, "--", "true")
	waitStatus(t, path, func(s recipe.Snapshot) bool { return len(s.Waiters) == 1 })
	r := shepherd(t, nil, "status", path)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^holder\s+lib-holder\s.*curator lease- \(InterProcessSemaphoreV2\)$`, r.stdout)
	require.Regexp(t, `(?m)^waiter 1\s+cli-waiter\s.*curator lock- \(InterProcessSemaphoreV2 lease waiters\)$`, r.stdout)
	require.NotContains(t, r.stdout, "InterProcessMutex")
}
