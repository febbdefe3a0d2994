package recipe

import (
	"github.com/shepherdzk/shepherd/internal/zkpath"
	"github.com/shepherdzk/shepherd/session"
)

// Errors returned by every recipe, matched with errors.Is.
var (
	// ErrInvalidPath: the recipe path is not one a recipe may use.
	ErrInvalidPath = zkpath.ErrInvalid
	// ErrInvalidArgument: a bad argument other than the path (nil session,
	// maxLeases < 1, data too large, an id with '/', ...).
	ErrInvalidArgument = NewError("invalid argument")
	// ErrNotHeld: Unlock or Release of something not held.
	ErrNotHeld = NewError("not held")
	// ErrLost: the hold, or the session it lived in, was lost.
	ErrLost = session.ErrLost
	// ErrClosed: the session manager is closed.
	ErrClosed = session.ErrClosed
	// ErrMaxLeasesMismatch: the semaphore's path records a different maxLeases.
	ErrMaxLeasesMismatch = NewError("maxLeases differs from the one recorded at the path")
	// ErrWrongKind: the path belongs to a different kind of recipe (a
	// semaphore's path used as a mutex, or the reverse).
	ErrWrongKind = NewError("the path belongs to another kind of recipe")
)

// NewError returns a sentinel error that is an answer, not a connection
// problem: session.OutcomeUnknown reports false for it (and for errors that
// wrap it), so it is never retried.
func NewError(msg string) error { return &knownError{msg} }

type knownError struct{ msg string }

func (e *knownError) Error() string { return e.msg }

// OutcomeKnown marks the error as an answer (see session.OutcomeUnknown).
func (e *knownError) OutcomeKnown() bool { return true }

// MaxDataLen bounds the data a recipe stores in a node (ZooKeeper's own limit
// is about 1 MiB per request; holders' data is meant to be an id).
const MaxDataLen = 64 << 10
