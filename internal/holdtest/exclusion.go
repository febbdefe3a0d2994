package holdtest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
)

// Exclusion checks mutual exclusion on one clock: when a holder is
// granted, the previous holder's loss signal must have fired or it must
// have released. Its zero value is ready; it is safe for concurrent use.
type Exclusion struct {
	mu         sync.Mutex
	holder     string
	lost       <-chan struct{}
	grants     int
	violations []string
}

// Granted records id's grant, with its hold's loss signal.
func (e *Exclusion) Granted(id string, lost <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.holder != "" && !testutil.IsClosed(e.lost) {
		e.violations = append(e.violations, fmt.Sprintf("%s granted while %s holds", id, e.holder))
	}
	e.holder, e.lost = id, lost
	e.grants++
}

// Released records id's release (before it is made).
func (e *Exclusion) Released(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.holder == id {
		e.holder, e.lost = "", nil
	}
}

// Current is the holder recorded last, and its loss signal ("": none).
func (e *Exclusion) Current() (string, <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.holder, e.lost
}

// Grants is the number of grants recorded.
func (e *Exclusion) Grants() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.grants
}

// Check fails t if a grant came while another holder held.
func (e *Exclusion) Check(t testing.TB) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	require.Empty(t, e.violations)
}
