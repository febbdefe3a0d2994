package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
