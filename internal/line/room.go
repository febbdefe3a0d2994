package line

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/session"
)

// Room is a gate past a waiter's turn, for the head of a semaphore's line:
// the waiter is granted only once the children of Path (of Kinds) leave room
// for Need more under Max(). Only the head of the line adds such children,
// so while it waits a change of them is a release: it watches Path's
// children (one notification per release, to one client) and, woken, counts
// the release without listing again when that leaves room.
type Room struct {
	Path  string
	Kinds []string
	Need  int
	Max   func() int
	// Held is, once AwaitWith has returned nil, the number of children of
	// Path it counted.
	Held int
}

// room waits, for a waiter whose turn has come, until opt.Room leaves
// room. A waiter (not NoWait) sets a watch with its first look: it
// expects no room (the head before it most likely took the last), and a
// second look to set the watch would cost a round trip.
func (l *Line) room(ctx context.Context, ep *session.Epoch, opt AwaitOptions) error {
	r := opt.Room
	watch := !opt.NoWait
	held := -1 // children of r.Path, when known without listing
	for {
		var ch <-chan zk.Event
		if held < 0 {
			c, err := r.count(ctx, ep, watch)
			if err != nil {
				return err
			}
			held, ch = c.n, c.ch
		}
		if held+r.Need <= r.Max() {
			if ep.Context().Err() != nil {
				return errEpochEnded
			}
			r.Held = held
			return nil
		}
		if opt.NoWait {
			return ErrWouldWait
		}
		if ch == nil {
			watch, held = true, -1
			continue
		}
		select {
		case ev := <-ch:
			watch = false
			// A change of the children while we head the line is a release
			// (or an expiry): at most held-1 are left. If that leaves room,
			// go without listing again; else look.
			if ev.Type == zk.EventNodeChildrenChanged && held-1+r.Need <= r.Max() {
				held--
			} else {
				held = -1
			}
		case <-ep.Done():
			return errEpochEnded
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// counted is the number of children of a Room's path, and the watch set on
// them (nil when none was).
type counted struct {
	n  int
	ch <-chan zk.Event
}

// count counts the children of r.Path (of r.Kinds), with a watch on them if
// watch is set.
func (r *Room) count(ctx context.Context, ep *session.Epoch, watch bool) (counted, error) {
	return Call(ctx, ep, func(c *zk.Conn) (counted, error) {
		var names []string
		var ch <-chan zk.Event
		var err error
		if watch {
			names, _, ch, err = c.ChildrenW(r.Path)
		} else {
			names, _, err = c.Children(r.Path)
		}
		return counted{len(Sort(names, r.Kinds...)), ch}, aclerr.Map("getChildren", r.Path, err)
	}, nil)
}
