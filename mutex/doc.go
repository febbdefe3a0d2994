// Package mutex is a distributed mutex on ZooKeeper: fair (a FIFO line of
// sequential nodes, each waiter watching only its predecessor), non-fair (a
// race for one ephemeral node), and a read-write lock. Locks are reentrant per
// *Mutex value: Lock on a value that holds the lock increments a hold count,
// and Unlock releases at zero.
//
// A held lock is a hold (Unlock is its release): see hold.Hold for the
// hold contract.
//
// A lost hold is over: Unlock reports ErrLost and the node is removed once
// the connection returns (or by the server with the session); Lock again to
// re-acquire. A waiter keeps its place in line through a disconnect its
// session survives, and re-enters the line on a new session after Lost.
//
// Fair locks name their nodes "_c_<guid>-lock-<seq>" like Apache Curator's
// InterProcessMutex and go-zookeeper's zk.Lock, and recognise Kazoo's
// "__lock__" nodes, so processes using those libraries on the same path
// exclude each other. The read-write lock uses Curator's "__READ__" and
// "__WRIT__" names. A fair and a non-fair lock never share a path (each
// would grant a holder the other cannot see): the later one to come fails
// with ErrWrongKind, as does a lock on a semaphore's path.
//
// An uncontended fair Lock+Unlock takes three requests (create, list,
// delete) in two round trips: the list goes out right behind the create,
// without waiting for its answer (the server applies a session's requests in
// order). A waiter's grant after its predecessor, when that predecessor was
// the head of the line, takes none beyond the notification.
//
// # Fencing
//
// Token is the hold's fencing token, the creation zxid of its node. It costs
// no request of its own. A non-fair lock learns it with the grant. A fair
// lock (and each side of a read-write lock) does not, since a create's
// answer carries no Stat: the hold's watch on its own node (every hold that
// lasts 10 ms has one, see hold.Hold) reads the node, and Token starts that
// read at once if it has not started, and waits for it. Fenced writes (Fenced, with the ops of package fence) land
// only while the lock is held.
package mutex
