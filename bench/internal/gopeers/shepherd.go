package gopeers

import (
	"context"
	"errors"

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
			opts := []session.Option{session.WithSessionTimeout(spec.SessionTimeout())}
			if spec.TLS != nil {
				opts = append(opts, session.WithTLS(spec.TLS))
			}
			s, err := session.Open(ctx, spec.Servers(), opts...)
			if err != nil {
				return nil, err
			}
			return shepherdClient{s}, nil
		},
		Roll:   shepherdRoll(session.StopOnDisconnect),
		Deploy: shepherdDeploy(false),
	}
}

// ShepherdPriority is shepherd's election for W9 only, with the version as
// each candidate's priority and a leader that hands over to the best
// candidate when it stops (HandOverOnStop): a deploy's new version.
func ShepherdPriority() Library {
	lib := Shepherd()
	lib.Name, lib.Workloads, lib.Deploy = "shepherd-priority", []string{bench.W9}, shepherdDeploy(true)
	return lib
}

type shepherdClient struct{ s *session.Session }

func (c shepherdClient) NewCandidate(p, id string) (Candidate, error) {
	e, err := election.New(c.s, p, id)
	if err != nil {
		return nil, err
	}
	return CampaignCandidate(e), nil
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
		_, st, err := ep.Conn().Exists(c.s.Path(p))
		if err == nil && st != nil {
			n = int(st.NumChildren)
		}
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

// ShepherdRun is shepherd's election driven by Run, the controller-style API,
// for W4 only: resigning ends Run's ctx (Run returns once OnElected has
// returned and the node's delete is on its way), and the candidate rejoins
// by calling Run again, as a service restarting gracefully does.
func ShepherdRun() Library { return runVariant("shepherd-run", false) }

// ShepherdReturn is shepherd's election driven by Run, for W4 only:
// resigning makes OnElected return, and Run puts the candidate back in line
// by itself.
func ShepherdReturn() Library { return runVariant("shepherd-return", true) }

func runVariant(name string, byReturn bool) Library {
	lib := Shepherd()
	connect := lib.Connect
	lib.Name, lib.Workloads = name, []string{bench.W4}
	lib.Connect = func(ctx context.Context, spec bench.Spec) (Client, error) {
		c, err := connect(ctx, spec)
		if err != nil {
			return nil, err
		}
		return runClient{c.(shepherdClient), byReturn}, nil
	}
	return lib
}

type runClient struct {
	shepherdClient
	byReturn bool
}

func (c runClient) NewCandidate(p, id string) (Candidate, error) {
	e, err := election.New(c.s, p, id)
	if err != nil {
		return nil, err
	}
	return RunCandidate(e, c.byReturn), nil
}

// RunCandidate drives e through Run: Campaign starts Run (unless it runs)
// and returns once OnElected is called; Resign ends Run's ctx and waits for
// it to return, or, byReturn, makes OnElected return (Run then rejoins by
// itself).
func RunCandidate(e *election.Election, byReturn bool) Candidate {
	return &runCandidate{e: e, byReturn: byReturn, elected: make(chan struct{}, 1), ret: make(chan struct{}, 1)}
}

// CampaignCandidate drives e through Campaign and Resign.
func CampaignCandidate(e *election.Election) Candidate { return &campaigner{e: e} }

// runCandidate adapts Run to Campaign/Resign. The driver calls them in turn
// (Campaign, Resign, Campaign, ...), never at once.
type runCandidate struct {
	e        *election.Election
	byReturn bool
	elected  chan struct{}      // OnElected was called
	ret      chan struct{}      // byReturn: OnElected is to return
	cancel   context.CancelFunc // ends the running Run
	done     chan error         // the running Run's result (nil: none runs)
}

func (c *runCandidate) Campaign(ctx context.Context) error {
	if c.done == nil {
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		c.cancel, c.done = cancel, done
		go func() {
			done <- c.e.Run(rctx, election.Callbacks{OnElected: func(ctx context.Context, _ election.Term) {
				c.elected <- struct{}{}
				select {
				case <-c.ret:
				case <-ctx.Done():
				}
			}})
		}()
	}
	select {
	case <-c.elected:
		return nil
	case err := <-c.done:
		c.cancel()
		c.done = nil
		if err == nil {
			err = errors.New("Run returned before its candidate was elected")
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *runCandidate) Resign(ctx context.Context) error {
	if c.byReturn {
		c.ret <- struct{}{}
		return nil
	}
	c.cancel()
	select {
	case err := <-c.done:
		c.done = nil
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
