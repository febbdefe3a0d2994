package line

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Kinds of contender nodes, as Curator (and Kazoo) name them.
const (
	KindLock      = "lock-"    // mutex (Curator InterProcessMutex, go-zookeeper zk.Lock)
	KindLatch     = "latch-"   // election (Curator LeaderLatch)
	KindLease     = "lease-"   // semaphore lease (Curator InterProcessSemaphoreV2)
	KindRead      = "__READ__" // read-write lock, reader
	KindWrite     = "__WRIT__" // read-write lock, writer
	KindKazooLock = "__lock__" // Kazoo Lock (and Election)
	KindKazooRead = "__rlock__"
)

var allKinds = []string{KindLock, KindLatch, KindLease, KindRead, KindWrite, KindKazooLock, KindKazooRead}

// Name is a parsed contender node name.
type Name struct {
	Name string // the node's name (last path element)
	GUID string // the protected-create guid, "" if none
	Kind string // one of the Kind constants
	Seq  int64  // the sequence suffix
}

// ParseName parses a contender's node name. It reports false for names that
// are not contenders (foreign children). It reads the name once, from the
// end: waiters parse whole lines of names. It stays one function (18
// branches) because it is one pass over the name, sequence, kind (a negative
// sequence first), then the prefix of Curator's or Kazoo's format; its
// fuzz target (FuzzParseName) checks it against every format.
func ParseName(name string) (Name, bool) {
	j := len(name)
	for j > 0 && name[j-1] >= '0' && name[j-1] <= '9' {
		j--
	}
	if j == len(name) || len(name)-j > 19 {
		return Name{}, false
	}
	kind, start := "", -1
	// A negative sequence number (a counter past 2^31) first: "lock--5".
	if j > 0 && name[j-1] == '-' {
		if k := kindSuffix(name[:j-1]); k != "" {
			kind, start = k, j-1
		}
	}
	if start < 0 {
		if kind = kindSuffix(name[:j]); kind == "" {
			return Name{}, false
		}
		start = j
	}
	seq, ok := parseSeq(name[start:])
	if !ok {
		return Name{}, false
	}
	n := Name{Name: name, Kind: kind, Seq: seq}
	prefix := name[:start-len(kind)]
	switch {
	case prefix == "":
	case kind == KindKazooLock || kind == KindKazooRead:
		n.GUID = prefix
	case strings.HasPrefix(prefix, "_c_") && strings.HasSuffix(prefix, "-") && len(prefix) > 4:
		n.GUID = prefix[3 : len(prefix)-1]
	default:
		return Name{}, false
	}
	return n, true
}

// kindSuffix returns the kind s ends with, or "".
func kindSuffix(s string) string {
	if s == "" {
		return ""
	}
	if c := s[len(s)-1]; c != '-' && c != '_' {
		return "" // every kind ends with one of these
	}
	for _, k := range allKinds {
		if strings.HasSuffix(s, k) {
			return k
		}
	}
	return ""
}

