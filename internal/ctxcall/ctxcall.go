// Package ctxcall runs a blocking call so that its caller can leave when its
// context ends: go-zookeeper's requests take no context and answer only when
// the server does, or when the connection's read timeout fails them. Every
// request shepherd makes on a caller's behalf goes through it (recipe.Call,
// session.Session.Do).
package ctxcall

import (
	"context"
	"sync"
)

// Run runs fn and returns its error, or ctx.Err() as soon as ctx ends: fn's
// request then completes or fails on its own (go-zookeeper requests have no
// timeout of their own). When Run returns an error, fn may still be running:
// do not read what fn writes (use Value to get a result).
func Run(ctx context.Context, fn func() error) error {
	_, err := Value(ctx, func() (struct{}, error) { return struct{}{}, fn() }, nil)
	return err
}

// Value runs fn and returns its result, or ctx.Err() as soon as ctx
// ends. If it returns early, abandoned (when not nil) is called with fn's
// result once fn finishes — to undo what a request the caller gave up on did
// (a create that landed after all).
//
// A ctx that can never end (ctx.Done() == nil) costs nothing: fn runs on the
// caller's goroutine. Otherwise fn runs on a goroutine of its own, so that
// the caller can leave it behind.
func Value[T any](ctx context.Context, fn func() (T, error), abandoned func(T, error)) (T, error) {
	var zero T
	if ctx.Done() == nil {
		return fn()
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	var mu sync.Mutex
	gaveUp, finished := false, false
	go func() {
		v, err := fn()
		mu.Lock()
		if gaveUp {
			mu.Unlock()
			if abandoned != nil {
				abandoned(v, err)
			}
			return
		}
		finished = true
		mu.Unlock()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		mu.Lock()
		if finished {
			mu.Unlock()
			r := <-ch
			return r.v, r.err
		}
		gaveUp = true
		mu.Unlock()
		return zero, ctx.Err()
	}
}
