package race

// How a Race race refuses another kind of recipe's path: before its first
// write there (refuseForeign) and after each grant (alone).

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/session"
)

// alone checks, after a grant, that Path holds no other kind of recipe's
// nodes: a waiting line's (a fair lock or election on the same path, whose
// holder cannot see this race's node if it listed the line before the
// create) or one Refuse names. Checked after the create, so of two
// contenders of different kinds, the later one always sees the earlier. If
// Path is refused, or the check cannot be made, h is released (its delete
// guarded) and the error returned.
func (s *Race) alone(ctx context.Context, ep *session.Epoch, h *hold.Hold) error {
	names, err := epcall.Call(ctx, ep, func(c *zk.Conn) ([]string, error) {
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

// foreignChild returns line.ErrWrongKind if names (Path's children, listed
// after a grant) hold another kind's node (see layout.RefusesChild).
func (s *Race) foreignChild(names []string) error {
	for _, n := range names {
		if n == s.Name {
			continue
		}
		contender := ""
		if p, ok := line.ParseName(n); ok {
			contender = p.Kind
		}
		if k, ok := layout.RefusesChild(s.Layout, n, contender); ok {
			what := fmt.Sprintf("child %q", n)
			if contender != "" {
				what = fmt.Sprintf("child %q (a %s contender's node)", n, contender)
			}
			return line.WrongKind(s.Path, &layout.Mismatch{There: k, Evidence: what, Contender: contender})
		}
	}
	return nil
}

// refuseForeign checks, before this race first writes to Path (each grant
// writes its Stamp there), that Path is not another kind's (layout.Refuse:
// its data, its children) nor a part of one (line.RefusePart). It returns Path's version, for the write to be
// made at (so that Path did not change in between), or -1 when there is no
// Path yet (the create then fails, Path is made, and the check runs again).
// Once a grant's write has landed, later attempts of this value skip it
// (Race.checked): alone still checks the children after each grant.
func (s *Race) refuseForeign(ctx context.Context, ep *session.Epoch) (int32, error) {
	type read struct {
		seen layout.Seen
		st   *zk.Stat
	}
	r, err := epcall.Call(ctx, ep, func(c *zk.Conn) (read, error) {
		if err := line.RefusePart(c, s.Layout, s.Path); err != nil {
			return read{}, err
		}
		seen, st, err := line.Look(c, s.Path)
		return read{seen, st}, err
	}, nil)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return -1, nil
	case err != nil:
		return 0, err
	case len(r.seen.Data) > 0 && !strings.HasPrefix(string(r.seen.Data), s.Stamp) && layout.Refuse(s.Layout, r.seen) == nil:
		// Data no kind declares: an application's node, not a race's.
		return 0, fmt.Errorf("%w: %s records %q, another recipe's (this one writes %q there)", line.ErrWrongKind, s.Path,
			line.TruncateData(r.seen.Data), strings.TrimSpace(s.Stamp))
	}
	return r.st.Version, line.Refusal(s.Layout, s.Path, r.seen)
}
