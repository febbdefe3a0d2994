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
// than lose its place. It returns the kind and the nodes removed.
func RemoveIdle(ctx context.Context, sess *session.Session, p string) (string, []string, error) {
	if sess == nil {
		return "", nil, fmt.Errorf("rm: %w: nil session", line.ErrInvalidArgument)
	}
	var kind string
	var removed []string
	err := sess.Do(ctx, func(ep *session.Epoch) error {
		return epcall.Exec(ctx, ep, func(c *zk.Conn) error {
			var err error
			kind, removed, err = removeIdle(c, p)
			return err
		})
	})
	if err != nil {
		return kind, nil, err
	}
	return kind, removed, nil
}

// removeIdle is RemoveIdle's one attempt on c.
func removeIdle(c *zk.Conn, p string) (string, []string, error) {
	seen, st, err := line.Look(c, p)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil, fmt.Errorf("%w: nothing at %s", ErrNotARecipe, p)
	} else if err != nil {
		return "", nil, err
	}
	k, others := layout.KindOf(layout.Classify(seen))
	if k == nil {
		return "", nil, fmt.Errorf("%w: %s is no recipe's path", ErrNotARecipe, p)
	}
	if len(others) > 0 {
		return k.Name, nil, fmt.Errorf("%w: %s mixes kinds (%s and %s): remove it by hand", ErrNotARecipe, p, k.Name, others[0].Name)
	}
	// The recipe's own nodes, deepest first, each at the version read.
	var ops []any
	var names []string
	for _, ch := range seen.Children {
		i := slices.IndexFunc(k.Nodes, func(n layout.Node) bool { return n.Name == ch.Name })
		own := i >= 0
		switch {
		case ch.Contender != "" || (own && k.Nodes[i].Ephemeral): // a contender, a holder
			return k.Name, nil, fmt.Errorf("%w: %s has %s", ErrInUse, p, ch.Name)
		case !own:
			return k.Name, nil, fmt.Errorf("%w: %s has %s, which is no %s's node: remove it by hand", ErrNotARecipe, p, ch.Name, k.Name)
		}
		q := join(p, ch.Name)
		sub, _, err := c.Children(q)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return k.Name, nil, aclerr.Map("getChildren", q, err)
		}
		if len(sub) > 0 {
			return k.Name, nil, fmt.Errorf("%w: %s has %s", ErrInUse, q, path.Base(sub[0]))
		}
		ok, cst, err := c.Exists(q)
		if err != nil {
			return k.Name, nil, aclerr.Map("exists", q, err)
		}
		if ok {
			ops = append(ops, &zk.DeleteRequest{Path: q, Version: cst.Version})
			names = append(names, q)
		}
	}
	ops = append(ops, &zk.DeleteRequest{Path: p, Version: st.Version})
	names = append(names, p)
	_, err = c.Multi(ops...)
	switch {
	case errors.Is(err, zk.ErrNotEmpty) || errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode):
		return k.Name, nil, fmt.Errorf("%w: %s changed while it was removed (someone arrived)", ErrInUse, p)
	case err != nil:
		return k.Name, nil, aclerr.MapMulti(ops, nil, err)
	}
	return k.Name, names, nil
}

// join is the path of child name under dir.
func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}
