package semaphore

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// room waits, for the head of the line, until the leases held leave room
// for n more under the limit. Only the head of the line takes leases, so
// while it waits a change of the leases is a release: it watches the
// leases' children (one notification per release, to one client) and,
// woken, counts the release without listing again when that leaves room.
// A waiter (wait) sets its watch with its first look: it expects no room
// (the head before it most likely took the last), and a second look to set
// the watch would cost a round trip. Without wait, no room is
// recipe.ErrWouldWait.
func (s *Semaphore) room(ctx context.Context, ep *session.Epoch, n int, wait bool) error {
	watch := wait
	held := -1 // leases held, when known without listing
	for {
		var ch <-chan zk.Event
		if held < 0 {
			c, err := s.countLeases(ctx, ep, watch)
			if err != nil {
				return err
			}
			held, ch = c.n, c.ch
		}
		if held+n <= s.MaxLeases() {
			if ep.Context().Err() != nil {
				return line.ErrEpochEnded
			}
			return nil
		}
		if !wait {
			return recipe.ErrWouldWait
		}
		if ch == nil {
			watch, held = true, -1
			continue
		}
		select {
		case ev := <-ch:
			watch = false
			// A change of the leases while we head the line is a release
			// (or an expiry): at most held-1 are left. If that leaves room,
			// go without listing again; else look.
			if ev.Type == zk.EventNodeChildrenChanged && held-1+n <= s.MaxLeases() {
				held--
			} else {
				held = -1
			}
		case <-ep.Done():
			return line.ErrEpochEnded
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// counted is the number of leases held, and the watch set on them (nil
// when none was).
type counted struct {
	n  int
	ch <-chan zk.Event
}

// countLeases counts the leases held, with a watch on them if watch is set.
func (s *Semaphore) countLeases(ctx context.Context, ep *session.Epoch, watch bool) (counted, error) {
	return epcall.Call(ctx, ep, func(c *zk.Conn) (counted, error) {
		var names []string
		var ch <-chan zk.Event
		var err error
		if watch {
			names, _, ch, err = c.ChildrenW(s.leases)
		} else {
			names, _, err = c.Children(s.leases)
		}
		return counted{len(line.Sort(names, recipe.KindLease)), ch}, aclerr.Map("getChildren", s.leases, err)
	}, nil)
}
