package gopeers

import (
	"context"
	"errors"
	"fmt"

	"github.com/shepherdzk/shepherd/bench"
	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/session"
)

// Shepherd is shepherd itself, through the same drivers as every Go peer.
func Shepherd() Library {
	return Library{
		Name:      "shepherd",
		Workloads: shepherdWorkloads,
		Connect: func(ctx context.Context, spec bench.Spec) (Client, error) {
			s, err := session.Open(ctx, spec.Servers(), session.WithSessionTimeout(spec.SessionTimeout()))
			if err != nil {
				return nil, err
			}
			return shepherdClient{s}, nil
		},
	}
}

type shepherdClient struct{ s *session.Session }

func (c shepherdClient) NewCandidate(p, id string) (Candidate, error) {
	e, err := election.New(c.s, p, id)
	if err != nil {
		return nil, err
	}
	return campaigner{e}, nil
}

// campaigner adapts Campaign's term result away.
type campaigner struct{ e *election.Election }

func (c campaigner) Campaign(ctx context.Context) error { _, err := c.e.Campaign(ctx); return err }
func (c campaigner) Resign(ctx context.Context) error   { return c.e.Resign(ctx) }

func (c shepherdClient) Children(ctx context.Context, p string) (int, error) {
	n := 0
	err := c.s.Do(ctx, func(ep *session.Epoch) error {
		names, _, err := ep.Conn().Children(c.s.Path(p))
		n = len(names)
		return err
	})
	return n, err
}

func (c shepherdClient) Close() { c.s.Close() }

var errNotYet = errors.New("not wired yet")

var shepherdWorkloads = []string{bench.W4}

func (c shepherdClient) NewLocker(string) (Locker, error) {
	return nil, fmt.Errorf("shepherd mutex: %w: %w", errNotYet, errors.ErrUnsupported)
}

func (c shepherdClient) NewSemaphore(string, int) (Semaphore, error) {
	return nil, fmt.Errorf("shepherd semaphore: %w: %w", errNotYet, errors.ErrUnsupported)
}
