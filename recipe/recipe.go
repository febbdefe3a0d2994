// Package recipe is what shepherd's recipes (mutex, semaphore, election)
// share with their users: the sentinel errors every recipe returns, the two
// node namings, and a small toolkit for writing a recipe of one's own on a
// waiting line (examples/barrier is a double barrier written on it). The
// hold every recipe grants is package hold's; an operator's tools (Inspect,
// Revoke, RemoveIdle) are package admin's, a layer above the recipes.
//
// Users of the mutex, the semaphore and the election need only the errors
// (and package hold). The machinery behind them (the contender loop, the
// single-node race, marks, guaranteed deletes) is internal: it may change
// in any release.
//
// # Writing a recipe
//
// A recipe borrows a *session.Session and works one session epoch at a time
// (session.Session.Wait gives the current one). A Line is a waiting line of
// EPHEMERAL_SEQUENTIAL nodes under one path: Line.Enter joins it with a
// protected create (named as Curator names its nodes), Line.Await waits for
// the Turn the recipe defines (HeadTurn is a lock's) with one watch per
// waiter, Line.Hold grants the place as a Hold, and Hold.Release or
// Line.Leave removes the node with a guaranteed delete. Other ZooKeeper calls
// go through Call or Exec, so that they return when the caller's ctx ends. A
// contender's node must be of one of the Kind constants to take part in a
// line: use the kind whose peers it may share a path with.
//
// # Names
//
// Contenders' nodes are named "_c_<guid>-<kind><seq>" as Curator names them,
// with Curator's kinds: "lock-" (mutex; go-zookeeper's zk.Lock uses the same),
// "latch-" (election), "__READ__" and "__WRIT__" (read-write lock), "lease-"
// (semaphore). Kazoo's "<uuid>__lock__<seq>" and "<uuid>__rlock__<seq>" are
// recognised too (KazooNaming). Order is the sequence suffix alone, so
// shepherd, Curator and zk.Lock contending on one path exclude each other.
//
// # What is promised
//
// The exported identifiers of this package and their documented contracts
// are API, under the compatibility promise of CHANGELOG.md (a v0 minor
// release may break them, listing each break with its migration): what a
// call guarantees, what it leaves behind when it fails, which sentinel error
// it returns, the node names and layouts shared with Curator, Kazoo and
// go-zookeeper. Not promised: the text of error messages (match errors with
// errors.Is), the number of round trips or watches a call makes, retry
// pacing and backoff, log records, the order of observer events between
// goroutines, and anything unexported or internal.
package recipe

import (
	"github.com/shepherdzk/shepherd/hold"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/session"
)

// Hold is one granted lock, lease or leadership: see package hold, where
// its contract and its methods are documented.
//
// Deprecated: use hold.Hold (the same type).
type Hold = hold.Hold

// Token is a hold's fencing token: the creation zxid of the holder's node.
//
// Deprecated: use hold.Token (the same type).
type Token = hold.Token

