package line

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/session"
)

// Call runs fn on ep's connection, bounded by ctx (see epcall.Call).
func Call[T any](ctx context.Context, ep *session.Epoch, fn func(c *zk.Conn) (T, error), undo func(T, error)) (T, error) {
	return epcall.Call(ctx, ep, fn, undo)
}

// Exec is Call for calls with no result to return or undo.
func Exec(ctx context.Context, ep *session.Epoch, fn func(c *zk.Conn) error) error {
	return epcall.Exec(ctx, ep, fn)
}
