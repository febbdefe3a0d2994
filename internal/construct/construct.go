// Package construct checks what every recipe's constructor is given (its
// options, a session, a path), so that each says the same in the same
// words: an error wrapping recipe.ErrInvalidArgument (or the path's
// recipe.ErrInvalidPath), prefixed by the recipe's package name.
package construct

import (
	"fmt"

	"github.com/shepherdzk/shepherd/internal/zkpath"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// Apply applies opts to c in order. A nil option is an error, told to fail
// as an option's own errors are (the recipe's config keeps the first).
func Apply[C any, O ~func(*C)](pkg string, c *C, opts []O, fail func(error)) {
	for _, o := range opts {
		if o == nil {
			fail(fmt.Errorf("%s: %w: nil option", pkg, recipe.ErrInvalidArgument))
			continue
		}
		o(c)
	}
}

// Check checks that sess is not nil and that path is a path ZooKeeper
// takes (see zkpath.Validate).
func Check(pkg string, sess *session.Session, path string) error {
	if sess == nil {
		return fmt.Errorf("%s: %w: nil session", pkg, recipe.ErrInvalidArgument)
	}
	if err := zkpath.Validate(path); err != nil {
		return fmt.Errorf("%s: %w", pkg, err)
	}
	return nil
}
