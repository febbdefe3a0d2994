package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// Barrier is a double barrier of n members at one path, written on
// shepherd's recipe toolkit (package recipe) as a recipe of one's own would
// be: members enter a waiting line (recipe.Line), no one gets past Enter
// until n members have entered, and no one gets past Leave until every
// member has left.
//
// Each member's place is a hold.Hold: its Lost channel closes the moment
// the member's connection or session is lost, as a lock's does. The barrier
// opens once per path: members that arrive after it opened pass at once (use
// a new path per round).
type Barrier struct {
	sess *session.Session
	path string // full path, namespace included
	n    int
	line recipe.Line
}

// readyNode is the child the n-th member creates: the barrier is open.
const readyNode = "ready"

// NewBarrier returns a double barrier of n members at path. It does no I/O.
func NewBarrier(sess *session.Session, path string, n int) (*Barrier, error) {
	switch {
	case sess == nil:
		return nil, fmt.Errorf("barrier: %w: nil session", recipe.ErrInvalidArgument)
	case n < 1:
		return nil, fmt.Errorf("barrier: %w: %d members", recipe.ErrInvalidArgument, n)
	case !strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/"):
		return nil, fmt.Errorf("barrier: %w: %q", recipe.ErrInvalidPath, path)
	}
	full := sess.Path(path)
	return &Barrier{sess: sess, path: full, n: n, line: recipe.Line{
		Sess:   sess,
		Recipe: "barrier", // names the barrier in the observer's events
		Path:   full,
		Kind:   recipe.KindLatch,
	}}, nil
}

// Member is one member inside the barrier.
type Member struct {
	b    *Barrier
	node *recipe.Node
	hold *hold.Hold
}

// Lost is closed when the member's place may be lost (its connection or
// session was), never by the member's own Leave.
func (m *Member) Lost() <-chan struct{} { return m.hold.Lost() }

// Enter joins the barrier and waits until n members have joined. When ctx
// ends, or the connection is lost before the barrier opens, the member's node
// is removed before Enter returns the error (ctx's, or one matching
// recipe.ErrLost).
func (b *Barrier) Enter(ctx context.Context, data []byte) (*Member, error) {
	start := time.Now()
	ep, err := b.sess.Wait(ctx)
	if err != nil {
		return nil, err
	}
	// A protected create: a lost answer leaves neither orphan nor duplicate.
	node, err := b.line.Enter(ctx, ep, data)
	if err != nil {
		return nil, err
	}
	m := &Member{b: b, node: node, hold: b.line.Hold(ep, node)}
	if err := b.awaitOpen(ctx, ep, m); err != nil {
		_ = m.hold.Release(ctx) // lets go whatever ctx: the delete goes on in the background
		return nil, err
	}
	m.hold.Observe("barrier", b.path, time.Since(start), max(node.Position(), 0))
	return m, nil
}

// awaitOpen waits until the ready node exists, creating it once n members
// are in line. The ready node is looked for with a watch before the line is
// counted, so a creation after the look wakes the wait.
func (b *Barrier) awaitOpen(ctx context.Context, ep *session.Epoch, m *Member) error {
	ready := b.path + "/" + readyNode
	for {
		type look struct {
			ok bool
			ch <-chan zk.Event
		}
		// Every call through recipe.Call: it returns as soon as ctx ends.
		r, err := recipe.Call(ctx, ep, func(c *zk.Conn) (look, error) {
			ok, _, ch, err := c.ExistsW(ready)
			return look{ok, ch}, err
		}, nil)
		if err != nil {
			return b.lostOr(m, err)
		}
		if r.ok {
			return nil
		}
		line, err := b.line.List(ep)
		if err != nil {
			return b.lostOr(m, err)
		}
		if len(line) >= b.n {
			err := recipe.Exec(ctx, ep, func(c *zk.Conn) error {
				_, err := c.Create(ready, nil, 0, b.sess.ACL())
				return err
			})
			if err == nil || errors.Is(err, zk.ErrNodeExists) {
				return nil
			}
			return b.lostOr(m, err)
		}
		select {
		case <-r.ch:
		case <-m.hold.Lost():
			return fmt.Errorf("barrier %s: %w: connection lost before the barrier opened", b.path, recipe.ErrLost)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// lost reports whether the member's place was lost (Lost is closed by a
// loss only, never by the member's own release).
func (m *Member) lost() bool {
	select {
	case <-m.hold.Lost():
		return true
	default:
		return false
	}
}

// lostOr reports err as a loss if the member's place was lost meanwhile.
func (b *Barrier) lostOr(m *Member, err error) error {
	if m.lost() {
		return fmt.Errorf("barrier %s: %w: %w", b.path, recipe.ErrLost, err)
	}
	return fmt.Errorf("barrier %s: %w", b.path, err)
}

// Leave leaves the barrier and waits until every member has left. The lowest
// member in line leaves last: it waits, watching the highest, until it is
// alone; every other member removes its node, then waits, watching the
// lowest, until the line is empty. The last one removes the ready node too,
// so the path is removed by the server once empty (it is a container).
func (m *Member) Leave(ctx context.Context) error {
	b := m.b
	if m.lost() {
		_ = m.hold.Release(ctx) // its node is removed once the session is back, or with it
		return fmt.Errorf("barrier %s: %w: the member's place was lost", b.path, recipe.ErrLost)
	}
	ep, err := b.sess.Wait(ctx)
	if err != nil {
		return err
	}
	line, err := b.line.List(ep)
	if err != nil {
		return b.lostOr(m, err)
	}
	if i := recipe.Index(line, m.node.Name.Name); i != 0 {
		// Not the lowest: leave now, then wait for the lowest to go.
		if err := m.hold.Release(ctx); err != nil {
			return err
		}
		return b.awaitEmpty(ctx, ep)
	}
	// The lowest: wait until alone, watching the highest (one watch).
	err = b.line.Await(ctx, ep, m.node, func(line []recipe.Name, i int) (bool, int, bool) {
		if len(line) == 1 {
			return true, 0, false
		}
		return false, len(line) - 1, false
	})
	if err != nil {
		return b.lostOr(m, err)
	}
	err = recipe.Exec(ctx, ep, func(c *zk.Conn) error { return c.Delete(b.path+"/"+readyNode, -1) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return b.lostOr(m, err)
	}
	return m.hold.Release(ctx)
}

// awaitEmpty waits until no member is left in line, watching the lowest.
func (b *Barrier) awaitEmpty(ctx context.Context, ep *session.Epoch) error {
	for {
		line, err := b.line.List(ep)
		if errors.Is(err, zk.ErrNoNode) || err == nil && len(line) == 0 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("barrier %s: %w", b.path, err)
		}
		ch, err := recipe.Call(ctx, ep, func(c *zk.Conn) (<-chan zk.Event, error) {
			_, _, ch, err := c.GetW(b.path + "/" + line[0].Name)
			return ch, err
		}, nil)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		} else if err != nil {
			return fmt.Errorf("barrier %s: %w", b.path, err)
		}
		select {
		case <-ch:
		case <-ep.Done():
			return fmt.Errorf("barrier %s: %w: connection lost while waiting for the others to leave", b.path, recipe.ErrLost)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
