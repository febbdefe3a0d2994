// Package fence names the writes a hold makes fenced, so that the common case
// needs no import of go-zookeeper.
//
// Every hold (a mutex's, a semaphore lease, an election leadership) has a
// Fenced(ctx, ops...) method that runs ops as one ZooKeeper multi-op together
// with a check that the hold is still valid on the server: the writes land
// only while the hold does, and a write made after the hold is gone fails
// with an error matching ErrLost instead of landing. Pass it this package's
// ops:
//
//	if err := fence.Ensure(ctx, sess, "/jobs/backup/state", nil); err != nil { ... }
//	...
//	res, err := m.Fenced(ctx, fence.Set("/jobs/backup/state", []byte(tok.String()), fence.AnyVersion))
//	// res[0].Stat.Version is the node's new version
//
// Fenced takes Ops only, so a wrong argument does not compile. A Set's,
// Create's or Delete's path is in the session's namespace, as a recipe's
// path is (see session.WithNamespace); a Create makes a persistent node with
// the session's ACL. For anything else (a sequential or ephemeral create,
// another ACL, a version check), Raw makes an Op of go-zookeeper's own
// request, whose path is full (sess.Path(p) is p's, with the namespace):
//
//	res, err := m.Fenced(ctx, fence.Raw(&zk.CreateRequest{Path: full, Data: data, Acl: acl, Flags: zk.FlagEphemeral}))
//
// Fenced returns one response per op, in order: for a Set, its Stat holds
// the node's new version (Stat.Version); for a Create, String is the
// created path (full, with the namespace). When an op itself fails (a Set's
// version is not the node's, a Create finds the node there, a Delete finds
// none), no op lands and the error matches ErrBadVersion, ErrNodeExists or
// ErrNoNode; each response's Error says which op failed.
//
// # What fencing guarantees
//
// The check and the writes are one transaction: they land together, only
// if the hold's node is still there (and, for the single-node race of a
// non-fair mutex or election, only if no grant was made since). A holder
// that is paused past the loss of its session cannot land a fenced write
// afterwards. Writes to anything other than ZooKeeper need a token instead
// (the hold's Token or Term), checked by the resource written: package
// sqlfence checks it in a SQL database (inside the writer's transaction),
// package httpfence in an HTTP service (a client transport and a server
// middleware).
//
// # Tokens
//
// A hold's token is the creation zxid of its node: ZooKeeper's transaction
// id, one sequence for the whole ensemble, so tokens grow across session
// expiry, server restarts and leader changes (a new ZooKeeper epoch raises
// the high 32 bits). A resource fenced by tokens keeps the highest it has
// seen and refuses lower ones; fence each resource with one lock (or
// election, or schedule), named by its path. What each kind of hold's token
// orders:
//
//   - A fair mutex (mutex.New): holders are granted in the order of their
//     nodes in line, which is the order the nodes were created, so every
//     later holder's token is higher. A reentrant Lock keeps the token.
//   - A non-fair mutex (mutex.NonFair): the one node is created at each
//     grant, so each grant's token is higher than the last.
//   - A read-write lock (mutex.NewRW): the writer's token (Writer().Token)
//     orders writers as a fair mutex's does. Readers hold side by side:
//     their tokens order their places in line, not exclusive access, and
//     fence nothing on their own.
//   - A semaphore: a lease's node is created at its grant, so a later grant
//     has a higher token. With maxLeases 1 it is a lock, and its token
//     fences as a mutex's. With more, leases are held side by side: a
//     resource that keeps the highest token would refuse every holder but
//     the newest, so fence with a lease's token only what one lease at a
//     time writes. A slot (WithSlots, SHEPHERD_SLOT) is not ordered by
//     lease tokens: a lease granted earlier may take a slot after a lease
//     granted later freed it.
//   - An election's Term (fair or non-fair) is its leader's node's creation
//     zxid: every later leadership has a higher term. A leadership resumed
//     after a reconnect of the same session keeps its term: the same holder.
//   - A schedule's Tick.Term is the term of the leadership that runs the
//     tick: a tick run again by the next leader (RerunInterrupted) carries a
//     higher term. Tick.N is not a fencing token (the same N runs again):
//     key a tick's effects by N, fence them by Term.
//
// The CLI gives CMD the token as SHEPHERD_TOKEN (and, for elect and
// schedule, the term as SHEPHERD_TERM), in decimal. An ensemble rebuilt
// from empty data starts its zxids over: its tokens are lower than those a
// resource has seen, which must then forget them (sqlfence: delete the
// table's rows).
package fence

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/wire/zkpath"
	"github.com/shepherdzk/shepherd/session"
)

