// Package hold is one granted lock, lease or leadership: the Hold every
// recipe's grant is (a Mutex's, a semaphore's Lease, an election's
// Leadership), and the contract it keeps; the recipes' docs refer to it.
//
// A hold is held, paused or lost, until its holder releases it:
//
//   - Held: granted, and bound to the connected stretch of its session
//     (session.Epoch) in which it was granted or last resumed.
//   - Paused (only under session.PauseOnDisconnect): the connection was lost
//     (Suspended) while the session may still live. The hold may still be
//     valid, but its holder cannot know: it must not act on it. Paused()
//     is closed, Gate blocks, Fenced waits at the gate; Context is NOT
//     cancelled, so no work is torn down. It resumes at Reconnected of the
//     same session (which proves the session, and so the hold's ephemeral
//     node, lived through the disconnect; the session manager syncs the
//     server first) once one read confirms the node is still this hold's.
//   - Lost: Lost() is closed and Context() ends: under StopOnDisconnect
//     (the default) at the connection's loss, before any other client can
//     be granted the hold; under either policy at the session's loss
//     (silence for the session timeout on the local clock, see session,
//     again before any other grant; or an expiry heard on reconnect), at
//     the manager's Close, at an operator's forced revocation (cause
//     ErrRevoked: the holder is told, then deletes its node; see
//     admin.Revoke), or when the hold's node is deleted by someone else
//     (every hold watches its own nodes: it is told within a notification,
//     though a waiter may hear of the same deletion first). A paused hold
//     whose session the server ends early (an operator's kill) or whose
//     node is deleted while it is disconnected learns of it only when it
//     reaches a server again, after others may have been granted the hold:
//     it is paused meanwhile, and must not act. A lost hold never resumes.
//
// An operator may also ask for the hold (admin.AskRevoke): RevokeRequested
// is closed, and the hold lasts until its holder releases it.
//
// Release ends the hold without closing Lost: a select on Lost tells a loss
// from a release, and Context() ends on either. Pass Context() to the work
// the hold protects; use Fenced for the writes that must land only while the
// hold is valid (the only writes that are safe across a session expiry: an
// effect already in flight when a connection drops may land after).
//
// What a hold attached (Attach: a semaphore lease's slot claim, an election's
// handover record) ends with it: at its release, and at once at a loss while
// its session lives.
//
// A hold costs nothing while it is held: no goroutine (its watch on its own
// node is called from the session's one event path), one server watch.
//
// A value that may hold (a Mutex between Unlock and Lock) answers as a
// hold that has ended, one rule for every method: a signal of the hold's
// end (Lost, Paused, Context) has fired, since there is nothing to keep
// and nothing to act on; a request to act (RevokeRequested) never fires
// (nil); a call that needs a hold (Gate, Token, Fenced, Validate, a
// release) returns ErrNotHeld; a value of the hold (Node, Hold) is its
// zero value ("", nil).
//
// Holds are made by the recipes (and by a recipe of one's own, through
// recipe.Line or New); users get them from Mutex.Hold, a Lease, a Leadership.
package hold

import (
	"fmt"

	"github.com/shepherdzk/shepherd/internal/errs"
	"github.com/shepherdzk/shepherd/session"
)

// Errors of a hold, matched with errors.Is. Every recipe returns these (its
// package names them too).
var (
	// ErrLost: the hold, or the session it lived in, was lost.
	ErrLost = session.ErrLost
	// ErrRevoked is the cause (context.Cause) of a hold's end when an
	// operator revoked it (admin.Revoke); it matches ErrLost.
	ErrRevoked = fmt.Errorf("%w: revoked by an operator", ErrLost)
	// ErrReleased is the cause (context.Cause) of a hold's Context ending at
	// its holder's release; a loss's cause matches ErrLost.
	ErrReleased = errs.New("released by its holder")
	// ErrNotHeld: a release (Unlock, Release) of something not held, or an
	// Attach to a hold that has ended.
	ErrNotHeld = errs.New("not held")
	// ErrPaused: the hold was paused (PauseOnDisconnect) while an operation
	// on it was in flight: the connection was lost, and the operation's
	// outcome is unknown. The hold is not lost: wait at its Gate.
	ErrPaused = errs.New("hold paused: the connection was lost")
	// ErrClosed: the session manager is closed.
	ErrClosed = session.ErrClosed
)
