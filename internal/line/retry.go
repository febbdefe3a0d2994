package line

import (
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/session"
)

// AfterDelays calls look after each of delays in turn, with the current
// epoch of ep's session when the session is usable then (a turn it is not
// is skipped), and stops once ep's session has ended: for sweeps that look
// again, a few times, for nodes of their own session that a create whose
// answer was lost may still make (the server it was lost with can forward
// it late). It returns when done; run it on a goroutine of its own.
func AfterDelays(sess *session.Session, ep *session.Epoch, delays []time.Duration, look func(cur *session.Epoch)) {
	for _, d := range delays {
		t := time.NewTimer(d)
		select {
		case <-ep.SessionDone():
			t.Stop()
			return
		case <-t.C:
		}
		cur, ok := sess.Current()
		if !ok {
			continue // not connected now: look at the next turn
		}
		if cur.SessionID() != ep.SessionID() {
			return // the session is gone: so are its nodes
		}
		look(cur)
	}
}

// ErrEpochEnded: the connection was lost while waiting (the epoch a wait
// began in ended); wait for the session to be usable again and go on (same
// session) or re-enter (new session). Retryable.
var ErrEpochEnded = errors.New("connection lost")

// Retryable reports whether err from Enter or Await means "the connection was
// lost: wait for the session to be usable and try again" (a new session, if
// the old one is lost, means entering the line again). A request answered
// zk.ErrSessionExpired (in flight when the server ended the session, its
// answer read before the manager declared the session Lost) is one: the
// next try finds the new session.
func Retryable(err error) bool {
	if errors.Is(err, ErrWrongKind) || errors.Is(err, ErrForeignRecipe) || errors.Is(err, ErrMaxLeasesMismatch) || errors.Is(err, ErrSequenceExhausted) ||
		errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrClosed) {
		return false
	}
	return errors.Is(err, ErrEpochEnded) || errors.Is(err, ErrNodeGone) ||
		errors.Is(err, ErrLost) || errors.Is(err, zk.ErrSessionExpired) || session.OutcomeUnknown(err)
}