// Errors of a fenced op that failed on its own (the hold was still valid),
// matched with errors.Is. They are go-zookeeper's, named here so that a
// caller need not import it.
var (
	// ErrBadVersion: a Set or Delete named a version the node does not have.
	ErrBadVersion = zk.ErrBadVersion
	// ErrNodeExists: a Create found the node there already.
	ErrNodeExists = zk.ErrNodeExists
	// ErrNoNode: a Set or Delete found no node, or a Create found no parent.
	ErrNoNode = zk.ErrNoNode
	// ErrInvalidPath: an op's path is not a valid ZooKeeper path (see
	// recipe.ErrInvalidPath).
	ErrInvalidPath = zkpath.ErrInvalid
)

// AnyVersion as an op's version matches whatever version the node has.
const AnyVersion int32 = -1

type kind int8

const (
	opSet kind = iota + 1
	opCreate
	opDelete
)

// Op is one write (or check) of a fenced multi-op. Only this package makes
// Ops: Set, Create and Delete (paths in the session's namespace) and Raw
// (one of go-zookeeper's requests, its path full), so a hold's Fenced takes
// nothing else. A nil Op is invalid (Fenced refuses it).
type Op interface {
	// String names the op and its path, as errors do.
	String() string
	// request is the go-zookeeper request the op stands for in sess.
	request(sess *session.Session) (any, error)
}

// op is an Op of Set, Create or Delete.
type op struct {
	kind    kind
	path    string
	data    []byte
	version int32
}

// Set writes data to the node at path if its version is version (AnyVersion:
// whatever it is). Its response's Stat holds the node's new version.
func Set(path string, data []byte, version int32) Op {
	return op{kind: opSet, path: path, data: append([]byte(nil), data...), version: version}
}

// Create creates a persistent node at path holding data, with the session's
// ACL. Its parent must exist (see Ensure).
func Create(path string, data []byte) Op {
	return op{kind: opCreate, path: path, data: append([]byte(nil), data...)}
}

// Delete removes the node at path if its version is version (AnyVersion:
// whatever it is).
func Delete(path string, version int32) Op {
	return op{kind: opDelete, path: path, version: version}
}

func (o op) String() string {
	switch o.kind {
	case opSet:
		return "set " + o.path + " version " + strconv.Itoa(int(o.version))
	case opCreate:
		return "create " + o.path
	case opDelete:
		return "delete " + o.path + " version " + strconv.Itoa(int(o.version))
	}
	return "invalid op"
}

func (o op) request(sess *session.Session) (any, error) {
	if err := zkpath.Validate(o.path); err != nil {
		return nil, fmt.Errorf("fence: %s: %w", o, err)
	}
	p := sess.Path(o.path)
	switch o.kind {
	case opSet:
		return &zk.SetDataRequest{Path: p, Data: o.data, Version: o.version}, nil
	case opCreate:
		return &zk.CreateRequest{Path: p, Data: o.data, Acl: sess.ACL()}, nil
	default:
		return &zk.DeleteRequest{Path: p, Version: o.version}, nil
	}
}

// Raw is req as an Op, for what Set, Create and Delete do not say: a
// sequential or ephemeral create, another ACL, a version check of another
// node. req's path is full (the session's namespace is not prepended) and
// is sent as it is; req is not copied, so it must not change until Fenced
// returns. A nil req is invalid (Fenced refuses it).
func Raw[R *zk.CreateRequest | *zk.SetDataRequest | *zk.DeleteRequest | *zk.CheckVersionRequest](req R) Op {
	return raw{req: req, isNil: req == nil}
}

// raw is an Op of Raw: one of the go-zookeeper requests Raw takes.
type raw struct {
	req   any
	isNil bool
}

