package gopeers

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/bench"
)

var openACL = zk.WorldACL(zk.PermAll)

// zkClient is a plain go-zookeeper session.
type zkClient struct{ conn *zk.Conn }

func dialZK(ctx context.Context, spec bench.Spec) (*zkClient, error) {
	conn, err := bench.DialWith(ctx, spec.Servers(), spec.SessionTimeout(), bench.ZKDialer(spec.TLS))
	if err != nil {
		return nil, err
	}
	return &zkClient{conn: conn}, nil
}

func (c *zkClient) Children(_ context.Context, p string) (int, error) {
	_, st, err := c.conn.Exists(p)
	if err != nil || st == nil {
		return 0, err
	}
	return int(st.NumChildren), nil
}

func (c *zkClient) Close() { c.conn.Close() }

// GoZookeeper is go-zookeeper's own recipe, zk.Lock (W1, W2, W5), and for W4
// leadership as holding a zk.Lock (go-zookeeper has no election recipe; this
// is how its users elect). It has no semaphore.
func GoZookeeper() Library {
	return Library{
		Name:      "go-zk",
		Workloads: []string{bench.W1, bench.W2, bench.W4, bench.W5, bench.W7s, bench.W7l, bench.W7x, bench.W8}, // not W6: see doc.go
		Connect: func(ctx context.Context, spec bench.Spec) (Client, error) {
			c, err := dialZK(ctx, spec)
			if err != nil {
				return nil, err
			}
			return gozkClient{c}, nil
		},
		Roll: gozkRoll,
	}
}

type gozkClient struct{ *zkClient }

func (c gozkClient) NewLocker(p string) (Locker, error) {
	return gozkLock{zk.NewLock(c.conn, p, openACL)}, nil
}

func (c gozkClient) NewSemaphore(string, int) (Semaphore, error) {
	return nil, fmt.Errorf("go-zookeeper has no semaphore: %w", errors.ErrUnsupported)
}

// LockerCandidate is leadership as holding l.
func LockerCandidate(l Locker) Candidate { return lockCandidate{l} }

// LockCandidate is leadership as holding go-zookeeper's zk.Lock on p.
func LockCandidate(conn *zk.Conn, p string) Candidate {
	return lockCandidate{gozkLock{zk.NewLock(conn, p, openACL)}}
}

func (c gozkClient) NewCandidate(p, _ string) (Candidate, error) {
	l, err := c.NewLocker(p)
	return lockCandidate{l}, err
}

// gozkLock adapts zk.Lock, which takes no context: a run that must end
// closes the session, which fails a waiting Lock.
type gozkLock struct{ l *zk.Lock }

func (g gozkLock) Lock(context.Context) error   { return g.l.Lock() }
func (g gozkLock) Unlock(context.Context) error { return g.l.Unlock() }

// lockCandidate is leadership as holding a lock: campaign = lock, resign =
// unlock (what Kazoo's Election does too).
type lockCandidate struct{ l Locker }

func (c lockCandidate) Campaign(ctx context.Context) error { return c.l.Lock(ctx) }
func (c lockCandidate) Resign(ctx context.Context) error   { return c.l.Unlock(ctx) }

// Raw is the floor: the fewest requests a correct fair lock on raw
// go-zookeeper makes. Lock = create an ephemeral sequential node, list the
// children; if ours has the lowest sequence it is held; else GetW the
// predecessor and wait for it to go, then list again — except when the
// predecessor was the head of the line, whose deletion alone proves we are
// the head now (sequence numbers only grow). Unlock = delete. No protected
// create, no retries, no session handling: a baseline, not a recipe.
//
// W4 is leadership as holding this lock. W3 uses the textbook semaphore
// (every waiter watches the children): simple and correct, but not a floor —
// no herd-free semaphore is that simple.
func Raw() Library {
	return Library{
		Name:      "raw",
		Workloads: rawWorkloads, // not W8: a floor has no loss handling to compare
		Connect: func(ctx context.Context, spec bench.Spec) (Client, error) {
			c, err := dialZK(ctx, spec)
			if err != nil {
				return nil, err
			}
			return rawClient{c}, nil
		},
	}
}

