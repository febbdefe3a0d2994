// Package election is leader election on ZooKeeper, as a controller with
// leadership callbacks (client-go's leaderelection, Curator's LeaderLatch and
// LeaderSelector, etcd's concurrency.Election, in one Go API).
//
//	e, err := election.New(sess, "/services/billing/leader", "replica-a")
//	err = e.Run(ctx, election.Callbacks{
//		OnElected: func(ctx context.Context, term election.Term) {
//			// lead until ctx is cancelled; pass term to what you write
//		},
//		OnLeader: func(l election.Leader) { log.Println("leader is", l.ID) },
//	})
//
// Latch-style, Campaign blocks until this candidate leads and returns the
// *Leadership: Term, Lost, Context, Resign, Validate and Fenced, as a
// semaphore's Lease or a mutex's hold has them.
//
//	l, err := e.Campaign(ctx)
//	// lead under l.Context(); fence writes with l.Fenced or l.Term()
//	err = l.Resign(ctx)
//
// # Modes
//
// Fair (the default): candidates queue as EPHEMERAL_SEQUENTIAL nodes named in
// Apache Curator's LeaderLatch format (_c_<guid>-latch-<seq>, the candidate's
// id as data), so shepherd candidates and Curator LeaderLatch participants can
// share one election path. The head of the line leads; each candidate watches
// only its predecessor (and the head, to report leader changes), so a handoff
// wakes the next candidate with one notification. A leader that had to wait
// marks its node (writes its id again) when the candidate after it is
// shepherd's: that candidate then leads as soon as it hears of the node's
// deletion, without listing the line, so a graceful handoff is the old
// leader's delete and one notification. A Curator participant behind a
// leader is never sent a data change (its LeaderLatch acts only on the
// deletion); it and a shepherd candidate behind a Curator leader look at
// the line as before. NonFair: candidates race to
// create one ephemeral node, "leader", under the path; every candidate watches
// it, so each leader change wakes them all — fastest for a few candidates.
// The two modes never share a path (each would elect a leader the other
// cannot see): the later one to come fails with ErrWrongKind.
//
// # Priorities and handovers
//
// A candidate may say how good a leader it would be (WithPriority, and
// WithAttributes such as its version or zone): Participants, Observe and
// `shepherd status` show them. Leadership moves where it is wanted with
// Leadership.HandOver (or Election.HandOver under Run): the named candidate
// (the best one for "") leads next, no other in between, with a term above
// the old leader's and a leaderless gap of a resign's; HandOverOnStop hands over
// when Run's ctx ends; WithPreferredLeader yields to a candidate of higher
// priority that has been in line for a window, at most once a window; and
// Leadership.Proclaim changes the value followers see (Leader.Value)
// without re-election.
//
// A handover is announced by an ephemeral node, "handover", under the path.
// In the fair layout the head still leads: the candidates between the
// leader and its successor step aside themselves (they re-enter at the
// back), then the leader deletes its node, and the successor, now the head,
// is granted by that deletion. A Curator or Kazoo participant between them
// cannot be asked to, and the handover is refused (ErrHandOverRefused,
// leadership kept). In the non-fair layout the node reserves the race for the
// successor, checked by the server in every racer's grant, and each
// candidate also registers under "candidates" so that it can be named.
// Every wait is bounded (WithHandOverTimeout): a successor that does not
// take leadership leaves the election going on as after a resign, never
// stalled beyond one session timeout, never with two leaders. The design,
// and when to use which: docs/handover.md.
//
// # Guarantees
//
// Leadership is bound to a ZooKeeper session: OnElected's ctx is cancelled the
// moment the session's connection is lost (Suspended), before another candidate
// can be elected by the session's expiry (the server drops the connection and
// deletes the node together; another candidate learns of it milliseconds
// later). It is also cancelled on Resign, when Run's ctx ends, and when Run
// learns the node is gone. A Leadership is a hold (Resign is its release):
// see hold.Hold for the hold contract. Its Context() is OnElected's ctx;
// its Lost() is not closed when OnElected returns or Run's ctx ends either.
// When the same session reconnects with its node still at the head,
// leadership is granted again at once with the same Term: a ZooKeeper
// rolling restart does not move leadership to another process.
// A candidate never trusts a node from an earlier session: each node is bound
// to the session that created it.
//
// Term is the leadership's fencing token: the creation zxid of the leader's
// node, strictly growing from one leadership to the next across the ensemble.
// It costs no request when asked for: a fair candidate reads it while it
// waits in line, a non-fair one with its grant. Leadership.Fenced runs
// ZooKeeper writes (the ops of package fence) that land only while the
// leadership holds.
//
// # What is not guaranteed
//
// Leadership is advisory: a leader that is paused (GC, SIGSTOP) after its last
// check may act while another has been elected. Pass Term to the resources the
// leader writes and have them reject lower terms (fencing), or check
// (*Leadership).Validate right before a critical step. OnElected's ctx is
// cancelled promptly, but the callback must return on its own: Run reports a
// callback that has not returned within the stop deadline and never starts a
// new leadership in this process while it runs. Clocks are assumed to advance
// at the same rate on client and servers (see package session).
package election
