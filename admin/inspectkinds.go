package admin

// What Inspect reads of each kind once it knows the path's (see
// inspector.read): a semaphore's leases and slots, a schedule's election,
// a line's holders and waiters.

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/aclerr"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
)

// semaphoreWaiters is the Library of a semaphore's waiters: Curator's
// InterProcessSemaphoreV2 queues them with an InterProcessMutex under
// "locks", so their nodes are named as a lock's, but they wait for a lease.
const semaphoreWaiters = "curator lock- (InterProcessSemaphoreV2 lease waiters)"

// semaphore reads a semaphore's layout at path (data: its stamp and its
// limit; none for Curator's InterProcessSemaphoreV2): the leases as
// holders, with their slots, and the lease waiters under locks.
func (in *inspector) semaphore(path string, data []byte) (*Snapshot, error) {
	snap := newSnapshot(path)
	snap.Kind = layout.Semaphore.Name
	rest, _ := strings.CutPrefix(string(data), layout.SemaphoreStamp)
	for _, ch := range rest {
		if ch < '0' || ch > '9' {
			break
		}
		snap.MaxLeases = snap.MaxLeases*10 + int(ch-'0')
	}
	leases, err := in.children(path + "/" + layout.SemaphoreLeases)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, err
	}
	locks, err := in.children(path + "/" + layout.SemaphoreLocks)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, err
	}
	if snap.Holders, err = in.entries(path+"/"+layout.SemaphoreLeases, line.Sort(leases, line.KindLease)); err != nil {
		return nil, err
	}
	if snap.Waiters, err = in.entries(path+"/"+layout.SemaphoreLocks, line.Sort(locks)); err != nil {
		return nil, err
	}
	for i := range snap.Waiters {
		snap.Waiters[i].Library = semaphoreWaiters
	}
	if err := slotsOf(in.c, path+"/"+layout.SemaphoreSlots, snap.Holders, in.children); err != nil {
		return nil, err
	}
	return snap, nil
}

// schedule reads a schedule's layout at path: its election's leader and
// candidates (at path/leader) as holder and waiters. Its record is
// package schedule's to read (schedule.Inspect).
func (in *inspector) schedule(path string) (*Snapshot, error) {
	snap, err := in.read(path + "/" + layout.ScheduleLeader)
	if err != nil {
		return nil, err
	}
	snap.Path, snap.Kind, snap.Others = path, layout.Schedule.Name, nil
	return snap, nil
}

// contenders reads the path's children: a non-fair recipe's node (k, when
// the path is a non-fair recipe's) and a line of contenders (shepherd's,
// Curator's or Kazoo's names).
func (in *inspector) contenders(path string, names []string, k *layout.Recipe) (*Snapshot, error) {
	snap := newSnapshot(path)
	if k == layout.NonFairMutex || k == layout.NonFairElection {
		snap.Fair, snap.Kind = false, k.Name
		node := k.Nodes[0].Name
		for _, n := range names {
			if n != node {
				continue
			}
			e, ok, err := entry(in.c, path+"/"+n, line.Name{Name: n})
			if err != nil {
				return nil, err
			}
			if ok {
				snap.Holders = append(snap.Holders, e)
			}
		}
	}
	// Lease nodes are no line's (a semaphore's, under its leases: see
	// semaphore): not its holders nor waiters.
	all, err := in.entries(path, slices.DeleteFunc(line.Sort(names), func(n line.Name) bool { return n.Kind == line.KindLease }))
	if err != nil {
		return nil, err
	}
	setKind(snap, all)
	if snap.Fair {
		n := lineHolders(snap.Kind, all)
		snap.Holders, snap.Waiters = all[:n], all[n:]
	} else {
		snap.Waiters = all
	}
	return snap, nil
}

// setKind sets snap's Kind (unless a non-fair recipe's) and Names from a
// line of contenders (all, in line order), if there is one.
func setKind(snap *Snapshot, all []Entry) {
	if len(all) == 0 {
		return
	}
	if snap.Fair {
		switch all[0].Kind {
		case line.KindLatch:
			snap.Kind = "election"
		case line.KindRead, line.KindWrite, line.KindKazooRead:
			snap.Kind = "rwlock"
		default:
			snap.Kind = "mutex"
		}
	}
	for _, e := range all {
		if e.Kind == line.KindKazooRead && snap.Kind == "mutex" {
			snap.Kind = "rwlock" // Kazoo's WriteLock names its nodes as its Lock does
		}
		switch names := line.NamingOf(e.Kind).String(); snap.Names {
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
			for n = 0; n < len(all) && (all[n].Kind == line.KindRead || all[n].Kind == line.KindKazooRead); n++ {
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
			return aclerr.Map("getData", dir+"/"+n, err)
		}
		for i := range holders {
			if h := &holders[i]; h.Slot == nil && h.Node[strings.LastIndex(h.Node, "/")+1:] == string(data) {
				h.Slot = &slot
			}
		}
	}
	return nil
}
