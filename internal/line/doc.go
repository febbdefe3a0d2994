// Package line is the waiting line: the fair recipes (mutex, semaphore,
// election) wait in it, as EPHEMERAL_SEQUENTIAL nodes named in Apache
// Curator's protected format, each watching one node, through one contender
// loop (Contend); and a recipe refuses another kind's path here before its
// first write (PathCheck). It holds the sentinel errors every recipe
// returns. Its grants are holds of package hold; the non-fair recipes race
// for one node in package race, above it; an operator's tools are package
// admin's, above the recipes. It is internal: package recipe exports what
// users and writers of their own recipes need of it (the errors and the
// Line toolkit).
//
// # Writing a recipe
//
// A recipe borrows a *session.Session and works one session epoch at a time
// (session.Session.Wait gives the current one). A fair recipe is a Line:
// Line.Enter joins it with a protected create, Line.Await (or AwaitWith)
// waits for the Turn the recipe defines (one watch per waiter),
// Line.NewHold grants the place as a Hold (held, paused or lost, see Hold:
// its Lost channel closes the moment the epoch ends, or, under
// session.PauseOnDisconnect, it pauses then and resumes in the next epoch of
// the same session; Line.OnDisconnect picks the policy), and Hold.Release, Line.Leave or Line.Delete remove
// nodes with a guaranteed delete. Other ZooKeeper calls go through epcall.Call or
// epcall.Exec, so that they return when the caller's ctx ends. A non-fair recipe
// races through race.Race. Set Line.Recipe (race.Race.Recipe) to
// the recipe's name: the session's observer sees it on every event the core
// reports for it. A contender's node must be of one of the Kind constants to
// take part in a line (ParseName ignores other names): use the kind whose
// peers it may share a path with.
//
// # Names
//
// Contenders' nodes are named "_c_<guid>-<kind><seq>" as Curator names them,
// with Curator's kinds: "lock-" (mutex; go-zookeeper's zk.Lock uses the same),
// "latch-" (election), "__READ__" and "__WRIT__" (read-write lock), "lease-"
// (semaphore). Kazoo's "<uuid>__lock__<seq>" and "<uuid>__rlock__<seq>" are
// recognised too. Order is the sequence suffix alone, never the whole name, so
// shepherd, Curator and zk.Lock contending on one path exclude each other.
// Names that do not parse are ignored, never fatal.
//
// ZooKeeper's sequence counter is a signed 32-bit number per parent (the
// parent's cversion at the create: one step per child created). On ZooKeeper 3.8
// it does not wrap at 2^31−1: it sticks there, and every later child gets
// 2147483647 too, except creates in flight together, which get wrapped,
// negative numbers (both seen with zktest.SetSequence). A line then has no
// order (Curator, Kazoo and go-zookeeper's Lock break the tie by name, and
// can grant two holders at once). shepherd fails closed: a line holding a
// duplicate, the maximal or a negative sequence number grants no one, and
// every contender that sees it leaves with ErrSequenceExhausted, which names
// the path. The counter restarts only with a new parent: a recipe's own paths
// are containers (below) and come back fresh once everyone has let go; a path
// created otherwise must be deleted by the operator. At a thousand
// acquisitions a second a path runs out after about 25 days of continuous
// use.
//
// # Paths
//
// The parents a recipe creates (and a semaphore's path and its "locks" and
// "leases" children) are container nodes (ZooKeeper 3.5+), as Curator creates
// them: the server removes a container that has had children and has none
// left, so a path nobody uses any more does not stay behind. A recipe whose
// create finds its path removed meanwhile creates it again. One exception:
// the path of a non-fair race (mutex.NonFair, election.NonFair) is
// persistent, its parents containers: its data version fences the holds, and
// a container created again would count versions from 0 again (see
// race.Race).
//
// # Waiting
//
// Every recipe waits through one loop, Line.AwaitWith: it lists the line (or
// uses the listing sent with the create), asks the recipe's Turn whether the
// node is granted, and otherwise watches exactly one node with GetW, one
// notification per change that matters; when that node was the head, its
// deletion alone grants the waiter. An exclusive holder that had to wait
// marks its node by writing its data again: a lock's holder (a writer's
// too) in its release, in the multi that deletes the node (MarkOnRelease:
// one write per handoff, as without a mark), the semaphore's head in the
// multi that takes its leases and deletes its node (MarkOnRelease, through
// Node.Consume), a leader at its grant (MarkFor). The waiter watching it hears the change and
// is granted on the deletion without listing, so a handoff costs the same
// few hundred bytes in a line of any length (a node without a mark, a
// reader's or another library's, or a holder's whose session ended, costs a
// listing). The deletion reaches it through a second watch on the node, a
// child watch, which a data change does not spend: a waiter sends nothing
// between the mark and its grant. Readers never mark. A
// leader marks only when the candidate after it is shepherd's (MarkFor), in
// a multi that checks that candidate is still there: Curator's LeaderLatch
// acts only on its predecessor's deletion, and a data change would spend its
// one-shot watch. Its options cover what recipes add: the election watches
// the head to report leaders (OnHead), TryLock and TryAcquire look once
// (NoWait), the exclusive holders and leaders mark (MarkOnRelease,
// MarkFor).
//
// # Contending
//
// Every fair recipe contends through one loop, Contend: it waits for the
// session, enters the line, waits (AwaitWith), and goes round again after a
// lost connection or answer (one classification, Retryable; one pacing,
// Pacer: exponential backoff with jitter, 20 ms to 1 s, cut short by a new
// epoch), entering again at once when its node has left the line; on any
// failure it removes its node (Line.Leave), waiting for the delete while
// its ctx and epoch live (contender.remove). A waiter whose connection
// drops while its session lives sleeps on in the next epoch on the watches
// it had (go-zookeeper sets them again), without listing the line again
// (Node.park). A recipe plugs in a Driver of
// two methods: its Turn (Head for a lock, a writer, the semaphore's head
// and the leader) and Grant, which makes its hold (a Hold, the semaphore's
// take, a leadership); an Entry says how it enters and waits (its node's
// kind and data, its AwaitOptions). Two optional interfaces cover the
// rest: a Keeper keeps its node across calls (the election's kept place),
// a Fixer prepares each wait and repairs what an error reports (the
// semaphore's limit and containers). The semaphore composes the line: its
// head waits for free leases in its own Grant.
//
// # Deadlines
//
// go-zookeeper's requests have no deadline: on a stalled connection a call
// returns only when the read timeout (2/3 of the session timeout) fails it.
// Every ZooKeeper call a recipe makes for a caller goes through epcall.Call, which
// returns as soon as the caller's ctx ends; a late result of a call given up
// on goes to an undo where it matters (a create that landed after all is
// deleted). A waiter that gives up deletes its node before returning when it
// can do so at once, and otherwise in the background.
//
// # Holds
//
// A grant is a hold.Hold (package hold: the one public hold type, its
// contract, its own-node watch, its pause, its fenced writes), made by
// Line.NewHold, Line.HoldOf and the race's grant; its release deletes its
// nodes with the guaranteed delete of package zkdelete (a node whose name is
// reused, the single-node race's, under a guard).
//
// # The single-node race
//
// The non-fair recipes race for one node through package race, beside the
// line. A race and a line never share a path (each would grant a holder the
// other cannot see): after each grant the race checks that the path holds no
// waiting line's node, and the fair recipes' lines refuse the race's node
// and stamp (see PathCheck); either way the later one fails with
// ErrWrongKind.
package line
