package gocron

import (
	"context"
	"errors"
	"fmt"
	"sync"

	gocronv2 "github.com/go-co-op/gocron/v2"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/session"
)

// Errors, matched with errors.Is.
var (
	// ErrNotLeader: IsLeader's instance does not lead now.
	ErrNotLeader = errors.New("gocron: not the leader")
	// ErrPaused: the instance leads, but its connection to ZooKeeper is
	// lost (PauseOnDisconnect): it must not act until it resumes.
	ErrPaused = errors.New("gocron: leadership paused")
	// ErrAlreadyRun: Lock's run was claimed already, by this instance or
	// another.
	ErrAlreadyRun = errors.New("gocron: run already claimed")
	// ErrUnknownJob: Lock was asked for a job the Locker has no times for.
	ErrUnknownJob = errors.New("gocron: no JobEvery or JobCron for this job")
	// ErrInvalidArgument: a bad argument to a constructor or option.
	ErrInvalidArgument = errors.New("gocron: invalid argument")
)

// Elector is a gocron Elector backed by a shepherd election.
type Elector struct {
	e      *election.Election
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	err    error // Run's error, once it returned
}

var _ gocronv2.Elector = (*Elector)(nil)

// StartElector campaigns for the election at path (see package election)
// as candidate id, until ctx ends or Close. opts are the election's (e.g.
// election.WithDisconnectPolicy(session.PauseOnDisconnect)).
func StartElector(ctx context.Context, sess *session.Session, path, id string, opts ...election.Option) (*Elector, error) {
	e, err := election.New(sess, path, id, opts...)
	if err != nil {
		return nil, fmt.Errorf("gocron: %w", err)
	}
	rctx, cancel := context.WithCancel(ctx)
	el := &Elector{e: e, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(el.done)
		err := e.Run(rctx, election.Callbacks{OnElected: func(ctx context.Context, _ election.Term) { <-ctx.Done() }})
		el.mu.Lock()
		el.err = err
		el.mu.Unlock()
	}()
	return el, nil
}

// IsLeader implements gocron's Elector: nil only while this instance leads,
// its leadership not paused, and confirmed on the server (Validate: a sync
// and a read, one round trip); ErrNotLeader or ErrPaused otherwise.
func (el *Elector) IsLeader(ctx context.Context) error {
	l := el.e.Leadership()
	switch {
	case l == nil || l.Context().Err() != nil:
		return ErrNotLeader
	case l.Hold().IsPaused():
		return ErrPaused
	}
	// The check ends as soon as the leadership pauses or ends: a check that
	// waits for a lost connection would hold the run up for nothing.
	vctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(l.Context(), func() { cancel(ErrNotLeader) })
	defer stop()
	done := make(chan struct{})
	defer close(done)
	paused := l.Paused()
	go func() {
		select {
		case <-paused:
			cancel(ErrPaused)
		case <-done:
		}
	}()
	err := l.Validate(vctx)
	switch cause := context.Cause(vctx); {
	case err == nil && l.Hold().IsPaused():
		return ErrPaused
	case err == nil:
		return nil
	case errors.Is(cause, ErrPaused), errors.Is(cause, ErrNotLeader):
		return cause
	}
	return fmt.Errorf("%w: %w", ErrNotLeader, err)
}

// Close leaves the election (a leader resigns) and waits for it.
func (el *Elector) Close() error {
	el.cancel()
	<-el.done
	el.mu.Lock()
	defer el.mu.Unlock()
	return el.err
}
