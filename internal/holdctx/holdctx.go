// Package holdctx lets shepherd's recipes derive a context from a hold's
// cheaply, without a public API: package hold sets Derive.
package holdctx

import "context"

// Derive returns a context that ends when the hold h's Context does (h is
// a *hold.Hold), with the same cause, or when its cancel is called: as
// context.WithCancelCause(h.Context()) would, but ended by the hold itself
// (right after its own Context, before Lost closes), so that the hold's
// context keeps no children nor Done channel for it (an election's
// leadership: see bench/cmd/holdscale).
var Derive func(h any) (context.Context, context.CancelCauseFunc)
