package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRevisionOf: without VCS stamping, the revision comes from a
// pseudo-version, a release needs none, and a devel build says it is
// unknown.
func TestRevisionOf(t *testing.T) {
	t.Parallel()
	require.Equal(t, "revision abcdef123456 (from the module's pseudo-version)", revisionOf("v0.0.0-20261127114503-abcdef123456"))
	require.Equal(t, "revision abcdef123456 (from the module's pseudo-version)", revisionOf("v0.3.1-0.20261127114503-abcdef123456"))
	require.Equal(t, "", revisionOf("v0.3.0"))
	require.Contains(t, revisionOf("(devel)"), "revision unknown (built without VCS stamping")
}
