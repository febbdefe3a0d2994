package session

import (
	"errors"
	"fmt"
	"time"
)

// State is the state of a Session.
type State int32

// The states, as Curator users know them.
const (
	Connected   State = iota + 1 // a new session is established
	Suspended                    // the connection is lost; the session may be alive
	Reconnected                  // the same session is back, its nodes intact
	Lost                         // the session is gone or assumed gone; a new one follows
	Closed                       // Close was called
)

func (s State) String() string {
	switch s {
	case Connected:
		return "Connected"
	case Suspended:
		return "Suspended"
	case Reconnected:
		return "Reconnected"
	case Lost:
		return "Lost"
	case Closed:
		return "Closed"
	}
	return fmt.Sprintf("State(%d)", int32(s))
}

// Live reports whether the state is one in which the session is usable.
func (s State) Live() bool { return s == Connected || s == Reconnected }

// Event is a state transition.
type Event struct {
	State     State
	Previous  State
	SessionID int64     // the session the event is about
	Time      time.Time // when the manager saw it
	Reason    string    // why, for Suspended, Lost and Closed
	// InPrevious is how long the manager was in the previous state (for
	// Reconnected and Lost: how long it was Suspended).
	InPrevious time.Duration
}

func (e Event) String() string {
	s := fmt.Sprintf("%v (session 0x%x)", e.State, e.SessionID)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Errors, matched with errors.Is.
var (
	// ErrClosed: the session manager was closed.
	ErrClosed = errors.New("session: closed")
	// ErrLost: the ZooKeeper session an operation was bound to is gone.
	ErrLost = errors.New("session: lost")
	// ErrDisconnected is the cause (context.Cause) of an epoch's context
	// ending at Suspended: the connection was lost, and with it, for a hold
	// that does not ride through disconnects, the hold, which may be lost.
	// It matches ErrLost. An epoch ended by the session's loss has a cause
	// matching ErrLost (with the reason), one ended by Close ErrClosed.
	ErrDisconnected error = disconnected{}
	// ErrInvalidArgument: bad input to Open or an option.
	ErrInvalidArgument = errors.New("session: invalid argument")
	// ErrTimeoutRejected: the server raised the requested session timeout.
	ErrTimeoutRejected = errors.New("session: session timeout rejected by the server")
	// ErrAuthFailed: the server rejected the credentials.
	ErrAuthFailed = errors.New("session: authentication failed")
)

type disconnected struct{}

func (disconnected) Error() string        { return "session: connection lost" }
func (disconnected) Is(target error) bool { return target == ErrLost }
