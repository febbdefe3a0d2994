package line

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/wire/zkpath"
	"github.com/shepherdzk/shepherd/session"
)

// NewGUID returns a fresh random guid for a protected create: 32 lowercase
// hex digits laid out as an RFC 9562 UUIDv8 (version nibble 8, variant 10),
// which is how a shepherd contender's node is told from another library's
// (see Name.Shepherd). Curator's guids are dashed UUIDs and Kazoo's are
// UUIDv4 hex: neither ever matches.
func NewGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b[:])
}

// Shepherd reports whether the node was created by shepherd (its guid is
// NewGUID's): a contender that handles every kind of watch event on the node
// it waits behind, a data change included. A foreign node may not (Curator's
// LeaderLatch acts only on its predecessor's deletion, and a data change
// spends its one-shot watch). A guid of shepherd's first release (plain
// random hex) matches 1 time in 64, which is harmless: those waiters too
// handle every event.
func (n Name) Shepherd() bool {
	g := n.GUID
	if len(g) != 32 || g[12] != '8' || (g[16] != '8' && g[16] != '9' && g[16] != 'a' && g[16] != 'b') {
		return false
	}
	for i := 0; i < len(g); i++ {
		if c := g[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// EnsurePath creates the line's path and its parents (container nodes, see
// EnsurePath), or, when the line has an Ensure function, calls it.
func (l *Line) ensurePath(ep *session.Epoch) error {
	if l.Ensure != nil {
		return l.Ensure(ep)
	}
	return EnsurePath(l.Sess, ep, l.Path)
}

// EnsurePath creates p and its parents that are missing, as container nodes
// (empty, the session's ACL): ZooKeeper (3.5+) removes a container that has
// had children and has none left, so a path nobody uses any more does not
// stay behind for ever (Curator creates its recipes' parents the same way).
// A container can so disappear at any moment it is empty, between this call
// and the create meant for it too: a caller whose create then fails with
// zk.ErrNoNode calls EnsurePath again (a container just created has had no
// child, and is not removed). A parent that vanishes while EnsurePath walks
// down is created again, a bounded number of times. For p "/" (the parent of
// a path directly under the root) there is nothing to create.
func EnsurePath(sess *session.Session, ep *session.Epoch, p string) error {
	if sess == nil || ep == nil {
		return fmt.Errorf("ensure path: %w: nil session or epoch", ErrInvalidArgument)
	}
	if p == "/" {
		return nil // the root always exists (and cannot be created)
	}
	path := append(zkpath.Parents(p), p)
	var err error
	for round := 0; round < ensureRounds; round++ {
		if err = ensureOnce(sess, ep, path); !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return err
}

// ensureRounds bounds EnsurePath's walks down the path (each one is undone
// only by a container removed between two of its creates) and the creates a
// caller retries after zk.ErrNoNode.
const ensureRounds = 10

func ensureOnce(sess *session.Session, ep *session.Epoch, path []string) error {
	for _, q := range path {
		_, err := ep.Conn().CreateContainer(q, nil, zk.FlagContainer, sess.ACL())
		if errors.Is(err, zk.ErrNoAuth) {
			// The server checks the parent's ACL before it looks for the
			// node: a node that exists under a parent we may not create
			// in (a tree an operator made) is there all the same.
			if ok, _, xerr := ep.Conn().Exists(q); xerr == nil && ok {
				continue
			}
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return aclerr.Map("create", q, err)
		}
	}
	return nil
}
