package recipe

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/session"
)

// Line is a waiting line of contenders under one path, for a recipe of one's
// own: the toolkit of this package (examples/barrier is a double barrier
// written on it). Its contenders' nodes are EPHEMERAL_SEQUENTIAL, named as
// Curator names them, of one Kind. A Line holds no state of its own: it may
// be copied, and used by several goroutines.
type Line struct {
	Sess *session.Session
	// Recipe names the recipe ("barrier", ...) in the events the line and
	// its holds report to the session's observer.
	Recipe string
	// Path is the line's path, in full (namespace included:
	// session.Session.Path gives it). Enter creates it and its parents as
	// container nodes when missing.
	Path string
	// Kind is the kind of the line's nodes (one of the Kind constants): a
	// contender of another kind makes the path foreign (ErrForeignRecipe).
	Kind string
	// Naming is how the line names its nodes (CuratorNaming, the zero value,
	// or KazooNaming).
	Naming Naming
	// OnDisconnect is what a lost connection does to the line's holds (0:
	// the session's DisconnectPolicy).
	OnDisconnect session.DisconnectPolicy
}

// Node is a contender's own node in a Line, as Enter made it.
type Node struct {
	Path string // in full
	Name Name
	n    *line.Node
}

// Position is the node's place in line when Await first saw it (0: the
// head), or -1 before.
func (n *Node) Position() int { return n.n.Position }

func (l *Line) core() *line.Line {
	return &line.Line{Sess: l.Sess, Recipe: l.Recipe, Path: l.Path, Kinds: []string{l.Kind},
		Naming: l.Naming, OnDisconnect: l.OnDisconnect}
}

// Enter joins the line in ep's session with a protected create: if the
// create's answer is lost, the node is looked for by its guid (and adopted
// only if ep's session owns it) before another create is tried, so a lost
// answer leaves neither an orphan nor a duplicate. If ctx ends with the
// create in flight, what it made is removed.
func (l *Line) Enter(ctx context.Context, ep *session.Epoch, data []byte) (*Node, error) {
	if l.Kind == "" {
		return nil, fmt.Errorf("line %s: %w: no Kind", l.Path, ErrInvalidArgument)
	}
	n, err := l.core().Enter(ctx, ep, l.Kind, data)
	if err != nil {
		return nil, err
	}
	// The listing sent with the create is stale by the time a recipe of
	// one's own awaits (a barrier's member awaits its turn to leave long
	// after it entered): Await lists the line afresh.
	n.TakeSeen()
	return &Node{Path: n.Path, Name: n.Name, n: n}, nil
}

// List returns the line's contenders in order (of sequence numbers).
func (l *Line) List(ep *session.Epoch) ([]Name, error) { return l.core().List(ep) }

// Await waits, within ep, until turn grants own: it lists the line, asks
// turn, and otherwise watches the one node turn names (one watch per
// waiter), going round again when it changes. It returns nil when granted
// while ep is still live; ErrNodeGone when own has left the line; ctx.Err()
// when ctx ends; another error when ep ended (the connection was lost: wait
// for the session with session.Session.Wait and call again with the same
// turn, or enter again if the session is a new one). A call again in the
// same session sleeps on the watches the cut-short wait had set (the
// session's connection sets them again when it comes back), without
// listing the line again. It leaves own in line whatever it returns.
func (l *Line) Await(ctx context.Context, ep *session.Epoch, own *Node, turn Turn) error {
	if own == nil || own.n == nil || turn == nil {
		return fmt.Errorf("line %s: %w: nil node or turn", l.Path, ErrInvalidArgument)
	}
	return l.core().Await(ctx, ep, own.n, turn)
}

// Hold grants own's place as a Hold within ep (see Hold for its contract):
// its token is the creation zxid of own's node, its fence the node's
// existence, and its Release deletes the node with a guaranteed delete.
func (l *Line) Hold(ep *session.Epoch, own *Node) *Hold { return l.core().HoldOf(ep, own.n) }

// Leave removes own's node with a guaranteed delete (it goes on in the
// background until the node or its session is gone); the channel is closed
// once it is done.
func (l *Line) Leave(ep *session.Epoch, own *Node) <-chan struct{} {
	return l.core().Leave(ep, own.Path)
}

// Name is a parsed contender node name. It is a struct of four fields
// (go doc shows an alias's target only, so they are listed here):
//
//	Name string // the node's name (the last path element)
//	GUID string // the protected-create guid, "" if none
//	Kind string // one of the Kind constants
//	Seq  int64  // the sequence suffix
type Name = line.Name

// Turn decides, from the line and our index i in it, whether we are granted;
// if not, which node to watch (its index: usually one ahead of i, the node
// whose deletion can change the answer; any node of the line may be
// watched), and whether that node's deletion alone grants us (no need to
// list the line again). Turn is a pure function, of this type (go doc
// shows an alias's target only):
//
//	func(line []Name, i int) (granted bool, watch int, deletionGrants bool)
type Turn = line.Turn

// HeadTurn is the turn of a line whose head alone is granted (a lock, a
// writer, the semaphore's head, the leader): a waiter watches its
// predecessor, whose deletion alone grants it when that was the head
// (sequence numbers only grow).
func HeadTurn(names []Name, i int) (granted bool, watch int, deletionGrants bool) {
	return line.HeadTurn(names, i)
}

// Index returns the position of the node called name in names (a line), or
// -1.
func Index(names []Name, name string) int { return line.Index(names, name) }

// Call runs fn on ep's connection and returns its result, or ctx.Err() as
// soon as ctx ends: go-zookeeper's requests have no deadline of their own (a
// stalled connection answers only when its read timeout, 2/3 of the session
// timeout, fails it). If Call gives up with fn still running, undo (when not
// nil) is called with fn's result once fn finishes: to undo what a request
// the caller gave up on did after all (a create that landed). Reads need no
// undo.
func Call[T any](ctx context.Context, ep *session.Epoch, fn func(c *zk.Conn) (T, error), undo func(T, error)) (T, error) {
	return epcall.Call(ctx, ep, fn, undo)
}

// Exec is Call for calls with no result to return or undo.
func Exec(ctx context.Context, ep *session.Epoch, fn func(c *zk.Conn) error) error {
	return epcall.Exec(ctx, ep, fn)
}
