package session

import (
	"context"
	"errors"
	"testing"
)

// OnEnd's hooks run once, synchronously, when the epoch ends, after its
// context is cancelled; a stopped hook never runs; a hook added after the
// end runs at once.
func TestEpochOnEnd(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	e := &Epoch{ctx: ctx, cancel: cancel}
	var ran []string
	e.OnEnd(func() {
		if ctx.Err() == nil {
			t.Error("a hook ran before the context was cancelled")
		}
		ran = append(ran, "a")
	})
	stopB := e.OnEnd(func() { ran = append(ran, "b") })
	if !stopB() {
		t.Fatal("stop before the end did not report it unhooked the hook")
	}
	e.end(ErrDisconnected, false)
	e.end(ErrDisconnected, false) // once
	if !errors.Is(context.Cause(ctx), ErrLost) {
		t.Errorf("the epoch's cause %v does not match ErrLost", context.Cause(ctx))
	}
	if len(ran) != 1 || ran[0] != "a" {
		t.Fatalf("hooks run: %v, want [a]", ran)
	}
	stopC := e.OnEnd(func() { ran = append(ran, "c") })
	if len(ran) != 2 || ran[1] != "c" {
		t.Fatalf("a hook added after the end did not run at once: %v", ran)
	}
	if stopC() {
		t.Fatal("stop of a hook that ran reported it unhooked it")
	}
}
