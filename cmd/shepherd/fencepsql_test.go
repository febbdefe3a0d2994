package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/fence/sqlfence"
	"github.com/shepherdzk/shepherd/internal/pgtest"
)

// readmeBlocks returns the README's fenced blocks of language lang, each
// without its fences.
func readmeBlocks(t *testing.T, lang string) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	var out []string
	for _, m := range regexp.MustCompile("(?ms)^```"+lang+"\n(.*?)^```$").FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	return out
}

// readmeBlock is the one block of lang that contains marker.
func readmeBlock(t *testing.T, lang, marker string) string {
	t.Helper()
	var found []string
	for _, b := range readmeBlocks(t, lang) {
		if strings.Contains(b, marker) {
			found = append(found, b)
		}
	}
	require.Len(t, found, 1, "README blocks of %s with %q", lang, marker)
	return found[0]
}

// TestDocFencedPsql: the README's fencing example for the CLI runs as
// printed, against a real PostgreSQL (pgtest's, reached through libpq's
// variables) and this package's ZooKeeper: its SQL is the package's
// (sqlfence.Schema, sqlfence.PostgresFunction); its commands create the
// fence, and `shepherd lock` runs backup.sh, whose transaction lands with
// the lock's token; a second run lands with a higher one; the script run
// with an older token (a holder that was paused past its session) exits 3
// with psql's "stale token" error, and lands nothing.
func TestDocFencedPsql(t *testing.T) {
	t.Parallel()
	srv := pgtest.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db, err := srv.NewDatabase(ctx)
	require.NoError(t, err)

	schema := readmeBlock(t, "sql", "FUNCTION shepherd_fence")
	require.Equal(t, sqlfence.Schema+";\n"+sqlfence.PostgresFunction+";\n", schema, "the README's SQL is the package's")
	script := readmeBlock(t, "sh", "SELECT shepherd_fence(")
	commands := readmeBlock(t, "sh", "-f shepherd_fence.sql")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "shepherd_fence.sql"), []byte(schema), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "backup.sh"), []byte(script), 0o755))

	pgBin, err := pgtest.BinDir() // psql of the server's version
	require.NoError(t, err)
	root := strings.ReplaceAll(uniquePath(t), "/", "-")[1:]
	env := append(os.Environ(), srv.Env(db)...)
	env = append(env, "SHEPHERD_ZK="+zk.ConnectString()+"/"+root,
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+pgBin+string(os.PathListSeparator)+os.Getenv("PATH"))
	run := func(extra []string, name string, args ...string) (string, int) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = dir, append(append([]string(nil), env...), extra...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		}
		require.NoError(t, err, "%s", out)
		return string(out), 0
	}
	psql := func(q string) string {
		out, code := run(nil, "psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", q)
		require.Zero(t, code, out)
		return strings.TrimSpace(out)
	}
	psql("CREATE TABLE backups (taken_at timestamptz NOT NULL, token bigint NOT NULL)")

	out, code := run(nil, "sh", "-e", "-c", commands) // the fence, then a backup under the lock
	require.Zero(t, code, out)
	out, code = run(nil, "sh", "-c", "exec "+lastLine(commands)) // and another
	require.Zero(t, code, out)
	var tokens []int64
	for _, f := range strings.Fields(psql("SELECT token FROM backups ORDER BY taken_at")) {
		n, err := strconv.ParseInt(f, 10, 64)
		require.NoError(t, err)
		tokens = append(tokens, n)
	}
	require.Len(t, tokens, 2, "a backup recorded under each lock")
	require.Greater(t, tokens[1], tokens[0])
	require.Equal(t, strconv.FormatInt(tokens[1], 10), psql("SELECT token FROM shepherd_fence WHERE resource = '/backups/db'"))

	// The first holder, late.
	out, code = run([]string{"SHEPHERD_PATH=/backups/db", "SHEPHERD_TOKEN=" + strconv.FormatInt(tokens[0], 10)}, "./backup.sh")
	require.Equal(t, 3, code, "psql's status for a failed script: %s", out)
	require.Contains(t, out, "shepherd fence: stale token "+strconv.FormatInt(tokens[0], 10)+" for /backups/db: the fence has seen token "+strconv.FormatInt(tokens[1], 10))
	require.Equal(t, "2", psql("SELECT count(*) FROM backups"), "the late holder's record did not land")
	t.Logf("backups under tokens %v; the late holder's run: %s", tokens, strings.TrimSpace(out))
}

// lastLine is the last line of block, without its comment.
func lastLine(block string) string {
	lines := strings.Split(strings.TrimSpace(block), "\n")
	l, _, _ := strings.Cut(lines[len(lines)-1], " #")
	return strings.TrimSpace(l)
}
