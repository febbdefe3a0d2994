// Package construct checks what shepherd's calls are given (a recipe's
// options, a session, a path), so that each says the same in the same
// words: an error wrapping ErrInvalidArgument (or the path's
// recipe.ErrInvalidPath), prefixed by the caller's name. It sits below
// package recipe, which defines its ErrInvalidArgument as this one.
package construct

import (
	"fmt"

	"github.com/shepherdzk/shepherd/internal/wire/zkpath"
	"github.com/shepherdzk/shepherd/session"
)

// ErrInvalidArgument is recipe.ErrInvalidArgument: a bad argument other
// than the path. It is an answer, never retried (see
// session.OutcomeUnknown), and it matches session.ErrInvalidArgument too.
var ErrInvalidArgument error = &invalidArgument{}

type invalidArgument struct{}

func (*invalidArgument) Error() string { return "invalid argument" }

// OutcomeKnown marks the error as an answer (see session.OutcomeUnknown).
func (*invalidArgument) OutcomeKnown() bool { return true }

// Is reports whether target is session.ErrInvalidArgument, the sentinel
// every invalid argument to shepherd matches.
func (*invalidArgument) Is(target error) bool { return target == session.ErrInvalidArgument }

// Apply applies opts to c in order. A nil option is an error, told to fail
// as an option's own errors are (the recipe's config keeps the first).
func Apply[C any, O ~func(*C)](pkg string, c *C, opts []O, fail func(error)) {
	for _, o := range opts {
		if o == nil {
			fail(fmt.Errorf("%s: %w: nil option", pkg, ErrInvalidArgument))
			continue
		}
		o(c)
	}
}

// Check checks that sess is not nil and that path is a path ZooKeeper
// takes (see zkpath.Validate), before any request is made.
func Check(pkg string, sess *session.Session, path string) error {
	if sess == nil {
		return fmt.Errorf("%s: %w: nil session", pkg, ErrInvalidArgument)
	}
	if err := zkpath.Validate(path); err != nil {
		return fmt.Errorf("%s: %w", pkg, err)
	}
	return nil
}

// NotMade is the error of a value of pkg used without its constructor (its
// zero value): a clear error at once, not a wait for ctx or a panic. what
// names the value and its constructor ("a Mutex not made by New").
func NotMade(pkg, what string) error {
	return fmt.Errorf("%s: %w: %s", pkg, ErrInvalidArgument, what)
}
