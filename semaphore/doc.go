// Package semaphore is a distributed counting semaphore on ZooKeeper: at most
// maxLeases leases are held at once, across every process using the path.
//
// # Layout and protocol
//
// The path's node records the limit ("shepherd:semaphore:v1 maxLeases=N"),
// which stamps the path as a semaphore's. Under it, "locks" holds the line of
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
// # Slots
//
// With WithSlots, each lease also carries a slot (Lease.Slot, Lease.Slots):
// a number in 0..maxLeases−1 that no other live lease with a slot on the
// path holds — a worker index, a shard, a port offset. After the grant the
// holder lists "slots" and creates the lowest free one as an EPHEMERAL claim
// node ("slots/<n>", its data the name of the lease node it numbers); a
// create that finds the slot taken tries the next. A free slot always
// exists: a claim is created after its lease and deleted with it (in the
// release's one multi-op, only while the lease node exists) or with its
// session, and a head is granted n leases only when at most maxLeases−n are
// held. A create whose answer is lost is looked up once the session is back
// and adopted only if it is this session's and names this lease: never two
// slots for one lease. A lease keeps its slot through a pause
// (PauseOnDisconnect: the claim is an ephemeral node of the same session)
// and frees it at its release or loss.
//
// Slots are unique among shepherd clients that use WithSlots. Leases of
// clients without it, and of Apache Curator's InterProcessSemaphoreV2 on the
// same path, count toward maxLeases but hold no slot: that leaves more slots
// free, never fewer. After SetMaxLeases lowers the limit, existing leases
// keep their slots (even at or above the new limit); leases granted later
// get slots below it. A slot costs two requests per grant (the listing and
// the create); the release costs nothing more. Without WithSlots nothing
// changes: Slot is -1 and no claim is made.
//
// # Loss
//
// A Lease is a hold (Release is its release): see hold.Hold for the hold
// contract. A lost lease is over; Release removes its node (in the
// background if the connection is down). A waiter keeps its place in line
// through a disconnect its session survives and re-enters the line on a new
// session. A holder whose process dies frees its lease when its session
// expires.
//
// A Lease's Token (its fencing token) costs no request (the lease's own-node
// watch reads it); Fenced runs writes (the ops of
// package fence) that land only while the lease is held.
package semaphore
