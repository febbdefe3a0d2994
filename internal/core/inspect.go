package core

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/session"
)

// Entry is one node of a recipe: a holder or a waiter.
type Entry struct {
	Node      string    `json:"node"`
	Kind      string    `json:"kind"` // the name's kind ("lock-", "lease-", ...)
	Seq       int64     `json:"seq"`
	Data      string    `json:"data,omitempty"` // the holder's id or data
	SessionID int64     `json:"session_id"`     // the owning session
	Created   time.Time `json:"created"`
	Token     Token     `json:"token"` // the creation zxid: the fencing token
	// Library names the library and recipe whose naming the node uses
	// (Library(Kind)): "kazoo __lock__ (Lock, WriteLock, Election)", ...; a
	// semaphore's waiters, named lock- as a mutex's nodes are, are
	// "curator lock- (InterProcessSemaphoreV2 lease waiters)".
	Library string `json:"library,omitempty"`
	// Slot is a semaphore lease's slot (semaphore.WithSlots): the claim
	// node <path>/slots/<n> whose data names the lease's node; nil when the
	// lease holds none.
	Slot *int `json:"slot,omitempty"`
	// Revoke is an operator's pending revocation request on the node
	// (AskRevoke: "ask"; Revoke: "force"), "" when none.
	Revoke string `json:"revoke,omitempty"`
}

// Snapshot is what is at a recipe's path.
type Snapshot struct {
	Path      string  `json:"path"`
	Kind      string  `json:"kind"` // mutex, rwlock, semaphore, election, empty
	Fair      bool    `json:"fair"`
	MaxLeases int     `json:"max_leases,omitempty"`
	Holders   []Entry `json:"holders"` // the lock holder(s), lease holders, or the leader
	Waiters   []Entry `json:"waiters"` // in line order
	// Names is the naming the path's contender nodes use: "curator",
	// "kazoo", "mixed" (both: shepherd refuses the path, and neither library
	// sees the other's nodes) or "" (no contender nodes).
	Names string `json:"names,omitempty"`
	// Watch fires when the snapshot may have changed (set by InspectW).
	Watch <-chan zk.Event `json:"-"`
}

// semaphoreWaiters is the Library of a semaphore's waiters: Curator's
// InterProcessSemaphoreV2 queues them with an InterProcessMutex under
// "locks", so their nodes are named as a lock's, but they wait for a lease.
const semaphoreWaiters = "curator lock- (InterProcessSemaphoreV2 lease waiters)"

// Names of the nodes of non-fair recipes and of a semaphore's layout.
const (
	nonFairLockNode   = layout.NonFairLockNode
	nonFairLeaderNode = layout.NonFairLeaderNode
	semaphoreMarker   = layout.SemaphoreMarker
	semaphoreSlots    = layout.SemaphoreSlots
)

// Inspect reads what is at path (full path, namespace included): the kind of
// recipe, its holders and its waiters in line order, with their sessions,
// ages and tokens.
func Inspect(ctx context.Context, sess *session.Session, path string) (*Snapshot, error) {
	return inspect(ctx, sess, path, false)
}

// InspectW is Inspect, also setting watches: the snapshot's Watch channel
// fires at the next change of the line(s) read.
func InspectW(ctx context.Context, sess *session.Session, path string) (*Snapshot, error) {
	return inspect(ctx, sess, path, true)
}

func inspect(ctx context.Context, sess *session.Session, path string, watch bool) (*Snapshot, error) {
	if sess == nil { // any path may be read: the root, /zookeeper, ...
		return nil, fmt.Errorf("inspect: %w: nil session", ErrInvalidArgument)
	}
	var snap *Snapshot
	err := sess.Do(ctx, func(ep *session.Epoch) error {
		var err error
		snap, err = inspectIn(ep, path, watch)
		return err
	})
	if err != nil {
		return nil, err // op may still run: do not read snap
	}
	return snap, nil
}

