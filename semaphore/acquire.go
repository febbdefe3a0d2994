package semaphore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/construct"
	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/observe"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// errRecheck: the limit's version changed; read it again.
var errRecheck = errors.New("semaphore: limit changed")

// errNoLeases: the leases container is gone; create it again.
var errNoLeases = errors.New("semaphore: no leases child")

// acquire waits in the line through the contender loop (see
// line.Contend): the semaphore composes the fair line on locks/, as a lock
// does, and its head waits for n leases to be free (see room) and takes
// them with a multi-op that consumes its node (see take). A head that had
// waited marks its node in that multi-op (see
// line.AwaitOptions.MarkOnRelease): the next in line then takes over from
// it without listing the line.
func (s *Semaphore) acquire(ctx context.Context, n int, wait bool) (*Lease, error) {
	if s.sess == nil {
		return nil, construct.NotMade("semaphore", "a Semaphore not made by New")
	}
	if n < 1 || n > s.MaxLeases() {
		return nil, fmt.Errorf("semaphore %s: %w: n = %d (want 1..maxLeases %d)", s.path, ErrInvalidArgument, n, s.MaxLeases())
	}
	l, err := line.Contend(ctx, &s.locks, line.Entry{
		Kind:    recipe.KindLock,
		Data:    s.data,
		Options: line.AwaitOptions{NoWait: !wait, MarkOnRelease: true},
	}, &acquirer{s: s, n: n, wait: wait, start: time.Now()})
	if errors.Is(err, recipe.ErrWouldWait) {
		return nil, ErrNoLease
	}
	return l, err
}

// An acquirer's repairs are bounded: the limit read again after it changed
// under a take (maxRechecks), the leases container made again
// (maxRemakes). Past them, the error is returned.
const (
	maxRechecks = 100
	maxRemakes  = 10
)

// acquirer is one acquire's Driver (and Fixer) of the contender loop: the
// head of the line waits for room and takes its leases.
type acquirer struct {
	line.Head
	s                 *Semaphore
	n                 int
	wait              bool
	start             time.Time
	rechecks, remakes int // repairs so far
}

// Prepare reads the limit (and records it the first time) before each wait
// unless it is fresh. Our node is in line first: it pins the path (a
// container) before the limit is read, so the limit read is the one of the
// path our leases are taken in. Its writes are idempotent: a late one needs
// no undo.
func (a *acquirer) Prepare(ctx context.Context, ep *session.Epoch) error {
	if a.s.fresh() {
		return nil
	}
	return epcall.Exec(ctx, ep, func(*zk.Conn) error { return a.s.ensureMeta(ep) })
}

// Fix repairs what a wait or a take reported: a limit changed under the
// take (read it again), the leases container removed while no lease was
// held (our node still pins the path and its locks: make it again).
func (a *acquirer) Fix(ctx context.Context, ep *session.Epoch, err error) error {
	switch {
	case errors.Is(err, errRecheck) && a.rechecks < maxRechecks:
		a.rechecks++
		a.s.mu.Lock()
		a.s.known = false
		a.s.mu.Unlock()
		return nil
	case (errors.Is(err, zk.ErrNoNode) || errors.Is(err, errNoLeases)) && a.remakes < maxRemakes:
		a.remakes++
		return epcall.Exec(ctx, ep, func(*zk.Conn) error { return a.s.ensureChildren(ep) })
	}
	return err
}

// Grant, at the head of the line, waits for n leases to be free (see room),
// then takes them (see granted).
func (a *acquirer) Grant(ctx context.Context, ep *session.Epoch, own *line.Node) (*Lease, error) {
	if err := a.s.room(ctx, ep, a.n, a.wait); err != nil {
		return nil, err
	}
	return a.s.granted(ctx, ep, own, a.n, a.start)
}

// granted takes n leases for own, at the head of the line with n free (see
// take), and their slots (WithSlots). Slots not taken, the lease is given
// back and own is spent (see line.Spent): the contender enters again.
func (s *Semaphore) granted(ctx context.Context, ep *session.Epoch, own *line.Node, n int, start time.Time) (*Lease, error) {
	position := own.Position
	l, err := s.take(ctx, ep, own, n)
	if err != nil {
		return nil, err
	}
	s.pin(l.hold) // own is consumed by the multi-op
	if s.slots {
		if err := s.claimSlots(ctx, ep, l); err != nil {
			return nil, line.Spent(err) // the lease was given back
		}
	}
	l.hold.Observe("semaphore", s.path, time.Since(start), max(position, 0))
	return l, nil
}

// take, as the head of the line with n leases free, takes them in one
// multi-op that also removes own from the line (fenced by the limit's
// version; see line.Node.Consume). If ctx ends with the multi-op in
// flight, leases it created after all are removed.
func (s *Semaphore) take(ctx context.Context, ep *session.Epoch, own *line.Node, n int) (*Lease, error) {
	guid := line.NewGUID()
	ops := s.takeOps(guid, n)
	t, err := epcall.Call(ctx, ep, func(c *zk.Conn) (taken, error) {
		return s.multiTake(c, ep, own, guid, ops, n), nil
	}, func(t taken, _ error) {
		// The caller gave up: leases taken after all are held by no one.
		if t.paths != nil {
			s.locks.Delete(ep, t.paths...)
		} else if session.OutcomeUnknown(t.err) {
			s.cleanupLeases(ep, guid)
		}
	})
	if err != nil {
		return nil, err
	}
	if t.paths != nil {
		return s.grant(ep, t.paths), nil
	}
	return nil, s.notTaken(ep, guid, t, n)
}