// parseSeq parses a sequence suffix: decimal digits, with a leading '-' for a
// counter that wrapped past 2^31.
func parseSeq(s string) (int64, bool) {
	if s == "" || len(s) > 20 {
		return 0, false
	}
	digits := strings.TrimPrefix(s, "-")
	if digits == "" {
		return 0, false
	}
	var v int64
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
		v = v*10 + int64(digits[i]-'0')
	}
	if len(digits) <= 18 { // no overflow possible
		if len(digits) < len(s) {
			v = -v
		}
		return v, true
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// ProtectedPrefix is the name prefix of a protected create of kind with guid:
// ZooKeeper appends the sequence number.
func ProtectedPrefix(guid, kind string) string { return "_c_" + guid + "-" + kind }

// maxSeq is the largest sequence number ZooKeeper gives a sequential node:
// the parent's counter is a signed 32-bit int. On ZooKeeper 3.8 it sticks
// there (every later child gets maxSeq), and creates in flight together past
// it get wrapped, negative numbers.
const maxSeq = 1<<31 - 1

// Sort parses names, drops foreign ones and those whose kind is not in kinds
// (all kinds when kinds is empty), and returns the rest in line order. Nodes
// that share a sequence number (a counter that ran out: see unordered) come
// in name order, which is no order at all: a line that waits must refuse
// such a line, never grant on it.
func Sort(names []string, kinds ...string) []Name {
	out := make([]Name, 0, len(names))
	// Sorted by a compact key, not by moving Names around: a waiter behind
	// a thousand others sorts a thousand names per wakeup. The key packs
	// the sequence number above the index into out when both fit (they
	// always do unless a counter wrapped or the line is huge).
	keys := make([]uint64, 0, len(names))
	fits := len(names) < 1<<packBits
	for _, s := range names {
		n, ok := ParseName(s)
		if !ok {
			continue
		}
		if len(kinds) > 0 && !hasKind(kinds, n.Kind) {
			continue
		}
		fits = fits && n.Seq >= 0 && n.Seq < 1<<(64-packBits)
		keys = append(keys, uint64(n.Seq)<<packBits|uint64(len(out)))
		out = append(out, n)
	}
	if !fits || !sortPacked(keys) {
		sortByName(keys, out)
	}
	sorted := make([]Name, len(out))
	for i, k := range keys {
		sorted[i] = out[k]
	}
	return sorted
}

// unordered reports whether line (as Sort returns it) has no reliable order,
// and the sequence number that shows it: two nodes share a number, or a node
// carries maxSeq (the next contender would share it) or a negative number (a
// wrapped counter: it sorts ahead of every earlier contender). A parent's
// counter starts at 0 and grows by one per child, so none of these appears
// before the counter runs out.
func unordered(line []Name) (int64, bool) {
	if len(line) == 0 {
		return 0, false
	}
	if s := line[0].Seq; s < 0 {
		return s, true
	}
	if s := line[len(line)-1].Seq; s >= maxSeq {
		return s, true
	}
	for i := 1; i < len(line); i++ {
		if line[i].Seq == line[i-1].Seq {
			return line[i].Seq, true
		}
	}
	return 0, false
}

// sortPacked sorts packed keys and turns them into indexes into the line. It
// reports false (keys then hold garbage) when two sequence numbers are equal:
// their order is the names'.
func sortPacked(keys []uint64) bool {
	slices.Sort(keys)
	for i := 1; i < len(keys); i++ {
		if keys[i]>>packBits == keys[i-1]>>packBits {
			return false
		}
	}
	for i := range keys {
		keys[i] &= 1<<packBits - 1
	}
	return true
}

// sortByName sets keys to the indexes of out in line order: by sequence
// number, then by name.
func sortByName(keys []uint64, out []Name) {
	for i := range keys {
		keys[i] = uint64(i)
	}
	slices.SortFunc(keys, func(a, b uint64) int {
		x, y := &out[a], &out[b]
		if x.Seq != y.Seq {
			return cmp.Compare(x.Seq, y.Seq)
		}
		return strings.Compare(x.Name, y.Name)
	})
}

// packBits is how many low bits of a sort key hold an index.
const packBits = 24

func hasKind(kinds []string, k string) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

// Index returns the position of the node called name in line, or -1.
func Index(line []Name, name string) int {
	for i, n := range line {
		if n.Name == name {
			return i
		}
	}
	return -1
}

// Naming is how a recipe names its contender nodes, and so which other
// libraries see them. A path is named one way or the other, never both: each
// library counts only its own names (Kazoo's default Lock matches
// `__lock__<10 digits>$` and ignores Curator's names; Curator sorts every
// child by what follows its own kind, which puts Kazoo's names out of order),
// so a line refuses (ErrForeignRecipe) a path whose nodes use the other
// naming.
type Naming int

const (
	// CuratorNaming names nodes as Curator does: _c_<guid>-lock-<seq>,
	// _c_<guid>-latch-<seq>, _c_<guid>-__READ__<seq>, _c_<guid>-__WRIT__<seq>.
	// The default.
	CuratorNaming Naming = iota
	// KazooNaming names nodes as Kazoo does: <guid>__lock__<seq> for a mutex,
	// a writer and an election candidate (Kazoo's Election is a Lock whose
	// node holds the candidate's id), <guid>__rlock__<seq> for a reader. The
	// guid is 32 hex digits, as Kazoo's uuid4().hex, so the protected
	// create's guid is read back from the name.
	KazooNaming
)

// String names the naming ("curator", "kazoo").
func (n Naming) String() string {
	switch n {
	case CuratorNaming:
		return "curator"
	case KazooNaming:
		return "kazoo"
	}
	return "names(" + strconv.Itoa(int(n)) + ")"
}

// Valid reports whether n is one of the namings.
func (n Naming) Valid() bool { return n == CuratorNaming || n == KazooNaming }

// Kind returns the kind of node this naming gives a contender of kind (a
// Curator kind, or one of this naming's own).
func (n Naming) Kind(kind string) string {
	if n != KazooNaming {
		return kind
	}
	switch kind {
	case KindRead, KindKazooRead:
		return KindKazooRead
	case KindLock, KindLatch, KindWrite, KindKazooLock:
		return KindKazooLock
	}
	return kind
}

// Prefix is the name prefix of a protected create of kind (as Kind returns
// it) with guid: ZooKeeper appends the sequence number.
func (n Naming) Prefix(guid, kind string) string {
	if n == KazooNaming {
		return guid + kind
	}
	return ProtectedPrefix(guid, kind)
}

// NamingOf returns the naming a node's kind belongs to.
func NamingOf(kind string) Naming {
	if kind == KindKazooLock || kind == KindKazooRead {
		return KazooNaming
	}
	return CuratorNaming
}

// Library names the naming and the recipes that name their nodes with kind
// ("kazoo __lock__ (Lock, WriteLock, Election)"), for errors and `shepherd
// status`. shepherd's own nodes are named one of these ways too.
func Library(kind string) string {
	switch kind {
	case KindLock:
		return "curator lock- (InterProcessMutex, LeaderSelector)"
	case KindLatch:
		return "curator latch- (LeaderLatch)"
	case KindLease:
		return "curator lease- (InterProcessSemaphoreV2)"
	case KindRead:
		return "curator __READ__ (InterProcessReadWriteLock)"
	case KindWrite:
		return "curator __WRIT__ (InterProcessReadWriteLock)"
	case KindKazooLock:
		return "kazoo __lock__ (Lock, WriteLock, Election)"
	case KindKazooRead:
		return "kazoo __rlock__ (ReadLock)"
	}
	return kind
}