// inspectIn is inspect's read in ep: what is at path, watched if watch.
func inspectIn(ep *session.Epoch, path string, watch bool) (*Snapshot, error) {
	in := &inspector{c: ep.Conn(), path: path, watch: watch}
	data, _, err := in.c.Get(path)
	if errors.Is(err, zk.ErrNoNode) {
		return in.empty()
	} else if err != nil {
		return nil, err
	}
	if rest, ok := strings.CutPrefix(string(data), semaphoreMarker); ok {
		return in.semaphore(rest)
	}
	return in.contenders()
}

// inspector reads one path in one epoch, and keeps the watches its reads
// set (when watch is set).
type inspector struct {
	c       *zk.Conn
	path    string
	watch   bool
	watches []<-chan zk.Event
}

// newSnapshot is the snapshot of nothing at path.
func newSnapshot(path string) *Snapshot {
	return &Snapshot{Path: path, Kind: "empty", Fair: true, Holders: []Entry{}, Waiters: []Entry{}}
}

// children lists p's children, watching them if in.watch.
func (in *inspector) children(p string) ([]string, error) {
	if in.watch {
		names, _, ch, err := in.c.ChildrenW(p)
		if err == nil {
			in.watches = append(in.watches, ch)
		}
		return names, err
	}
	names, _, err := in.c.Children(p)
	return names, err
}

// empty is the snapshot of nothing there (the path may also vanish while it
// is read: recipes' paths are containers, which the server removes once
// empty).
func (in *inspector) empty() (*Snapshot, error) {
	snap := newSnapshot(in.path)
	if in.watch {
		_, _, ch, err := in.c.ExistsW(in.path)
		if err != nil {
			return nil, err
		}
		snap.Watch = ch
	}
	return snap, nil
}

// entries reads the nodes named by names under dir, skipping those gone
// meanwhile.
func (in *inspector) entries(dir string, names []Name) ([]Entry, error) {
	out := make([]Entry, 0, len(names))
	for _, n := range names {
		e, ok, err := entry(in.c, dir+"/"+n.Name, n)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// semaphore reads a semaphore's layout (rest is its marker's remainder, the
// maximum leases): the leases as holders, with their slots, and the lease
// waiters under locks.
func (in *inspector) semaphore(rest string) (*Snapshot, error) {
	path := in.path
	snap := newSnapshot(path)
	snap.Kind = "semaphore"
	for _, ch := range rest {
		if ch < '0' || ch > '9' {
			break
		}
		snap.MaxLeases = snap.MaxLeases*10 + int(ch-'0')
	}
	leases, err := in.children(path + "/leases")
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, err
	}
	locks, err := in.children(path + "/locks")
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, err
	}
	if snap.Holders, err = in.entries(path+"/leases", Sort(leases, KindLease)); err != nil {
		return nil, err
	}
	if snap.Waiters, err = in.entries(path+"/locks", Sort(locks)); err != nil {
		return nil, err
	}
	for i := range snap.Waiters {
		snap.Waiters[i].Library = semaphoreWaiters
	}
	if err := slotsOf(in.c, path+"/"+semaphoreSlots, snap.Holders, in.children); err != nil {
		return nil, err
	}
	snap.Watch = merge(in.watches)
	return snap, nil
}

// contenders reads the path's children: a non-fair recipe's node and a line
// of contenders (shepherd's, Curator's or Kazoo's names).
func (in *inspector) contenders() (*Snapshot, error) {
	names, err := in.children(in.path)
	if errors.Is(err, zk.ErrNoNode) {
		return in.empty()
	} else if err != nil {
		return nil, err
	}
	snap := newSnapshot(in.path)
	if err := in.nonFair(snap, names); err != nil {
		return nil, err
	}
	all, err := in.entries(in.path, Sort(names))
	if err != nil {
		return nil, err
	}
	classify(snap, all)
	if snap.Fair {
		n := lineHolders(snap.Kind, all)
		snap.Holders, snap.Waiters = all[:n], all[n:]
	} else {
		snap.Waiters = all
	}
	snap.Watch = merge(in.watches)
	return snap, nil
}

