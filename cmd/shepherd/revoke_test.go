package main_test

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRevokeStopsHolder: a forced revoke of a lock held by 'shepherd lock':
// the holder is told, stops CMD as on any loss (SIGTERM) and exits 5; revoke
// says the holder let go; a second 'shepherd lock' then gets the lock.
func TestRevokeStopsHolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := uniquePath(t)
	script := fmt.Sprintf(`trap 'echo term > %s/got; exit 0' TERM; touch %s/started; while :; do sleep 0.05; done`, dir, dir)
	cmd, stderr := start(t, nil, "lock", "-id", "holder-1", path, "--", "sh", "-c", script)
	waitFile(t, filepath.Join(dir, "started"))

	r := shepherd(t, nil, "revoke", path)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "holder-1")
	require.Contains(t, r.stderr, "the holder was told and deleted its node")

	var ee *exec.ExitError
	require.True(t, errors.As(cmd.Wait(), &ee))
	require.Equal(t, 5, ee.ExitCode(), stderr.String())
	waitFile(t, filepath.Join(dir, "got"))
	require.Contains(t, stderr.String(), "revoked by an operator")

	r = shepherd(t, nil, "lock", "-timeout", "5s", path, "--", "true")
	require.Equal(t, 0, r.code, r.stderr)
}

// TestRevokeAsk: 'revoke -ask' turns into SIGTERM to the holder's CMD; CMD's
// exit releases the lock and revoke returns 0. A holder whose CMD ignores
// SIGTERM (until its grace) keeps the lock: revoke -ask gives up at -wait
// with exit 4.
func TestRevokeAsk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := uniquePath(t)
	script := fmt.Sprintf(`trap 'echo term > %s/got; exit 3' TERM; touch %s/started; while :; do sleep 0.05; done`, dir, dir)
	cmd, stderr := start(t, nil, "lock", path, "--", "sh", "-c", script)
	waitFile(t, filepath.Join(dir, "started"))
	r := shepherd(t, nil, "revoke", "-ask", "-wait", "20s", path)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "released")
	var ee *exec.ExitError
	require.True(t, errors.As(cmd.Wait(), &ee))
	require.Equal(t, 3, ee.ExitCode(), "CMD's own status: %s", stderr.String())
	require.Contains(t, stderr.String(), "asked for the lock")

	stubborn := `trap '' TERM; touch ` + dir + `/started2; while :; do sleep 0.05; done`
	_, stderr2 := start(t, nil, "lock", "-grace", "30s", path, "--", "sh", "-c", stubborn)
	waitFile(t, filepath.Join(dir, "started2"))
	r = shepherd(t, nil, "revoke", "-ask", "-wait", "500ms", path)
	require.Equal(t, 4, r.code, r.stderr)
	require.Contains(t, r.stderr, "forces it")
	st := shepherd(t, nil, "status", "-json", path)
	require.Equal(t, 0, st.code, st.stderr)
	require.Contains(t, st.stdout, `"revoke":"ask"`)
	require.NotContains(t, stderr2.String(), "lost")
}

// TestRevokeNobody: nothing held at PATH exits 7; several holders need NODE.
func TestRevokeNobody(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	r := shepherd(t, nil, "revoke", path)
	require.Equal(t, 7, r.code, r.stderr)
	require.Contains(t, r.stderr, "nobody holds")

	dir := t.TempDir()
	for i := range 2 {
		start(t, nil, "semaphore", "-n", "2", path, "--", "sh", "-c", fmt.Sprintf("touch %s/s%d; sleep 30", dir, i))
		waitFile(t, filepath.Join(dir, fmt.Sprintf("s%d", i)))
	}
	r = shepherd(t, nil, "revoke", path)
	require.Equal(t, 2, r.code, r.stderr)
	require.True(t, strings.Contains(r.stderr, "name the one to revoke"), r.stderr)
	r = shepherd(t, nil, "revoke", path, "lease-9999999999")
	require.Equal(t, 7, r.code, r.stderr)
}