// rawWorkloads is every workload but W8 and W9 (no loss handling, no election API to deploy).
var rawWorkloads = slices.DeleteFunc(slices.Clone(bench.Workloads), func(w string) bool { return w == bench.W8 || w == bench.W9 })

type rawClient struct{ *zkClient }

func (c rawClient) NewLocker(p string) (Locker, error) { return &rawLock{conn: c.conn, dir: p}, nil }

func (c rawClient) NewSemaphore(p string, max int) (Semaphore, error) {
	return &rawSemaphore{conn: c.conn, dir: p, max: max}, nil
}

func (c rawClient) NewCandidate(p, _ string) (Candidate, error) {
	return lockCandidate{&rawLock{conn: c.conn, dir: p}}, nil
}

// seqOf parses the 10-digit sequence suffix ZooKeeper appends.
func seqOf(name string) (int64, bool) {
	if len(name) < 10 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	return n, err == nil
}

type rawLock struct {
	conn *zk.Conn
	dir  string
	node string // our node's full path while we are in line or hold the lock
}

var errNotInLine = errors.New("gopeers: our node is gone from the line")

func (l *rawLock) Lock(ctx context.Context) error {
	if l.node != "" {
		return errors.New("gopeers: raw lock already held")
	}
	node, err := l.conn.Create(l.dir+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, openACL)
	if err != nil {
		return err
	}
	l.node = node
	if err := l.wait(ctx); err != nil {
		_ = l.conn.Delete(node, -1)
		l.node = ""
		return err
	}
	return nil
}

func (l *rawLock) wait(ctx context.Context) error {
	me, ok := seqOf(path.Base(l.node))
	if !ok {
		return fmt.Errorf("gopeers: no sequence in %q", l.node)
	}
	for {
		kids, _, err := l.conn.Children(l.dir)
		if err != nil {
			return err
		}
		var line []int64
		byseq := map[int64]string{}
		found := false
		for _, k := range kids {
			if s, ok := seqOf(k); ok {
				line = append(line, s)
				byseq[s] = k
				found = found || s == me
			}
		}
		if !found {
			return errNotInLine
		}
		slices.Sort(line)
		i := slices.Index(line, me)
		if i == 0 {
			return nil
		}
		predIsHead := i == 1
		_, _, ch, err := l.conn.GetW(l.dir + "/" + byseq[line[i-1]])
		switch {
		case errors.Is(err, zk.ErrNoNode):
			if predIsHead {
				return nil
			}
			continue
		case err != nil:
			return err
		}
		select {
		case ev := <-ch:
			if ev.Err != nil {
				return ev.Err
			}
			if ev.Type == zk.EventNodeDeleted && predIsHead {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (l *rawLock) Unlock(context.Context) error {
	if l.node == "" {
		return errors.New("gopeers: raw lock not held")
	}
	err := l.conn.Delete(l.node, -1)
	l.node = ""
	return err
}

// rawSemaphore is the textbook semaphore: create an ephemeral sequential
// node; a lease is held while fewer than max nodes precede ours; every waiter
// watches the children and re-lists on every change (the herd).
type rawSemaphore struct {
	conn *zk.Conn
	dir  string
	max  int
}

func (s *rawSemaphore) Acquire(ctx context.Context) (func(context.Context) error, error) {
	node, err := s.conn.Create(s.dir+"/lease-", nil, zk.FlagEphemeral|zk.FlagSequence, openACL)
	if err != nil {
		return nil, err
	}
	release := func(context.Context) error { return s.conn.Delete(node, -1) }
	me, _ := seqOf(path.Base(node))
	for {
		kids, _, ch, err := s.conn.ChildrenW(s.dir)
		if err != nil {
			_ = release(ctx)
			return nil, err
		}
		ahead := 0
		for _, k := range kids {
			if q, ok := seqOf(k); ok && q < me {
				ahead++
			}
		}
		if ahead < s.max {
			return release, nil
		}
		select {
		case ev := <-ch:
			if ev.Err != nil {
				_ = release(ctx)
				return nil, ev.Err
			}
		case <-ctx.Done():
			_ = release(ctx)
			return nil, ctx.Err()
		}
	}
}