// nonFair reads a non-fair recipe's node among names (the path's children)
// into snap: its holder, its kind, and Fair false.
func (in *inspector) nonFair(snap *Snapshot, names []string) error {
	for _, n := range names {
		if n == nonFairLockNode || n == nonFairLeaderNode {
			snap.Fair = false
			snap.Kind = "mutex"
			if n == nonFairLeaderNode {
				snap.Kind = "election"
			}
			e, ok, err := entry(in.c, in.path+"/"+n, Name{Name: n})
			if err != nil {
				return err
			}
			if ok {
				snap.Holders = append(snap.Holders, e)
			}
		}
	}
	return nil
}

// classify sets snap's Kind and Names from a line of contenders (all, in
// line order), if there is one.
func classify(snap *Snapshot, all []Entry) {
	if len(all) == 0 {
		return
	}
	switch all[0].Kind {
	case KindLatch:
		snap.Kind = "election"
	case KindRead, KindWrite, KindKazooRead:
		snap.Kind = "rwlock"
	default:
		snap.Kind = "mutex"
	}
	for _, e := range all {
		if e.Kind == KindKazooRead && snap.Kind == "mutex" {
			snap.Kind = "rwlock" // Kazoo's WriteLock names its nodes as its Lock does
		}
		switch names := NamingOf(e.Kind).String(); snap.Names {
		case "":
			snap.Names = names
		case names, "mixed":
		default:
			snap.Names = "mixed"
		}
	}
}

// lineHolders is how many of a fair line's contenders (all, in line order)
// hold: none in an empty line, the leading readers of a read-write lock's
// (or its first writer), else the first.
func lineHolders(kind string, all []Entry) int {
	n := 0
	if len(all) > 0 {
		n = 1
		if kind == "rwlock" {
			for n = 0; n < len(all) && (all[n].Kind == KindRead || all[n].Kind == KindKazooRead); n++ {
			}
			if n == 0 {
				n = 1
			}
		}
	}
	return n
}

// slotsOf sets the holders' slots from the claims under dir: each claim
// node is named by its slot number, its data the name of the lease node.
func slotsOf(c *zk.Conn, dir string, holders []Entry, children func(string) ([]string, error)) error {
	names, err := children(dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	} else if err != nil {
		return err
	}
	for _, n := range names {
		slot, err := strconv.Atoi(n)
		if err != nil || slot < 0 {
			continue
		}
		data, _, err := c.Get(dir + "/" + n)
		if errors.Is(err, zk.ErrNoNode) {
			continue // released meanwhile
		} else if err != nil {
			return err
		}
		for i := range holders {
			if h := &holders[i]; h.Slot == nil && h.Node[strings.LastIndex(h.Node, "/")+1:] == string(data) {
				h.Slot = &slot
			}
		}
	}
	return nil
}

// entry reads one node's owner, age and data.
func entry(c *zk.Conn, p string, n Name) (Entry, bool, error) {
	data, st, err := c.Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return Entry{}, false, nil // gone meanwhile
	} else if err != nil {
		return Entry{}, false, err
	}
	data, revoke := revokeRequest(data)
	return Entry{Node: p, Kind: n.Kind, Seq: n.Seq, Data: string(data), SessionID: st.EphemeralOwner,
		Created: time.UnixMilli(st.Ctime), Token: Token(st.Czxid), Library: Library(n.Kind), Revoke: revoke}, true, nil
}

// merge returns a channel that fires when any of chs does.
func merge(chs []<-chan zk.Event) <-chan zk.Event {
	if len(chs) == 0 {
		return nil
	}
	if len(chs) == 1 {
		return chs[0]
	}
	out := make(chan zk.Event, 1)
	for _, ch := range chs {
		go func() {
			if ev, ok := <-ch; ok {
				select {
				case out <- ev:
				default:
				}
			}
		}()
	}
	return out
}
