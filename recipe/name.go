package recipe

import (
	"sort"
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
// end: waiters parse whole lines of names.
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
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
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

// Sort parses names, drops foreign ones and those whose kind is not in kinds
// (all kinds when kinds is empty), and returns the rest in line order.
func Sort(names []string, kinds ...string) []Name {
	out := make([]Name, 0, len(names))
	for _, s := range names {
		n, ok := ParseName(s)
		if !ok {
			continue
		}
		if len(kinds) > 0 && !hasKind(kinds, n.Kind) {
			continue
		}
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Seq != out[j].Seq {
			return out[i].Seq < out[j].Seq
		}
		return out[i].Name < out[j].Name
	})
	return out
}

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
