package bench

import "context"

// Peer is one client library under test. Go peers run in the runner's process
// (see bench/internal/gopeers); Java and Python peers run as subprocesses that
// speak JSON lines (see Subprocess). The runner uses one peer at a time.
type Peer interface {
	// Name is the short name in tables and JSON lines ("curator", "kazoo", ...).
	Name() string
	// Supports reports whether the peer can run workload w.
	Supports(w string) bool
	// Prepare sets a run up: opens its sessions and brings it to the moment
	// just before the measured part (W4: a leader elected; W5: every waiter
	// queued). The runner reads the server counters after Prepare returns.
	Prepare(ctx context.Context, spec Spec) (Run, error)
	// Close ends the peer (a subprocess exits).
	Close() error
}

// Run is one prepared run.
type Run interface {
	// Go runs the measured part and returns once every operation it started
	// has finished.
	Go(ctx context.Context) (Result, error)
	// Close closes the run's sessions. It is called once after Prepare
	// succeeded, whether Go ran or failed.
	Close(ctx context.Context) error
}
