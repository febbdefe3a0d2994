// Package recipe is the core shared by shepherd's recipes (mutex, semaphore,
// election): the waiting line of EPHEMERAL_SEQUENTIAL nodes, names in Apache
// Curator's protected format, protected create, guaranteed delete, holds bound
// to a session epoch, fencing tokens and fenced writes, and the sentinel
// errors every recipe returns.
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
// ZooKeeper's sequence counter is a signed 32-bit number per parent: after
// 2^31 creations under one parent it wraps to negative numbers, which sort
// first. No recipe library can order such a line; recreate the parent long
// before (at a thousand acquisitions a second that is 24 days of continuous
// use of one path).
//
// # Waiting
//
// Every recipe waits through one loop, Line.AwaitWith: it lists the line (or
// uses the listing sent with the create), asks the recipe's Turn whether the
// node is granted, and otherwise watches exactly one node with GetW, one
// notification per change that matters; when that node was the head, its
// deletion alone grants the waiter. Its options cover what recipes add: the
// election watches the head to report leaders (OnHead), the semaphore's head
// waits for a lease to be free (Room), TryLock and TryAcquire look once
// (NoWait).
//
// # Deadlines
//
// go-zookeeper's requests have no deadline: on a stalled connection a call
// returns only when the read timeout (2/3 of the session timeout) fails it.
// Every ZooKeeper call a recipe makes for a caller goes through Call, which
// returns as soon as the caller's ctx ends; a late result of a call given up
// on goes to an undo where it matters (a create that landed after all is
// deleted). A waiter that gives up deletes its node before returning when it
// can do so at once, and otherwise in the background.
//
// # Holds
//
// A Hold is one granted lock, lease or leadership. It is bound to the session
// epoch that granted it: Lost() closes the moment that epoch ends (the
// connection is lost, the session is lost, or the session manager is closed),
// synchronously on go-zookeeper's event path — before another client can be
// granted the hold's place. See package session for what that does and does
// not guarantee.
//
// A Hold's Token is the creation zxid of its node: it grows with every grant
// on the whole ensemble, also when the recipe's path is deleted and recreated.
// Fenced runs a multi-op only while the hold's node still exists; Validate
// syncs and checks the node is still this session's.
package recipe