// taken is what take's multi-op did.
type taken struct {
	paths []string // the leases created (nil: none known)
	res   []zk.MultiResponse
	err   error
}

// takeOps is take's multi-op before own's removal (see line.Node.Consume):
// the check of the limit's version and n creates of leases named with guid.
func (s *Semaphore) takeOps(guid string, n int) []any {
	prefix := s.leases + "/" + line.ProtectedPrefix(guid, recipe.KindLease)
	s.mu.Lock()
	version := s.version
	s.mu.Unlock()
	ops := []any{&zk.CheckVersionRequest{Path: s.path, Version: version}}
	for range n {
		ops = append(ops, &zk.CreateRequest{Path: prefix, Data: s.data, Acl: s.sess.ACL(),
			Flags: zk.FlagEphemeral | zk.FlagSequence})
	}
	return ops
}

// multiTake sends ops (see takeOps) and own's removal on c. An answer lost
// with the connection is looked up by guid: leases found are taken.
func (s *Semaphore) multiTake(c *zk.Conn, ep *session.Epoch, own *line.Node, guid string, ops []any, n int) taken {
	sent, res, err := own.Consume(c, ops...)
	if err == nil {
		paths := make([]string, n)
		for i := range n {
			paths[i] = res[1+i].String
		}
		return taken{paths: paths}
	}
	if session.OutcomeUnknown(err) {
		// Did it land? Look for our leases by guid.
		if paths, ok := s.findLeases(ep, guid); ok {
			return taken{paths: paths}
		}
	}
	return taken{res: res, err: aclerr.MapMulti(sent, res, err)}
}

// notTaken is the error of a multi-op of take that took no lease (t), by
// the op that failed.
func (s *Semaphore) notTaken(ep *session.Epoch, guid string, t taken, n int) error {
	res := t.res
	switch err := t.err; {
	case len(res) > 0 && (errors.Is(res[0].Error, zk.ErrBadVersion) || errors.Is(res[0].Error, zk.ErrNoNode)):
		return errRecheck // the limit changed
	case len(res) > n+1 && errors.Is(res[n+1].Error, zk.ErrNoNode):
		return recipe.ErrNodeGone // our place is gone: our session too
	case len(res) > 1 && errors.Is(res[1].Error, zk.ErrNoNode):
		return errNoLeases // the leases container was removed since we counted
	case session.OutcomeUnknown(err):
		// Not seen: if the multi landed after all, its leases must not
		// stay behind, held by no one.
		go s.cleanupLeases(ep, guid)
		return err
	default:
		return err
	}
}

// findLeases looks for the leases a multi-op with guid created in ep's
// session, once the connection is back.
func (s *Semaphore) findLeases(ep *session.Epoch, guid string) ([]string, bool) {
	l := line.Line{Sess: s.sess, Recipe: "semaphore", Path: s.leases}
	for i := 0; i < 3; i++ {
		p, ok, err := l.FindOwn(ep, guid)
		if err == nil {
			if !ok {
				return nil, false
			}
			names, _, err := ep.Conn().Children(s.leases)
			if err != nil {
				return nil, false
			}
			var paths []string
			for _, nm := range names {
				if x, ok := line.ParseName(nm); ok && x.GUID == guid {
					paths = append(paths, s.leases+"/"+nm)
				}
			}
			_ = p
			return paths, true
		}
		cur, werr := s.sess.Wait(ep.SessionContext())
		if werr != nil || cur.SessionID() != ep.SessionID() {
			return nil, false
		}
		ep = cur
	}
	return nil, false
}

// cleanupLeases removes leases a multi-op with guid may have created in ep's
// session without anyone learning of it: it looks a few times once the
// session is usable (bounded), and deletes what it finds.
func (s *Semaphore) cleanupLeases(ep *session.Epoch, guid string) {
	looked := 0
	for i := 0; i < 50 && looked < 3; i++ {
		ctx, cancel := context.WithTimeout(ep.SessionContext(), s.sess.Timeout()+5*time.Second)
		cur, err := s.sess.Wait(ctx)
		cancel()
		if err != nil || cur.SessionID() != ep.SessionID() {
			return // the session is gone: so are its leases
		}
		names, _, err := cur.Conn().Children(s.leases)
		if err == nil {
			looked++
			var paths []string
			for _, nm := range names {
				if x, ok := line.ParseName(nm); ok && x.GUID == guid {
					paths = append(paths, s.leases+"/"+nm)
				}
			}
			if len(paths) > 0 {
				s.sess.Report(observe.RecipeEvent{Kind: observe.OrphanCleanup, Recipe: "semaphore", Path: paths[0], SessionID: ep.SessionID()})
				<-s.locks.Delete(cur, paths...)
				return
			}
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-cur.SessionDone():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
