package line

// How a recipe refuses another kind's path, from the layouts package
// layout declares: before its first write there (PathCheck, RefusePath), and
// in each listing of its line after its own create (Line.sorted).

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/wire/zkpath"
	"github.com/shepherdzk/shepherd/session"
)

// Look reads what is at path for package layout: its data and its
// children, each with its contender kind (if its name parses) and, for a
// name two kinds use (layout.Ambiguous), whether it is a session's node.
// It returns path's Stat too (nil, with zk.ErrNoNode, when there is none).
func Look(c *zk.Conn, path string) (layout.Seen, *zk.Stat, error) {
	data, st, err := c.Get(path)
	if err != nil {
		return layout.Seen{}, nil, aclerr.Map("getData", path, err)
	}
	names, _, err := c.Children(path)
	if err != nil {
		return layout.Seen{}, nil, aclerr.Map("getChildren", path, err)
	}
	seen := layout.Seen{Data: data, Children: make([]layout.Child, 0, len(names))}
	for _, n := range names {
		ch := layout.Child{Name: n}
		if p, ok := ParseName(n); ok {
			ch.Contender = p.Kind
		}
		if layout.Ambiguous(n) {
			ok, cst, err := c.Exists(join(path, n))
			if err != nil {
				return layout.Seen{}, nil, aclerr.Map("exists", join(path, n), err)
			}
			if !ok {
				continue // gone meanwhile
			}
			ch.Ephemeral = cst.EphemeralOwner != 0
		}
		seen.Children = append(seen.Children, ch)
	}
	return seen, st, nil
}

// join is the path of child name under dir.
func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// WrongKind is the refusal of path, which m says is another kind's: an
// error matching ErrWrongKind, and ErrForeignRecipe too when what is there
// is a line's contender (another recipe's nodes this line cannot share); m
// is in its chain (errors.As).
func WrongKind(path string, m *layout.Mismatch) error {
	if m.Contender != "" {
		return fmt.Errorf("%w (%w): %s: %w (%s)", ErrWrongKind, ErrForeignRecipe, path, m, Library(m.Contender))
	}
	return fmt.Errorf("%w: %s: %w", ErrWrongKind, path, m)
}

// Refusal is layout.Refuse's answer for seen at path, as an error (nil: the
// path is free, or kind's).
func Refusal(kind *layout.Recipe, path string, seen layout.Seen) error {
	if m := layout.Refuse(kind, seen); m != nil {
		return WrongKind(path, m)
	}
	return nil
}

// PathCheck refuses, once per recipe value, a path that another kind of
// recipe keeps (see package layout), before the value's first write there:
// whatever that kind leaves there, held, idle or only a record. A path
// found free or of Recipe is not read again by the same value; later
// arrivals of another kind are refused by them (they look before writing),
// and a line's listing after each create sees one that came at the same
// moment.
type PathCheck struct {
	Recipe *layout.Recipe
	// Path is the recipe's path when a line checks it on the recipe's
	// behalf from another path (a semaphore's waiters' line, under it); ""
	// for the line's own path.
	Path string
	done atomic.Bool
}

// NewPathCheck is the check of a recipe value of kind.
func NewPathCheck(kind *layout.Recipe) *PathCheck { return &PathCheck{Recipe: kind} }

// Check reads the recipe's path (p.Path, or path) in ep, unless done
// before, and returns an error matching ErrWrongKind when another kind's
// evidence is there, or when the path is a part of another kind's layout
// (its parent's data stamps that kind, which keeps a child of the path's
// name: see RefusePart). A missing path is free.
func (p *PathCheck) Check(ctx context.Context, ep *session.Epoch, path string) error {
	if p == nil || p.Recipe == nil || p.done.Load() {
		return nil
	}
	if p.Path != "" {
		path = p.Path
	}
	err := epcall.Exec(ctx, ep, func(c *zk.Conn) error {
		if err := RefusePart(c, p.Recipe, path); err != nil {
			return err
		}
		seen, _, err := Look(c, path)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := Refusal(p.Recipe, path, seen); err != nil {
			return err
		}
		return refuseInParts(c, p.Recipe, path)
	})
	if err == nil {
		p.done.Store(true)
	}
	return err
}

