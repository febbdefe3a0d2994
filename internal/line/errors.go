package line

import (
	"github.com/shepherdzk/shepherd/hold"
	"github.com/shepherdzk/shepherd/internal/construct"
	"github.com/shepherdzk/shepherd/internal/errs"
	"github.com/shepherdzk/shepherd/internal/wire/zkpath"
	"github.com/shepherdzk/shepherd/session"
)

// Errors returned by every recipe, matched with errors.Is.
var (
	// ErrInvalidPath: the recipe path is not one a recipe may use.
	ErrInvalidPath = zkpath.ErrInvalid
	// ErrInvalidArgument: a bad argument other than the path (nil session,
	// maxLeases < 1, data too large, an id with '/', ...). It matches
	// session.ErrInvalidArgument too, which every invalid argument to
	// shepherd matches (fence's and the session's included).
	ErrInvalidArgument = construct.ErrInvalidArgument
	// ErrNotHeld: Unlock or Release of something not held (hold's).
	ErrNotHeld = hold.ErrNotHeld
	// ErrLost: the hold, or the session it lived in, was lost.
	ErrLost = session.ErrLost
	// ErrReleased, ErrPaused, ErrRevoked: the hold's (see package hold).
	ErrReleased = hold.ErrReleased
	ErrPaused   = hold.ErrPaused
	ErrRevoked  = hold.ErrRevoked
	// ErrClosed: the session manager is closed.
	ErrClosed = session.ErrClosed
	// ErrMaxLeasesMismatch: the semaphore's path records a different maxLeases.
	ErrMaxLeasesMismatch = NewError("maxLeases differs from the one recorded at the path")
	// ErrWrongKind: the path belongs to a different kind of recipe (a
	// semaphore's path used as a mutex, or the reverse).
	ErrWrongKind = NewError("the path belongs to another kind of recipe")
	// ErrForeignRecipe: the path holds contender nodes named by another
	// library (or the other naming: see Naming), whose recipes do not see
	// this one's nodes, or another recipe's nodes it cannot share a line
	// with. No one is granted there; the error names the node found.
	ErrForeignRecipe = NewError("the path holds another library's or recipe's nodes")
	// ErrSequenceExhausted: the path's sequence counter has run out, so its
	// line has no order: ZooKeeper numbers sequential children with a
	// signed 32-bit counter that, on ZooKeeper 3.8, sticks at 2^31−1 (and
	// gives wrapped, negative numbers to creates in flight together), so
	// later contenders share a number with earlier ones. A line holding a
	// duplicate, the maximal or a negative sequence number grants no one:
	// every contender that sees it leaves the line with this error. The
	// counter restarts only when the path is deleted and created again
	// (a recipe's own parents are container nodes, which the server removes
	// once they are empty; a path created otherwise must be deleted by the
	// operator once nothing holds or waits on it).
	ErrSequenceExhausted = NewError("sequence counter exhausted: delete and recreate the path")
	// ErrPermission: a node's ACL denies this session a request the recipe
	// needs (ZooKeeper's NoAuth): joining a path created by another
	// principal, say (see session.WithACL). The error is a
	// *PermissionError, naming the node and the permission; it matches
	// zk.ErrNoAuth too, and is never retried: the call returns it, with
	// nothing of its own left at the path.
	ErrPermission = session.ErrPermission
	// ErrNoPrincipal: the session's ACL names its creator, but the server
	// authenticated the session as no one (see session.ErrNoPrincipal).
	ErrNoPrincipal = session.ErrNoPrincipal
)

// PermissionError is a request refused by a node's ACL: see
// session.PermissionError.
type PermissionError = session.PermissionError

// NewError returns a sentinel error that is an answer, not a connection
// problem (see errs.New): never retried.
func NewError(msg string) error { return errs.New(msg) }

// MaxDataLen bounds the data a recipe stores in a node (ZooKeeper's own limit
// is about 1 MiB per request; holders' data is meant to be an id).
const MaxDataLen = 64 << 10
