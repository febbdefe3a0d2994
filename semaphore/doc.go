// Package semaphore is a distributed counting semaphore on ZooKeeper: at most
// maxLeases leases are held at once, across every process using the path.
//
// # Layout and protocol
//
// The path's node records the limit ("shepherd:semaphore:v1 maxLeases=N"),
// which marks the path as a semaphore's. Under it, "locks" holds the line of
// waiters (EPHEMERAL_SEQUENTIAL "_c_<guid>-lock-<seq>") and "leases" the
// leases ("_c_<guid>-lease-<seq>"), as Apache Curator's InterProcessSemaphoreV2
// lays them out. Only the head of the line may take leases: it reads the lease
// count and, when n more fit, takes them in one multi-op that also checks the
// path's version (the limit has not changed), creates the n leases and removes
// its place in line. So:
//
//   - the limit holds by construction: leases are only ever created by the
//     single head of the line, atomically with the check;
//   - waiters are served in FIFO order, and AcquireN takes all n leases or none
//     (a head that needs n waits until n are free: no two clients each hold part);
//   - a release wakes O(1) clients: the head (its watch on the lease list
//     fires), which in taking its leases removes its place in line and so wakes
//     the next waiter (its watch on its predecessor fires) — two notifications,
//     however many wait. No one else watches the lease list.
//
// Uncontended, an Acquire+Release costs six requests in five round trips:
// the create of a place in line and the listing of the line (sent together,
// one round trip), a read of the limit (skipped while a lease of this client
// pins the path), a look at the leases, the multi-op, and the release.
//
// # Loss
//
// Each Lease has two end signals, with the same meaning on every hold of this
// module (locks, leases, leaderships). Lost() is closed the moment the lease
// is, or may be, lost — the connection dropped (Suspended), the session was
// lost, or the session manager closed — before the server can hand its place
// to anyone else; it is never closed by the holder's own Release. Context()
// ends when the lease ends for any reason, a loss or Release: pass it to the
// work the lease bounds. A lost lease is over; Release removes its node (in the background if
// the connection is down). A waiter keeps its place in line through a
// disconnect its session survives and re-enters the line on a new session. A
// holder whose process dies frees its lease when its session expires.
//
// A Lease's Token (its fencing token) costs one request on its first call,
// none after, and nothing if never called; Fenced runs writes (the ops of
// package fence) that land only while the lease is held.
package semaphore
