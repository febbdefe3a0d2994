package semaphore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/wire/zkpath"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// The semaphore's path and its locks and leases children are container
// nodes: once no one holds or waits, the server removes the leases and locks
// (each has had children, has none left), then the path. The limit recorded
// in the path's data goes with it; the next client to use the path creates
// it again with its own limit. So a client's knowledge of the limit (the
// version its take checks) is trusted only while the path is pinned: while
// its own node waits in line, or one of its leases is held (see fresh). A
// path removed and created again starts at version 0 again, so a version
// alone cannot tell two of its lives apart.

// ensureLocks creates the locks child when Enter finds it missing, and the
// whole semaphore (parents, the path with this client's limit, locks and
// leases) when the path is missing too.
func (s *Semaphore) ensureLocks(ep *session.Epoch) error {
	// A Kazoo Semaphore's path counts every child as a lease: refuse it
	// before adding one.
	if data, _, err := ep.Conn().Get(s.path); err == nil && isDecimal(data) {
		return kazooSemaphore(s.path, data)
	}
	_, err := ep.Conn().CreateContainer(s.locks.Path, nil, zk.FlagContainer, s.sess.ACL())
	if err == nil || errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	if !errors.Is(err, zk.ErrNoNode) {
		return aclerr.Map("create", s.locks.Path, err)
	}
	return s.create(ep)
}

// create creates the semaphore's path with this client's limit recorded,
// and its children, as containers (and the parents, see line.EnsurePath).
// A path created meanwhile by another client is left as it is (ensureMeta
// checks its limit).
func (s *Semaphore) create(ep *session.Epoch) error {
	s.mu.Lock()
	s.known = false // a new life of the path: its record is read again
	s.mu.Unlock()
	var err error
	for round := 0; round < 10; round++ {
		if err = line.EnsurePath(s.sess, ep, zkpath.Parent(s.path)); err != nil {
			return err
		}
		_, err = ep.Conn().CreateContainer(s.path, limitData(s.MaxLeases()), zk.FlagContainer, s.sess.ACL())
		if errors.Is(err, zk.ErrNoNode) {
			continue // a parent was removed meanwhile
		}
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		if err != nil {
			return aclerr.Map("create", s.path, err)
		}
		// A container just created has had no child: the server does not
		// remove it before its children exist.
		return s.ensureChildren(ep)
	}
	return err
}

// ensureChildren creates the locks and leases children that are missing.
func (s *Semaphore) ensureChildren(ep *session.Epoch) error {
	for _, c := range []string{locksChild, leasesChild} {
		_, err := ep.Conn().CreateContainer(s.path+"/"+c, nil, zk.FlagContainer, s.sess.ACL())
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return aclerr.Map("create", s.path+"/"+c, err)
		}
	}
	return nil
}

// fresh reports whether the limit read last is still the path's: it was
// read, and a lease of this client has been held since, so the path has not
// been removed and created again.
func (s *Semaphore) fresh() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	live := s.pins[:0]
	for _, h := range s.pins {
		if h.Valid() {
			live = append(live, h)
		}
	}
	clear(s.pins[len(live):])
	s.pins = live
	return s.known && len(live) > 0
}

// pin records a lease granted in the life of the path whose limit was read.
func (s *Semaphore) pin(h *hold.Hold) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pins = append(s.pins, h)
}

