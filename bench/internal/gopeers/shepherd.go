package gopeers

import (
	"context"

	"github.com/shepherdzk/shepherd/bench"
	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/semaphore"
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
	return &campaigner{e: e}, nil
}

// campaigner adapts Campaign's leadership result away: Lost is the last
// leadership's (used by one goroutine, right after Campaign).
type campaigner struct {
	e *election.Election
	l *election.Leadership
}

func (c *campaigner) Campaign(ctx context.Context) error {
	l, err := c.e.Campaign(ctx)
	if err == nil {
		c.l = l
	}
	return err
}
func (c *campaigner) Resign(ctx context.Context) error { return c.e.Resign(ctx) }
func (c *campaigner) Lost() <-chan struct{}            { return c.l.Lost() }

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

var shepherdWorkloads = bench.Workloads

// NewLocker is shepherd's fair mutex.
func (c shepherdClient) NewLocker(p string) (Locker, error) {
	return mutex.New(c.s, p)
}

// NewSemaphore is shepherd's semaphore.
func (c shepherdClient) NewSemaphore(p string, max int) (Semaphore, error) {
	sem, err := semaphore.New(c.s, p, max)
	if err != nil {
		return nil, err
	}
	return SemaphoreFunc(func(ctx context.Context) (func(context.Context) error, error) {
		l, err := sem.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		return l.Release, nil
	}), nil
}
