package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/hold"
	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/session"
)

// Entry is one node of a recipe: a holder or a waiter.
type Entry struct {
	Node      string     `json:"node"`
	Kind      string     `json:"kind"` // the name's kind ("lock-", "lease-", ...)
	Seq       int64      `json:"seq"`
	Data      string     `json:"data,omitempty"` // the holder's id or data
	SessionID int64      `json:"session_id"`     // the owning session
	Created   time.Time  `json:"created"`
	Token     hold.Token `json:"token"` // the creation zxid: the fencing token
	// Library names the library and recipe whose naming the node uses
	// (line.Library(Kind)): "kazoo __lock__ (Lock, WriteLock, Election)", ...; a
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
	Path string `json:"path"`
	// Kind is the recipe's kind, as package layout declares it: mutex,
	// rwlock, semaphore, election, schedule; "empty" when nothing is there.
	Kind string `json:"kind"`
	Fair bool   `json:"fair"`
	// Idle: a recipe's trace is there (a non-fair recipe's persistent
	// path, a schedule's record, a semaphore's limit) but no one holds or
	// waits.
	Idle bool `json:"idle,omitempty"`
	// Others are the kinds whose nodes are at the path too (a path that
	// mixes kinds: no shepherd recipe makes one; another library, or an
	// older release, may have).
	Others    []string `json:"others,omitempty"`
	MaxLeases int      `json:"max_leases,omitempty"`
	Holders   []Entry  `json:"holders"` // the lock holder(s), lease holders, or the leader
	Waiters   []Entry  `json:"waiters"` // in line order
	// Names is the naming the path's contender nodes use: "curator",
	// "kazoo", "mixed" (both: shepherd refuses the path, and neither library
	// sees the other's nodes) or "" (no contender nodes).
	Names string `json:"names,omitempty"`
	// PartOf, when set, is the path of the recipe whose layout the path is
	// a part of, as its parent's data says (a semaphore's leases, a
	// schedule's record): Kind is then "empty", with no holders nor
	// waiters of its own (inspect PartOf; an operator's action on the path
	// would act on a part of that recipe).
	PartOf string `json:"part_of,omitempty"`
	// Watch fires when the snapshot may have changed (set by InspectW).
	Watch <-chan zk.Event `json:"-"`
}

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
		return nil, fmt.Errorf("inspect: %w: nil session", line.ErrInvalidArgument)
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
// The kind is package layout's (Classify), from the path's data and
// children.
func inspectIn(ep *session.Epoch, path string, watch bool) (*Snapshot, error) {
	in := &inspector{c: ep.Conn(), path: path, watch: watch}
	if parent, ok, err := in.partOf(path); err != nil {
		return nil, err
	} else if ok {
		snap, err := in.empty(path)
		if err != nil {
			return nil, err
		}
		snap.PartOf = parent
		snap.Watch = merge(in.watches)
		return snap, nil
	}
	snap, err := in.read(path)
	if err != nil {
		return nil, err
	}
	snap.Watch = merge(in.watches)
	return snap, nil
}

// read is what is at p.
func (in *inspector) read(p string) (*Snapshot, error) {
	data, _, err := in.c.Get(p)
	err = aclerr.Map("getData", p, err)
	if errors.Is(err, zk.ErrNoNode) {
		return in.empty(p)
	} else if err != nil {
		return nil, err
	}
	names, err := in.children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return in.empty(p)
	} else if err != nil {
		return nil, err
	}
	seen, err := in.seen(p, data, names)
	if err != nil {
		return nil, err
	}
	k, others := layout.KindOf(layout.Classify(seen))
	var snap *Snapshot
	switch k {
	case layout.Semaphore:
		snap, err = in.semaphore(p, data)
	case layout.Schedule:
		snap, err = in.schedule(p)
	default:
		snap, err = in.contenders(p, names, k)
	}
	if err != nil {
		return nil, err
	}
	for _, o := range others {
		snap.Others = append(snap.Others, o.Name)
	}
	snap.Idle = k != nil && len(snap.Holders) == 0 && len(snap.Waiters) == 0
	return snap, nil
}

// partOf reports whether p is a part of another recipe's layout, as its
// parent's data says (layout.PartOf), and the parent's path: not a part
// where a recipe may be made (a schedule's election, at its leader). A
// parent that is missing, or that this session may not read, claims
// nothing.
func (in *inspector) partOf(p string) (string, bool, error) {
	parent, data, st, err := line.ReadParent(in.c, p)
	if err != nil || st == nil {
		return "", false, err
	}
	k, n := layout.PartOf(data, p[len(parent)+1:])
	return parent, k != nil && len(n.Recipes) == 0, nil
}

// seen is p's data and children (names) as package layout reads them.
func (in *inspector) seen(p string, data []byte, names []string) (layout.Seen, error) {
	seen := layout.Seen{Data: data}
	for _, n := range names {
		ch := layout.Child{Name: n}
		if pn, ok := line.ParseName(n); ok {
			ch.Contender = pn.Kind
		}
		if layout.Ambiguous(n) {
			ok, st, err := in.c.Exists(join(p, n))
			if err != nil {
				return layout.Seen{}, aclerr.Map("exists", join(p, n), err)
			}
			if !ok {
				continue
			}
			ch.Ephemeral = st.EphemeralOwner != 0
		}
		seen.Children = append(seen.Children, ch)
	}
	return seen, nil
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
		return names, aclerr.Map("getChildren", p, err)
	}
	names, _, err := in.c.Children(p)
	return names, aclerr.Map("getChildren", p, err)
}

// empty is the snapshot of nothing at p (the path may also vanish while it
// is read: recipes' paths are containers, which the server removes once
// empty).
func (in *inspector) empty(p string) (*Snapshot, error) {
	snap := newSnapshot(p)
	if in.watch {
		_, _, ch, err := in.c.ExistsW(p)
		if err != nil {
			return nil, aclerr.Map("exists", p, err)
		}
		in.watches = append(in.watches, ch)
	}
	return snap, nil
}

// entries reads the nodes named by names under dir, skipping those gone
// meanwhile.
func (in *inspector) entries(dir string, names []line.Name) ([]Entry, error) {
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

// entry reads one node's owner, age and data.
func entry(c *zk.Conn, p string, n line.Name) (Entry, bool, error) {
	data, st, err := c.Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return Entry{}, false, nil // gone meanwhile
	} else if err != nil {
		return Entry{}, false, aclerr.Map("getData", p, err)
	}
	data, revoke := layout.RevokeRequest(data)
	return Entry{Node: p, Kind: n.Kind, Seq: n.Seq, Data: string(data), SessionID: st.EphemeralOwner,
		Created: time.UnixMilli(st.Ctime), Token: hold.Token(st.Czxid), Library: line.Library(n.Kind), Revoke: revoke}, true, nil
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