// ensureMeta reads (or records) the limit at the path and checks it against
// ours. One round trip once the path exists.
func (s *Semaphore) ensureMeta(ep *session.Epoch) error {
	for attempt := 0; attempt < 5; attempt++ {
		data, st, err := ep.Conn().Get(s.path)
		if errors.Is(err, zk.ErrNoNode) {
			if err := s.create(ep); err != nil {
				return err
			}
			continue
		} else if err != nil {
			return aclerr.Map("getData", s.path, err)
		}
		if len(data) == 0 {
			// An empty node: adopt it, unless it is another recipe's.
			if err := s.adopt(ep, st.Version); err != nil {
				return err
			}
			continue
		}
		recorded, ok := parseLimit(data)
		if !ok && isDecimal(data) {
			return kazooSemaphore(s.path, data)
		}
		if !ok {
			return fmt.Errorf("semaphore: %w: %s is not a semaphore's path (data %q)", ErrWrongKind, s.path, truncate(data))
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if recorded != s.max {
			s.known = false
			return fmt.Errorf("semaphore %s: %w: recorded %d, this client %d", s.path, ErrMaxLeasesMismatch, recorded, s.max)
		}
		s.version, s.known = st.Version, true
		return nil
	}
	return fmt.Errorf("semaphore %s: %w: the limit kept changing while it was read or recorded", s.path, ErrConflict)
}

// adopt records this client's limit in the path's data, empty at version
// (a write at another version is left to the next read), and creates the
// children, unless the path is another kind's (see package layout: a
// line's node, a non-fair lock's, a schedule's record).
func (s *Semaphore) adopt(ep *session.Epoch, version int32) error {
	seen, _, err := line.Look(ep.Conn(), s.path)
	if err != nil {
		return err
	}
	if m := layout.Refuse(layout.Semaphore, seen); m != nil {
		return fmt.Errorf("semaphore: %w: %s: %v", ErrWrongKind, s.path, m)
	}
	_, err = ep.Conn().Multi(
		&zk.SetDataRequest{Path: s.path, Data: limitData(s.MaxLeases()), Version: version})
	if err != nil && !errors.Is(err, zk.ErrBadVersion) {
		return aclerr.Map("setData", s.path, err)
	}
	if err := s.ensureChildren(ep); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

// SetMaxLeases changes the limit recorded at the path, from this client's
// limit to max: a versioned change that fails with ErrConflict if the limit
// changed meanwhile, and ErrMaxLeasesMismatch if this client's limit is not
// the recorded one. Other clients then get ErrMaxLeasesMismatch until they
// use the new limit. Leases held beyond a lowered limit are not revoked; no
// new lease is granted until the count is below it. A change whose answer is
// lost with the connection is recognised once the connection is back: if
// the path records max, the change is done.
func (s *Semaphore) SetMaxLeases(ctx context.Context, max int) error {
	if max < 1 || max > MaxLeasesLimit {
		return fmt.Errorf("semaphore: %w: maxLeases %d (want 1..%d)", ErrInvalidArgument, max, MaxLeasesLimit)
	}
	sent := false // a change was sent whose answer was lost
	return s.sess.Do(ctx, func(ep *session.Epoch) error {
		// The path is a container: the server removes it once nobody uses
		// it, and ensureMeta creates it again. A change that finds it gone
		// goes round again (a few times: it cannot vanish while in use).
		for gone := 0; ; gone++ {
			if sent {
				// Did it land? The path records max: ours, or the same
				// change by someone else; either way the limit is max now.
				// Gone: nobody uses the path, so the change is made anew.
				landed, err := s.records(ep, max)
				if err != nil {
					return err
				}
				if landed {
					s.useMax(max)
					return nil
				}
			}
			if err := s.ensureMeta(ep); err != nil {
				return err
			}
			s.mu.Lock()
			version := s.version
			s.mu.Unlock()
			_, err := ep.Conn().Set(s.path, limitData(max), version)
			sent = sent || session.OutcomeUnknown(err)
			if errors.Is(err, zk.ErrNoNode) && gone < 5 {
				continue
			}
			if errors.Is(err, zk.ErrBadVersion) {
				return fmt.Errorf("semaphore %s: %w", s.path, ErrConflict)
			}
			if err != nil {
				return aclerr.Map("setData", s.path, err)
			}
			s.useMax(max)
			return nil
		}
	})
}

// records reports whether the path records the limit max (false if it is
// gone).
func (s *Semaphore) records(ep *session.Epoch, max int) (bool, error) {
	data, _, err := ep.Conn().Get(s.path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return false, err
	}
	recorded, ok := parseLimit(data)
	return err == nil && ok && recorded == max, nil
}

// useMax makes max this client's limit, after a change of the recorded
// limit to max: the record is read again before the next take.
func (s *Semaphore) useMax(max int) {
	s.mu.Lock()
	s.max, s.known = max, false
	s.mu.Unlock()
}

func limitData(max int) []byte { return []byte(layout.SemaphoreStamp + strconv.Itoa(max)) }

// parseLimit returns the limit recorded in data.
func parseLimit(data []byte) (int, bool) {
	rest, ok := strings.CutPrefix(string(data), layout.SemaphoreStamp)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// kazooSemaphore is the refusal of a Kazoo Semaphore's path.
func kazooSemaphore(path string, data []byte) error {
	return fmt.Errorf("semaphore: %w (%w): %s is a Kazoo Semaphore's path (max_leases %s in its data): "+
		"Kazoo counts every child of the path as a lease and sees none of shepherd's", ErrWrongKind,
		recipe.ErrForeignRecipe, path, truncate(data))
}

// isDecimal reports whether data is a decimal number, as a Kazoo
// Semaphore's path holds its max_leases.
func isDecimal(data []byte) bool {
	if len(data) == 0 || len(data) > 10 {
		return false
	}
	for _, c := range data {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
