package session

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// Open's error keeps a server's answer when the attempt after it only timed
// out: "certificate expired" says more than the timeout.
func TestLastErrsKeepTheAnswer(t *testing.T) {
	const a, b = "127.0.0.1:1", "127.0.0.1:2"
	refused := errors.New("server 127.0.0.1:1: TLS handshake failed: remote error: bad certificate")
	timeout := os.ErrDeadlineExceeded // a net.Error whose Timeout() is true
	require.True(t, isTimeout(timeout))

	var h handle
	require.Empty(t, h.lastErrs([]string{a, b}))

	h.noteErr(a, timeout) // no answer yet: the timeout alone
	require.Equal(t, []error{timeout}, h.lastErrs([]string{a, b}))

	h.noteErr(a, refused)
	h.noteErr(a, timeout)
	h.noteErr(b, timeout)
	errs := h.lastErrs([]string{a, b})
	require.Len(t, errs, 2)
	require.ErrorIs(t, errs[0], timeout)
	require.ErrorIs(t, errs[0], refused)
	require.ErrorContains(t, errs[0], "bad certificate")
	require.Equal(t, timeout, errs[1])

	// A later answer replaces the earlier one; it is reported alone.
	other := errors.New("server 127.0.0.1:1: no ZooKeeper answer: EOF")
	h.noteErr(a, other)
	require.Equal(t, []error{other, timeout}, h.lastErrs([]string{a, b}))
}