func (o raw) String() string {
	if o.isNil {
		return fmt.Sprintf("nil %T", o.req)
	}
	switch r := o.req.(type) {
	case *zk.SetDataRequest:
		return "set " + r.Path + " version " + strconv.Itoa(int(r.Version))
	case *zk.CreateRequest:
		return "create " + r.Path
	case *zk.DeleteRequest:
		return "delete " + r.Path + " version " + strconv.Itoa(int(r.Version))
	case *zk.CheckVersionRequest:
		return "check " + r.Path + " version " + strconv.Itoa(int(r.Version))
	}
	return "invalid op"
}

func (o raw) request(*session.Session) (any, error) {
	if o.isNil {
		return nil, fmt.Errorf("fence: %w: Raw(%s)", ErrInvalidPath, o)
	}
	return o.req, nil
}

// Requests is the go-zookeeper requests ops stand for in sess, in order,
// as a hold's Fenced sends them: a Set's, Create's or Delete's path in the
// session's namespace, a Create with the session's ACL, a Raw op's request
// as it is. A nil op, or an invalid path of a Set, Create or Delete, is an
// error matching ErrInvalidPath. Holds call it; a caller has no need to.
func Requests(sess *session.Session, ops []Op) ([]any, error) {
	if sess == nil {
		return nil, fmt.Errorf("fence: %w: nil session", session.ErrInvalidArgument)
	}
	reqs := make([]any, len(ops))
	for i, o := range ops {
		if o == nil {
			return nil, fmt.Errorf("fence: %w: op %d is nil", ErrInvalidPath, i)
		}
		r, err := o.request(sess)
		if err != nil {
			return nil, err
		}
		reqs[i] = r
	}
	return reqs, nil
}

// Ensure creates the node at path (in the session's namespace) holding data,
// and any of its parents that are missing (empty), as persistent nodes with
// the session's ACL, so that fenced writes have a target. A node already
// there is left as it is (its data untouched). It retries a create whose
// answer was lost while the session lives, and returns ctx's error if ctx
// ends first. It costs one round trip when the parents exist, one more per
// missing parent.
func Ensure(ctx context.Context, sess *session.Session, path string, data []byte) error {
	if sess == nil {
		return fmt.Errorf("fence: %w: nil session", session.ErrInvalidArgument)
	}
	if err := zkpath.Validate(path); err != nil {
		return fmt.Errorf("fence: %w", err)
	}
	full := sess.Path(path)
	return sess.Do(ctx, func(ep *session.Epoch) error {
		create := func(p string, data []byte) error {
			_, err := ep.Conn().Create(p, data, 0, sess.ACL())
			if err != nil && !errors.Is(err, zk.ErrNodeExists) {
				if e := aclerr.Map("create", p, err); e != err {
					return fmt.Errorf("fence: %w", e) // names p and the permission
				}
				return fmt.Errorf("fence: creating %s: %w", p, err)
			}
			return nil
		}
		err := create(full, data)
		if !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		for _, p := range zkpath.Parents(full) {
			if err := create(p, nil); err != nil {
				return err
			}
		}
		return create(full, data)
	})
}

// Get reads the node at path (in the session's namespace, as the ops'
// paths are): its data and version, the version a Set or Delete can name
// to change exactly what was read. It retries a read that met a connection
// problem while the session lives, and returns ctx's error if ctx ends
// first; a missing node is an error matching ErrNoNode that says to create
// it with Ensure. A read is not fenced: it tells what the state was, and a
// fenced write with the version read tells whether it still is.
func Get(ctx context.Context, sess *session.Session, path string) (data []byte, version int32, err error) {
	if sess == nil {
		return nil, 0, fmt.Errorf("fence: %w: nil session", session.ErrInvalidArgument)
	}
	if err := zkpath.Validate(path); err != nil {
		return nil, 0, fmt.Errorf("fence: %w", err)
	}
	var got []byte
	var gotVersion int32
	err = sess.Do(ctx, func(ep *session.Epoch) error {
		d, st, err := ep.Conn().Get(sess.Path(path))
		if err != nil {
			return err
		}
		got, gotVersion = d, st.Version
		return nil
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, 0, fmt.Errorf("fence: %s: %w (create it once with fence.Ensure)", path, err)
	case err != nil:
		return nil, 0, err // op may still run: do not read what it writes
	}
	return got, gotVersion, nil
}