// RefusePart refuses path, for a recipe of kind, when it is a part of
// another recipe's layout, as its parent's data says (see
// layout.RefusePart): a semaphore's "leases" or "slots", a schedule's
// record. A parent that is missing, or that this session may not read,
// claims nothing. A parent that is a session's node (a holder's) is
// ErrInvalidArgument: nothing can be made under it. Every check before a
// recipe's first write calls it (PathCheck.Check, and the non-fair
// race's).
func RefusePart(c *zk.Conn, kind *layout.Recipe, path string) error {
	parent, data, st, err := ReadParent(c, path)
	switch {
	case err != nil || st == nil:
		return err
	case st.EphemeralOwner != 0:
		return fmt.Errorf("%w: %s: its parent is a session's node (a holder's or a waiter's, ephemeral), "+
			"which ZooKeeper lets have no children", ErrInvalidArgument, path)
	}
	if m := layout.RefusePart(kind, data, path[len(parent)+1:]); m != nil {
		return WrongKind(path, m)
	}
	return nil
}

// ReadParent reads the data of path's parent, for what it says of path
// (layout.PartOf): st is nil when path is directly under the root, or its
// parent is missing or one this session may not read (it then says
// nothing).
func ReadParent(c *zk.Conn, path string) (parent string, data []byte, st *zk.Stat, err error) {
	parent = zkpath.Parent(path)
	if parent == "/" {
		return parent, nil, nil, nil
	}
	data, st, err = c.Get(parent)
	switch {
	case errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNoAuth):
		return parent, nil, nil, nil
	case err != nil:
		return parent, nil, nil, aclerr.Map("getData", parent, err)
	}
	return parent, data, st, nil
}

// refuseInParts refuses path when one of the containers kind keeps under
// it (a semaphore's "locks" and "leases": layout.Node.Holds) holds another
// kind's nodes already: a lock made at /app/leases before a semaphore at
// /app would share its container with the semaphore's leases. A missing
// container is free.
func refuseInParts(c *zk.Conn, kind *layout.Recipe, path string) error {
	for i, n := range kind.Nodes {
		if len(n.Holds) == 0 {
			continue
		}
		q := join(path, n.Name)
		names, _, err := c.Children(q)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		} else if err != nil {
			return aclerr.Map("getChildren", q, err)
		}
		seen := layout.Seen{}
		for _, name := range names {
			ch := layout.Child{Name: name}
			if pn, ok := ParseName(name); ok {
				ch.Contender = pn.Kind
			}
			seen.Children = append(seen.Children, ch)
		}
		if m := layout.RefuseInPart(kind, &kind.Nodes[i], seen); m != nil {
			return WrongKind(path, m)
		}
	}
	return nil
}

// ClaimPath checks path for a recipe of kind (see PathCheck), waiting for
// the session to be usable, then records kind's Stamp in its data: creating
// it (a container, its parents too) with the stamp, or writing the stamp to
// an empty path at the version read. For a recipe whose path carries its
// stamp and whose first write is not a line's (a schedule).
func ClaimPath(ctx context.Context, sess *session.Session, kind *layout.Recipe, path string) error {
	p := NewPathCheck(kind)
	return sess.Do(ctx, func(ep *session.Epoch) error {
		if err := p.Check(ctx, ep, path); err != nil {
			return err
		}
		return epcall.Exec(ctx, ep, func(c *zk.Conn) error { return stamp(sess, ep, c, kind, path) })
	})
}

// stamp records kind's Stamp in path's data (see ClaimPath).
func stamp(sess *session.Session, ep *session.Epoch, c *zk.Conn, kind *layout.Recipe, path string) error {
	for range ensureRounds {
		data, st, err := c.Get(path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			if err := EnsurePath(sess, ep, zkpath.Parent(path)); err != nil {
				return err
			}
			_, err = c.CreateContainer(path, []byte(kind.Stamp), zk.FlagContainer, sess.ACL())
			if err == nil {
				return nil
			}
			if !errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, zk.ErrNoNode) {
				return aclerr.Map("create", path, err)
			}
		case err != nil:
			return aclerr.Map("getData", path, err)
		case string(data) == kind.Stamp:
			return nil
		case len(data) > 0:
			return fmt.Errorf("%w: %s records %q (this recipe writes %q there)", ErrWrongKind, path, TruncateData(data), kind.Stamp)
		default:
			_, err = c.Set(path, []byte(kind.Stamp), st.Version)
			if err == nil {
				return nil
			}
			if !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNoNode) {
				return aclerr.Map("setData", path, err)
			}
		}
	}
	return fmt.Errorf("%w: %s kept changing while its stamp was written", ErrWrongKind, path)
}

// TruncateData is data for an error message: at most 64 bytes.
func TruncateData(d []byte) string {
	if len(d) > 64 {
		return string(d[:64]) + "…"
	}
	return string(d)
}
