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
// An Op's path is in the session's namespace, as a recipe's path is (see
// session.WithNamespace); a Create makes a persistent node with the session's
// ACL. Fenced also accepts go-zookeeper's own requests (*zk.CreateRequest,
// *zk.SetDataRequest, *zk.DeleteRequest, *zk.CheckVersionRequest), with full
// paths, for anything else (a sequential or ephemeral create, another ACL).
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
// (the hold's Token or Term), checked by the resource written.
package fence

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/zkpath"
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

// Op is one write of a fenced multi-op: Set, Create or Delete. The zero Op is
// invalid (Fenced refuses it).
type Op struct {
	kind    kind
	path    string
	data    []byte
	version int32
}

// Set writes data to the node at path if its version is version (AnyVersion:
// whatever it is). Its response's Stat holds the node's new version.
func Set(path string, data []byte, version int32) Op {
	return Op{kind: opSet, path: path, data: append([]byte(nil), data...), version: version}
}

// Create creates a persistent node at path holding data, with the session's
// ACL. Its parent must exist (see Ensure).
func Create(path string, data []byte) Op {
	return Op{kind: opCreate, path: path, data: append([]byte(nil), data...)}
}

// Delete removes the node at path if its version is version (AnyVersion:
// whatever it is).
func Delete(path string, version int32) Op {
	return Op{kind: opDelete, path: path, version: version}
}

// Path is the op's path (in the session's namespace).
func (o Op) Path() string { return o.path }

func (o Op) String() string {
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

// Request is the go-zookeeper request o stands for in sess: its path in the
// session's namespace, a Create with the session's ACL. Holds call it for
// the ops given to Fenced; a caller has no need to.
func (o Op) Request(sess *session.Session) (any, error) {
	if o.kind == 0 {
		return nil, fmt.Errorf("fence: %w: the zero Op", ErrInvalidPath)
	}
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

// Ensure creates the node at path (in the session's namespace) holding data,
// and any of its parents that are missing (empty), as persistent nodes with
// the session's ACL, so that fenced writes have a target. A node already
// there is left as it is (its data untouched). It retries a create whose
// answer was lost while the session lives, and returns ctx's error if ctx
// ends first. It costs one round trip when the parents exist, one more per
// missing parent.
func Ensure(ctx context.Context, sess *session.Session, path string, data []byte) error {
	if sess == nil {
		return errors.New("fence: nil session")
	}
	if err := zkpath.Validate(path); err != nil {
		return fmt.Errorf("fence: %w", err)
	}
	full := sess.Path(path)
	return sess.Do(ctx, func(ep *session.Epoch) error {
		create := func(p string, data []byte) error {
			_, err := ep.Conn().Create(p, data, 0, sess.ACL())
			if err != nil && !errors.Is(err, zk.ErrNodeExists) {
				if e := session.ACLError("create", p, err); e != err {
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
		return nil, 0, errors.New("fence: nil session")
	}
	if err := zkpath.Validate(path); err != nil {
		return nil, 0, fmt.Errorf("fence: %w", err)
	}
	err = sess.Do(ctx, func(ep *session.Epoch) error {
		d, st, err := ep.Conn().Get(sess.Path(path))
		if err != nil {
			return err
		}
		data, version = d, st.Version
		return nil
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, 0, fmt.Errorf("fence: %s: %w (create it once with fence.Ensure)", path, err)
	}
	return data, version, err
}
