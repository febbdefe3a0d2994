package core

// How a Race race refuses another kind of recipe's path: before its first
// write there (refuseForeign) and after each grant (alone).

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/session"
)

// alone checks, after a grant, that Path holds no other kind of recipe's
// nodes: a waiting line's (a fair lock or election on the same path, whose
// holder cannot see this race's node if it listed the line before the
// create) or one Refuse names. Checked after the create, so of two
// contenders of different kinds, the later one always sees the earlier. If
// Path is refused, or the check cannot be made, h is released (its delete
// guarded) and the error returned.
func (s *Race) alone(ctx context.Context, ep *session.Epoch, h *Hold) error {
	names, err := Call(ctx, ep, func(c *zk.Conn) ([]string, error) {
		names, _, err := c.Children(s.Path)
		return names, aclerr.Map("getChildren", s.Path, err)
	}, nil)
	if err == nil {
		err = s.foreignChild(names)
	}
	if err != nil {
		s.checked.Store(false)
		_ = h.Release(ctx) // not granted after all (it lets go whatever ctx)
	}
	return err
}

// foreignChild returns ErrWrongKind if names (Path's children) hold another
// kind of recipe's node: one Refuse names, or a waiting line's.
func (s *Race) foreignChild(names []string) error {
	for _, n := range names {
		if n == s.Name {
			continue
		}
		if what, ok := s.Refuse[n]; ok {
			return fmt.Errorf("%w: %s is %s", ErrWrongKind, s.Path, what)
		}
		if _, ok := ParseName(n); ok {
			return fmt.Errorf("%w: %s has %s, a waiting line's node (a fair recipe's path)", ErrWrongKind, s.Path, n)
		}
	}
	return nil
}

// refuseForeign checks, before this race first writes to Path (each grant
// writes its Mark there), that Path is not another recipe's: its data is
// empty or this race's Mark, and no child is another kind's (foreignChild).
// It returns Path's version, for the write to be made at (so that Path did
// not change in between), or -1 when there is no Path yet (the create then
// fails, Path is made, and the check runs again). Once a grant's write has
// landed, later attempts of this value skip it (Race.checked): alone still
// checks the children after each grant.
func (s *Race) refuseForeign(ctx context.Context, ep *session.Epoch) (int32, error) {
	type read struct {
		data  []byte
		st    *zk.Stat
		names []string
	}
	r, err := Call(ctx, ep, func(c *zk.Conn) (read, error) {
		data, st, err := c.Get(s.Path)
		if err != nil {
			return read{}, aclerr.Map("getData", s.Path, err)
		}
		names, _, err := c.Children(s.Path)
		return read{data, st, names}, aclerr.Map("getChildren", s.Path, err)
	}, nil)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return -1, nil
	case err != nil:
		return 0, err
	case len(r.data) > 0 && !strings.HasPrefix(string(r.data), s.Mark):
		return 0, fmt.Errorf("%w: %s records %q, another recipe's (this one writes %q there)", ErrWrongKind, s.Path,
			truncateData(r.data), strings.TrimSpace(s.Mark))
	}
	return r.st.Version, s.foreignChild(r.names)
}

// truncateData is data for an error message: at most 64 bytes.
func truncateData(d []byte) string {
	if len(d) > 64 {
		return string(d[:64]) + "…"
	}
	return string(d)
}
