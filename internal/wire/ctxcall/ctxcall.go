// Package ctxcall runs a blocking call so that its caller can leave when its
// context ends: go-zookeeper's requests take no context and answer only when
// the server does, or when the connection's read timeout fails them. Every
// request shepherd makes on a caller's behalf goes through it (recipe.Call,
// session.Session.Do).
package ctxcall

import (
	"context"
	"fmt"
	"runtime/debug"
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
// the caller can leave it behind; a panic of fn is then raised again on the
// caller's goroutine (as a *Panic, with fn's stack), as it would be had fn
// run there, instead of ending the process from a goroutine nobody can
// recover on. Once the caller has left, a panic of fn is fn's own.
func Value[T any](ctx context.Context, fn func() (T, error), abandoned func(T, error)) (T, error) {
	var zero T
	if ctx.Done() == nil {
		return fn()
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v        T
		err      error
		panicked *Panic
	}
	ch := make(chan result, 1)
	var mu sync.Mutex
	gaveUp, finished := false, false
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{panicked: &Panic{Value: p, Stack: debug.Stack()}}
			}
			mu.Lock()
			if gaveUp {
				mu.Unlock()
				if r.panicked != nil {
					panic(r.panicked)
				}
				if abandoned != nil {
					abandoned(r.v, r.err)
				}
				return
			}
			finished = true
			mu.Unlock()
			ch <- r
		}()
		r.v, r.err = fn()
	}()
	take := func(r result) (T, error) {
		if r.panicked != nil {
			panic(r.panicked)
		}
		return r.v, r.err
	}
	select {
	case r := <-ch:
		return take(r)
	case <-ctx.Done():
		mu.Lock()
		if finished {
			mu.Unlock()
			return take(<-ch)
		}
		gaveUp = true
		mu.Unlock()
		return zero, ctx.Err()
	}
}

// Panic is a panic of a call's fn, raised again on its caller's goroutine:
// the value fn panicked with, and fn's stack at the panic.
type Panic struct {
	Value any
	Stack []byte
}

func (p *Panic) Error() string {
	return fmt.Sprintf("panic in a call: %v\n\n%s", p.Value, p.Stack)
}

// Unwrap returns the value fn panicked with, if it is an error (a
// runtime.Error for a nil dereference, say).
func (p *Panic) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}
