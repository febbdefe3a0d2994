// Package epcall runs ZooKeeper calls on a session epoch's connection,
// bounded by the caller's ctx (go-zookeeper's requests have no deadline of
// their own). The hold, the line and the race all call through it.
package epcall

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/wire/ctxcall"
	"github.com/shepherdzk/shepherd/session"
)

// Call runs fn on ep's connection and returns its result, or ctx.Err() as
// soon as ctx ends: go-zookeeper's requests have no deadline of their own (a
// stalled connection answers only when its read timeout, 2/3 of the session
// timeout, fails it). Every ZooKeeper call a recipe makes on behalf of a
// caller goes through Call (fn may make several).
//
// If Call gives up with fn still running, undo (when not nil) is called with
// fn's result once fn finishes: to undo what a request the caller gave up on
// did after all (a create that landed). Reads need no undo. A ctx that can
// never end costs nothing: fn then runs on the caller's goroutine (see
// internal/wire/ctxcall).
func Call[T any](ctx context.Context, ep *session.Epoch, fn func(c *zk.Conn) (T, error), undo func(T, error)) (T, error) {
	return ctxcall.Value(ctx, func() (T, error) { return fn(ep.Conn()) }, undo)
}

// Exec is Call for calls with no result to return or undo.
func Exec(ctx context.Context, ep *session.Epoch, fn func(c *zk.Conn) error) error {
	_, err := ctxcall.Value(ctx, func() (struct{}, error) { return struct{}{}, fn(ep.Conn()) }, nil)
	return err
}

// Abandoned reports whether a call (Call, Exec, or session.Session.Do)
// that returned err may have left its op running: err is its ctx's. What
// the op writes must then not be read; any other result means the op has
// returned.
func Abandoned(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
