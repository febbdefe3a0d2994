// Package errs makes shepherd's sentinel errors: answers, never retried.
package errs

// New returns a sentinel error that is an answer, not a connection problem:
// session.OutcomeUnknown reports false for it (and for errors that wrap it),
// so it is never retried.
func New(msg string) error { return &known{msg} }

type known struct{ msg string }

func (e *known) Error() string { return e.msg }

// OutcomeKnown marks the error as an answer (see session.OutcomeUnknown).
func (e *known) OutcomeKnown() bool { return true }
