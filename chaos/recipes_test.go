package chaos_test

import (
	"context"
	"fmt"

	shold "github.com/shepherdzk/shepherd/hold"

	gozk "github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/internal/wire/ctxcall"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
)

// hold is one granted hold, whatever the recipe.
type hold struct {
	lost <-chan struct{}
	// paused returns the hold's pause signal (renewed at each resume: call
	// it again each time round); gate waits while the hold is paused (nil:
	// resumed; an error matching recipe.ErrLost: lost). Under
	// StopOnDisconnect paused never closes.
	paused  func() <-chan struct{}
	gate    func(context.Context) error
	writer  bool
	release func(context.Context) error
	// fence, if not nil, does a fenced write of the hold's token to res
	// (a znode holding the last token written), conditional on res's version
	// too, and returns the token it replaced and its own.
	fence func(ctx context.Context, s *session.Session, res string) (prev, tok int64, err error)
	// Elections (the handover fault, handover_test.go): acts, if not nil,
	// is closed when the holder stops acting for any reason (its
	// Context's end: a loss, its release, a handover), which the checker
	// judges by instead of lost; handed is closed once the hold was handed
	// over; handOver hands it over to the client with id.
	acts     <-chan struct{}
	handed   <-chan struct{}
	handOver func(ctx context.Context, id string) error
}

// client acquires a recipe's hold for one session.
type client interface {
	acquire(ctx context.Context) (*hold, error)
}

// recipeSpec is one recipe of the matrix.
type recipeSpec struct {
	name string
	max  int  // holders allowed at once
	rw   bool // read-write semantics (clients with odd index read)
	// dirs are the children of the path that hold contender nodes ("" for
	// the path itself), for the orphan check.
	dirs []string
	make func(s *session.Session, path string, i int, p session.DisconnectPolicy) (client, error)
	// foreign, when set, is the kind of a contender like Curator's that
	// the line gets: it enters, waits a little and gives up, over and over,
	// and never marks its node (see line.AwaitOptions.MarkFor): the waiters
	// behind it fall back to listing. A latch watches its predecessor as
	// Curator's LeaderLatch does, and a data change of it is a violation
	// (the one-shot watch spent, LeaderLatch would wait for ever).
	foreign string
}

var recipes = []recipeSpec{
	{name: "mutex-fair", max: 1, dirs: []string{""}, make: newMutexClient(true), foreign: recipe.KindLock},
	{name: "mutex-nonfair", max: 1, dirs: []string{""}, make: newMutexClient(false)},
	{name: "rwlock", rw: true, dirs: []string{""}, make: newRWClient},
	{name: "semaphore", max: 2, dirs: []string{"leases", "locks"}, make: newSemClient},
	{name: "election-fair", max: 1, dirs: []string{""}, make: newElectionClient(true), foreign: recipe.KindLatch},
	{name: "election-nonfair", max: 1, dirs: []string{""}, make: newElectionClient(false)},
}

func recipeByName(name string) (recipeSpec, bool) {
	for _, r := range recipes {
		if r.name == name {
			return r, true
		}
	}
	return recipeSpec{}, false
}

type mutexClient struct{ m *mutex.Mutex }

func newMutexClient(fair bool) func(*session.Session, string, int, session.DisconnectPolicy) (client, error) {
	return func(s *session.Session, path string, i int, p session.DisconnectPolicy) (client, error) {
		opts := []mutex.Option{mutex.WithData([]byte(fmt.Sprint("c", i))), mutex.WithDisconnectPolicy(p)}
		if !fair {
			opts = append(opts, mutex.NonFair())
		}
		m, err := mutex.New(s, path, opts...)
		return &mutexClient{m}, err
	}
}

func (c *mutexClient) acquire(ctx context.Context) (*hold, error) {
	if err := c.m.Lock(ctx); err != nil {
		return nil, err
	}
	h := c.m.Hold()
	return &hold{lost: h.Lost(), paused: h.Paused, gate: h.Gate, writer: true,
		release: func(ctx context.Context) error { return c.m.Unlock(ctx) },
		fence:   fenceWith(h)}, nil
}

// fenceWith writes the hold's token to res, guarded by the hold: ZooKeeper
// applies "tok after prev" atomically, so a stale holder's write would show
// as tok < prev.
func fenceWith(h *shold.Hold) func(context.Context, *session.Session, string) (int64, int64, error) {
	return func(ctx context.Context, s *session.Session, res string) (int64, int64, error) {
		tok, err := h.Token(ctx)
		if err != nil {
			return 0, 0, err
		}
		ep, err := s.Wait(ctx)
		if err != nil {
			return 0, 0, err
		}
		var data []byte
		var st *gozk.Stat
		if err := ctxcall.Run(ctx, func() error {
			var err error
			data, st, err = ep.Conn().Get(res)
			return err
		}); err != nil {
			return 0, 0, err
		}
		var prev int64
		fmt.Sscan(string(data), &prev)
		_, err = h.Fenced(ctx, fence.Raw(&gozk.SetDataRequest{Path: res, Data: []byte(fmt.Sprint(int64(tok))), Version: st.Version}))
		return prev, int64(tok), err
	}
}

type rwClient struct {
	rw     *mutex.RWMutex
	writer bool
}

func newRWClient(s *session.Session, path string, i int, p session.DisconnectPolicy) (client, error) {
	rw, err := mutex.NewRW(s, path, mutex.WithData([]byte(fmt.Sprint("c", i))), mutex.WithDisconnectPolicy(p))
	return &rwClient{rw: rw, writer: i%2 == 0}, err
}

func (c *rwClient) acquire(ctx context.Context) (*hold, error) {
	if c.writer {
		if err := c.rw.Lock(ctx); err != nil {
			return nil, err
		}
		h := c.rw.Writer().Hold()
		return &hold{lost: h.Lost(), paused: h.Paused, gate: h.Gate, writer: true, release: c.rw.Unlock}, nil
	}
	if err := c.rw.RLock(ctx); err != nil {
		return nil, err
	}
	h := c.rw.Reader().Hold()
	return &hold{lost: h.Lost(), paused: h.Paused, gate: h.Gate, release: c.rw.RUnlock}, nil
}

type semClient struct{ sem *semaphore.Semaphore }

func newSemClient(s *session.Session, path string, i int, p session.DisconnectPolicy) (client, error) {
	sem, err := semaphore.New(s, path, 2, semaphore.WithData([]byte(fmt.Sprint("c", i))), semaphore.WithDisconnectPolicy(p))
	return &semClient{sem}, err
}

func (c *semClient) acquire(ctx context.Context) (*hold, error) {
	l, err := c.sem.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &hold{lost: l.Lost(), paused: l.Paused, gate: l.Gate, release: l.Release}, nil
}

type electionClient struct{ e *election.Election }

func newElectionClient(fair bool) func(*session.Session, string, int, session.DisconnectPolicy) (client, error) {
	return func(s *session.Session, path string, i int, p session.DisconnectPolicy) (client, error) {
		opts := []election.Option{election.WithDisconnectPolicy(p)}
		if !fair {
			opts = append(opts, election.NonFair())
		}
		e, err := election.New(s, path, fmt.Sprint("c", i), opts...)
		return &electionClient{e}, err
	}
}

func (c *electionClient) acquire(ctx context.Context) (*hold, error) {
	l, err := c.e.Campaign(ctx)
	if err != nil {
		return nil, err
	}
	return &hold{lost: l.Lost(), paused: l.Paused, gate: l.Gate, writer: true, release: l.Resign,
		acts: l.Context().Done(), handed: handedOver(l), handOver: l.HandOver}, nil
}
