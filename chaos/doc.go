// Package chaos holds shepherd's fault matrix and randomized soak: every
// recipe (mutex fair and non-fair, read-write lock, semaphore, election fair
// and non-fair) under every fault (ZooKeeper leader or follower killed,
// standalone server restarted, client connection stalled shorter and longer
// than the session timeout, the answers to a release lost, session expired on
// demand, client process SIGKILLed, whole ensemble restarted), with invariant
// checkers on one clock in one process; and every cell again with the holds
// riding through disconnects (session.PauseOnDisconnect: cells
// pause/<fault>/<recipe>, with two faults of their own: a connection severed
// for less than the session timeout, and a paused hold's node deleted by an
// operator), where a resumed hold counts as held again: a resume beside
// another holder, or after another client held during the pause, is a
// violation, and a lost hold never resumes. `go test ./chaos` runs a subset
// of the pause column once each (-chaos.pause=all: all of it); the soak
// draws each client's policy. In every run two of the clients are
// values of the recipe sharing one session, and one of them releases with a
// ctx that has already ended. It has no non-test code; run it with
// `go test ./chaos` or `make chaos` (the soak, 10 minutes by default).
package chaos
