package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/wire/ctxcall"
)

// resultCodes are the errors that are ZooKeeper's answer to a request: the
// request's outcome is known. Any other error (a dropped connection, a failed
// write, a request flushed while no server was reachable) leaves the outcome
// unknown.
var resultCodes = []error{
	zk.ErrNoNode, zk.ErrNodeExists, zk.ErrBadVersion, zk.ErrNotEmpty, zk.ErrNoAuth,
	zk.ErrInvalidACL, zk.ErrBadArguments, zk.ErrNoChildrenForEphemerals, zk.ErrAPIError,
	zk.ErrAuthFailed, zk.ErrInvalidPath, zk.ErrNothing,
	zk.ErrReconfigDisabled,
}

// OutcomeUnknown reports whether err leaves a request's outcome unknown: the
// request may or may not have been applied by the server.
//
// An error that has a method OutcomeKnown() bool returning true (as recipes'
// typed errors do) is an answer too: it is never retried.
func OutcomeUnknown(err error) bool {
	if err == nil {
		return false
	}
	var k interface{ OutcomeKnown() bool }
	if errors.As(err, &k) && k.OutcomeKnown() {
		return false
	}
	for _, rc := range resultCodes {
		if errors.Is(err, rc) {
			return false
		}
	}
	return !errors.Is(err, zk.ErrSessionExpired) && !errors.Is(err, ErrLost) &&
		!errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled) &&
		!errors.Is(err, context.DeadlineExceeded)
}

// Do runs op with the current epoch and returns its result. When op fails with
// an error that leaves the outcome unknown (see OutcomeUnknown), Do waits for
// the session to be usable again and runs op again, with backoff, while the
// same ZooKeeper session lives: op must be safe to repeat. It never retries
// across sessions: once the session op first ran in is lost, Do returns an
// error matching ErrLost. It returns early with ctx.Err() when ctx ends (a
// request in flight then completes or fails on its own), and ErrClosed once the
// manager is closed. When Do returns an error, op may still be running: do
// not read what op writes.
func (s *Session) Do(ctx context.Context, op func(e *Epoch) error) error {
	var sid int64
	var b interface{ NextBackOff() time.Duration }
	for {
		e, err := s.Wait(ctx)
		if err != nil {
			return err
		}
		if sid == 0 {
			sid = e.sid
		} else if e.sid != sid {
			return fmt.Errorf("%w: session 0x%x ended during the operation", ErrLost, sid)
		}
		err = ctxcall.Run(ctx, func() error { return op(e) })
		if err == nil {
			return nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		switch {
		case closed && !errors.Is(err, ErrLost):
			return fmt.Errorf("%w (%w)", ErrClosed, err)
		case errors.Is(err, zk.ErrSessionExpired) || e.sctx.Err() != nil:
			return fmt.Errorf("%w: %w", ErrLost, err)
		case !OutcomeUnknown(err):
			return err
		}
		if b == nil {
			b = s.cfg.backoff()
		}
		d := b.NextBackOff()
		if d < 0 {
			return err
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
