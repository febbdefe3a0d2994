package admin

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/session"
)

// ErrInUse: a recipe's nodes were not removed because someone holds or
// waits there (or arrived while they were being removed).
var ErrInUse = line.NewError("the recipe is in use: someone holds or waits")

// ErrNotARecipe: there is no recipe at the path (nothing, or nodes no
// kind declares), so there is nothing of a recipe's to remove.
var ErrNotARecipe = line.NewError("no recipe at the path")

// RemoveIdle removes what an idle recipe left at path (full path): a
// non-fair recipe's persistent path, a schedule's record and its election's
// path, a semaphore's limit and containers (see package layout). It refuses
// (ErrInUse) while anyone holds or waits, and removes nothing of a path
// that holds nodes no kind declares (an application's: ErrNotARecipe names
// them). The removal is one multi-op, each node at the version read, so a
// contender arriving meanwhile makes it fail as a whole (ErrInUse) rather
// than lose its place. A node that vanished between the read and the
// removal (the server's reaper removes empty containers on its own clock)
// is no arrival: the removal is planned again. It returns the kind and the
// nodes removed.
func RemoveIdle(ctx context.Context, sess *session.Session, p string) (string, []string, error) {
	if sess == nil {
		return "", nil, fmt.Errorf("rm: %w: nil session", line.ErrInvalidArgument)
	}
	var sent *removal // a removal whose multi went unanswered
	var done removal
	err := sess.Do(ctx, func(ep *session.Epoch) error {
		r, err := epcall.Call(ctx, ep, func(c *zk.Conn) (removal, error) {
			return removeIdle(c, p, &sent)
		}, nil)
		done = r
		return err
	})
	switch {
	case epcall.Abandoned(err):
		return "", nil, err // op may still run: done is not read
	case err != nil:
		return done.kind, nil, err
	}
	return done.kind, done.names, nil
}

// removeIdle is RemoveIdle's attempt on c: it plans the removal and applies
// it, again when a node vanished meanwhile. *sent is the removal last sent
// whose answer was lost (nil if none), kept across attempts: if the path is
// gone now, that removal landed.
func removeIdle(c *zk.Conn, p string, sent **removal) (removal, error) {
	for range removeAttempts {
		r, err := planRemoval(c, p)
		var nothing nothingAt
		if errors.As(err, &nothing) && *sent != nil {
			// Nothing else removes a whole recipe at once.
			return **sent, nil
		}
		if err != nil {
			return r, err
		}
		*sent = &r
		err = r.apply(c)
		if !session.OutcomeUnknown(err) {
			*sent = nil // answered: it landed, or it did not
		}
		if !errors.Is(err, errVanished) {
			return r, err
		}
	}
	return removal{}, fmt.Errorf("%w: %s kept changing while it was removed", ErrInUse, p)
}

// removeAttempts bounds how often a removal is planned again because a node
// vanished meanwhile (each vanishing is a container the reaper removed, or
// another rm: a handful at most).
const removeAttempts = 4

// errVanished: a node read for the removal was gone when it was removed.
var errVanished = errors.New("a node vanished while it was removed")

// nothingAt is ErrNotARecipe for a path with nothing at it.
type nothingAt struct{ path string }

func (e nothingAt) Error() string { return ErrNotARecipe.Error() + ": nothing at " + e.path }
func (e nothingAt) Unwrap() error { return ErrNotARecipe } // an answer: never retried

// removal is one planned removal: the recipe's kind and its nodes, deepest
// first, each to be deleted at the version read.
type removal struct {
	kind  string
	ops   []any
	names []string
	path  string
}

// planRemoval reads what is at p and plans its removal, or says why not.
func planRemoval(c *zk.Conn, p string) (removal, error) {
	seen, st, err := line.Look(c, p)
	if errors.Is(err, zk.ErrNoNode) {
		return removal{}, nothingAt{p}
	} else if err != nil {
		return removal{}, err
	}
	k, others := layout.KindOf(layout.Classify(seen))
	if k == nil {
		return removal{}, fmt.Errorf("%w: %s is no recipe's path", ErrNotARecipe, p)
	}
	r := removal{kind: k.Name, path: p}
	if len(others) > 0 {
		return r, fmt.Errorf("%w: %s mixes kinds (%s and %s): remove it by hand", ErrNotARecipe, p, k.Name, others[0].Name)
	}
	for _, ch := range seen.Children {
		i := slices.IndexFunc(k.Nodes, func(n layout.Node) bool { return n.Name == ch.Name })
		own := i >= 0
		switch {
		case ch.Contender != "" || (own && k.Nodes[i].Ephemeral): // a contender, a holder
			return r, fmt.Errorf("%w: %s has %s", ErrInUse, p, ch.Name)
		case !own:
			return r, fmt.Errorf("%w: %s has %s, which is no %s's node: remove it by hand", ErrNotARecipe, p, ch.Name, k.Name)
		}
		q := join(p, ch.Name)
		sub, _, err := c.Children(q)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return r, aclerr.Map("getChildren", q, err)
		}
		if len(sub) > 0 {
			return r, fmt.Errorf("%w: %s has %s", ErrInUse, q, path.Base(sub[0]))
		}
		ok, cst, err := c.Exists(q)
		if err != nil {
			return r, aclerr.Map("exists", q, err)
		}
		if ok {
			r.ops = append(r.ops, &zk.DeleteRequest{Path: q, Version: cst.Version})
			r.names = append(r.names, q)
		}
	}
	r.ops = append(r.ops, &zk.DeleteRequest{Path: p, Version: st.Version})
	r.names = append(r.names, p)
	return r, nil
}

// apply deletes r's nodes in one multi. A node gone (errVanished) is told
// apart from a node changed or given a child (ErrInUse: someone arrived).
func (r removal) apply(c *zk.Conn) error {
	res, err := c.Multi(r.ops...)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%s: %w", r.path, errVanished)
	case errors.Is(err, zk.ErrNotEmpty) || errors.Is(err, zk.ErrBadVersion):
		return fmt.Errorf("%w: %s changed while it was removed (someone arrived)", ErrInUse, r.path)
	}
	return aclerr.MapMulti(r.ops, res, err)
}

// join is the path of child name under dir.
func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}