// Errors returned by every recipe, matched with errors.Is.
var (
	// ErrInvalidPath: the recipe path is not one a recipe may use.
	ErrInvalidPath = line.ErrInvalidPath
	// ErrInvalidArgument: a bad argument other than the path (nil session,
	// maxLeases < 1, data too large, an id with '/', ...). It matches
	// session.ErrInvalidArgument too, which every invalid argument to
	// shepherd matches (fence's and the session's included).
	ErrInvalidArgument = line.ErrInvalidArgument
	// ErrNotHeld: Unlock or Release of something not held.
	ErrNotHeld = line.ErrNotHeld
	// ErrLost: the hold, or the session it lived in, was lost.
	ErrLost = line.ErrLost
	// ErrRevoked is the cause (context.Cause) of a hold's end when an
	// operator revoked it (Revoke); it matches ErrLost.
	ErrRevoked = line.ErrRevoked
	// ErrReleased is the cause (context.Cause) of a hold's Context ending at
	// its holder's release; a loss's cause matches ErrLost.
	ErrReleased = line.ErrReleased
	// ErrPaused: the hold was paused (PauseOnDisconnect) while an operation
	// on it was in flight: the connection was lost, and the operation's
	// outcome is unknown. The hold is not lost: wait at its Gate.
	ErrPaused = line.ErrPaused
	// ErrClosed: the session manager is closed.
	ErrClosed = line.ErrClosed
	// ErrMaxLeasesMismatch: the semaphore's path records a different maxLeases.
	ErrMaxLeasesMismatch = line.ErrMaxLeasesMismatch
	// ErrWrongKind: the path belongs to a different kind of recipe (a
	// semaphore's path used as a mutex, or the reverse).
	ErrWrongKind = line.ErrWrongKind
	// ErrForeignRecipe: the path holds contender nodes named by another
	// library (or the other naming: see Naming), whose recipes do not see
	// this one's nodes, or another recipe's nodes it cannot share a line
	// with. No one is granted there; the error names the node found.
	ErrForeignRecipe = line.ErrForeignRecipe
	// ErrSequenceExhausted: the path's sequence counter has run out, so its
	// line has no order. ZooKeeper numbers sequential children with a
	// signed 32-bit counter per parent that, on ZooKeeper 3.8, sticks at
	// 2^31−1 (and gives wrapped, negative numbers to creates in flight
	// together). shepherd fails closed: a line holding a duplicate, the
	// maximal or a negative sequence number grants no one, and every
	// contender that sees it leaves with this error, which names the path.
	// The counter restarts only when the path is deleted and created again
	// (a recipe's own parents are container nodes, which the server removes
	// once they are empty; a path created otherwise must be deleted by the
	// operator once nothing holds or waits on it). At a thousand
	// acquisitions a second a path runs out after about 25 days.
	ErrSequenceExhausted = line.ErrSequenceExhausted
	// ErrPermission: a node's ACL denies this session a request the recipe
	// needs (ZooKeeper's NoAuth): joining a path created by another
	// principal, say (see session.WithACL). The error is a
	// *PermissionError, naming the node and the permission; it matches
	// zk.ErrNoAuth too, and is never retried: the call returns it, with
	// nothing of its own left at the path.
	ErrPermission = line.ErrPermission
	// ErrNoPrincipal: the session's ACL names its creator, but the server
	// authenticated the session as no one (see session.ErrNoPrincipal).
	ErrNoPrincipal = line.ErrNoPrincipal
	// ErrWouldWait: a recipe's Try call (TryLock, TryAcquire) would have
	// had to wait.
	ErrWouldWait = line.ErrWouldWait
	// ErrNodeGone reports that a contender's node disappeared from the
	// line: its session must have ended.
	ErrNodeGone = line.ErrNodeGone
)

// PermissionError is a request refused by a node's ACL: see
// session.PermissionError.
type PermissionError = session.PermissionError

// MaxDataLen bounds the data a recipe stores in a node (ZooKeeper's own limit
// is about 1 MiB per request; holders' data is meant to be an id).
const MaxDataLen = line.MaxDataLen

// Naming is how a recipe names its contender nodes, and so which other
// libraries see them: CuratorNaming (the default) or KazooNaming.
type Naming = line.Naming

// The two namings.
const (
	// CuratorNaming names nodes as Curator does: _c_<guid>-lock-<seq>,
	// _c_<guid>-latch-<seq>, _c_<guid>-__READ__<seq>, _c_<guid>-__WRIT__<seq>.
	CuratorNaming = line.CuratorNaming
	// KazooNaming names nodes as Kazoo does: <guid>__lock__<seq> for a
	// mutex, a writer and an election candidate, <guid>__rlock__<seq> for a
	// reader.
	KazooNaming = line.KazooNaming
)

// Kinds of contender nodes, as Curator (and Kazoo) name them: Entry.Kind is
// one of these, and a Line's contenders take one.
const (
	KindLock      = line.KindLock      // mutex (Curator InterProcessMutex, go-zookeeper zk.Lock)
	KindLatch     = line.KindLatch     // election (Curator LeaderLatch)
	KindLease     = line.KindLease     // semaphore lease (Curator InterProcessSemaphoreV2)
	KindRead      = line.KindRead      // read-write lock, reader
	KindWrite     = line.KindWrite     // read-write lock, writer
	KindKazooLock = line.KindKazooLock // Kazoo Lock (and Election)
	KindKazooRead = line.KindKazooRead // Kazoo ReadLock
)
