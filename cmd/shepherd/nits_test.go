package main_test

import (
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
