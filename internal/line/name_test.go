package line

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseName(t *testing.T) {
	cases := []struct {
		in   string
		ok   bool
		want Name
	}{
		{"_c_abc-lock-0000000001", true, Name{GUID: "abc", Kind: KindLock, Seq: 1}},
		{"lock-0000000007", true, Name{Kind: KindLock, Seq: 7}},
		{"_c_1f-2e-latch-0000000042", true, Name{GUID: "1f-2e", Kind: KindLatch, Seq: 42}},
		{"_c_g-__READ__0000000003", true, Name{GUID: "g", Kind: KindRead, Seq: 3}},
		{"_c_g-__WRIT__0000000004", true, Name{GUID: "g", Kind: KindWrite, Seq: 4}},
		{"_c_g-lease-0000000005", true, Name{GUID: "g", Kind: KindLease, Seq: 5}},
		{"0123abcd__lock__0000000009", true, Name{GUID: "0123abcd", Kind: KindKazooLock, Seq: 9}},
		{"0123abcd__rlock__0000000010", true, Name{GUID: "0123abcd", Kind: KindKazooRead, Seq: 10}},
		{"_c_g-lock--2147483648", true, Name{GUID: "g", Kind: KindLock, Seq: -2147483648}},
		{"_c_g-lock-4294967296", true, Name{GUID: "g", Kind: KindLock, Seq: 4294967296}},
		{"_c_g-lock-", false, Name{}},
		{"_c_g-lock-12a", false, Name{}},
		{"_c_g-lock--", false, Name{}},
		{"_c_g-lock-99999999999999999999", false, Name{}},
		{"leases", false, Name{}},
		{"nonfair-lock", false, Name{}},
		{"foo-lock-0000000001", false, Name{}},
		{"_c_-lock-0000000001", false, Name{}},
		{"", false, Name{}},
	}
	for _, c := range cases {
		got, ok := ParseName(c.in)
		if ok != c.ok {
			t.Errorf("ParseName(%q) ok = %v, want %v", c.in, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		c.want.Name = c.in
		if got != c.want {
			t.Errorf("ParseName(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestSortOrdersBySequenceOnly(t *testing.T) {
	line := Sort([]string{"_c_zz-lock-0000000003", "leases", "_c_aa-lock-0000000010", "lock-0000000001",
		"x__lock__0000000002", "_c_q-latch-0000000005"}, KindLock, KindKazooLock)
	var got []int64
	for _, n := range line {
		got = append(got, n.Seq)
	}
	if want := []int64{1, 2, 3, 10}; !equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if Index(line, "_c_aa-lock-0000000010") != 3 || Index(line, "nope") != -1 {
		t.Fatal("Index")
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzParseName: never panics; what parses round-trips: the name is the
// guid's prefix, the kind and the sequence number's decimal form.
func FuzzParseName(f *testing.F) {
	for _, s := range []string{"_c_abc-lock-0000000001", "lock-1", "x__lock__2", "_c_a-lease--2147483648",
		"_c_a-latch-2147483648", "_c_a-__READ__9223372036854775807", "", "-", "__lock__", "lock-lock-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := ParseName(s)
		if !ok {
			return
		}
		if n.Name != s {
			t.Fatalf("ParseName(%q) = %+v", s, n)
		}
		suffix := s[strings.LastIndex(s, n.Kind)+len(n.Kind):]
		v, err := strconv.ParseInt(suffix, 10, 64)
		if err != nil || v != n.Seq {
			t.Fatalf("ParseName(%q): seq %d from %q", s, n.Seq, suffix)
		}
		if n.GUID != "" && !strings.Contains(s, n.GUID) {
			t.Fatalf("ParseName(%q): guid %q", s, n.GUID)
		}
		if strings.ContainsRune(n.GUID, '/') && !strings.Contains(s, "/") {
			t.Fatal("guid invented a slash")
		}
		line := Sort([]string{s, s})
		if len(line) != 2 {
			t.Fatalf("Sort dropped a parsable name %q", s)
		}
	})
}

// Sort agrees with the plain definition (by sequence, then by name) on lines
// with wrapped (negative) and repeated sequence numbers, foreign children
// and other kinds, in any order.
func TestSortAgreesWithTheDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kinds := []string{KindLock, KindLatch, KindRead, KindKazooLock}
	for round := 0; round < 300; round++ {
		n := rng.IntN(60)
		var names []string
		for i := 0; i < n; i++ {
			seq := int64(rng.IntN(40))
			switch rng.IntN(10) {
			case 0:
				seq = -seq - 1 // a wrapped counter
			case 1:
				seq += 1 << 41 // past what the packed key holds
			}
			k := kinds[rng.IntN(len(kinds))]
			switch {
			case rng.IntN(15) == 0:
				names = append(names, fmt.Sprintf("foreign-%d", i))
			case k == KindKazooLock:
				names = append(names, fmt.Sprintf("%x%s%010d", rng.Uint64(), k, seq))
			default:
				names = append(names, fmt.Sprintf("_c_%x-%s%010d", rng.Uint64(), k, seq))
			}
		}
		var want []Name
		for _, s := range names {
			if n, ok := ParseName(s); ok && n.Kind != KindRead {
				want = append(want, n)
			}
		}
		slices.SortFunc(want, func(a, b Name) int {
			if a.Seq != b.Seq {
				return cmp.Compare(a.Seq, b.Seq)
			}
			return strings.Compare(a.Name, b.Name)
		})
		got := Sort(names, KindLock, KindLatch, KindKazooLock)
		if len(want) == 0 {
			want = []Name{}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: Sort(%q)\n got %v\nwant %v", round, names, got, want)
		}
	}
}

func TestUnordered(t *testing.T) {
	name := func(guid string, seq int64) string {
		return fmt.Sprintf("_c_%s-lock-%010d", guid, seq)
	}
	for _, tc := range []struct {
		names []string
		bad   bool
		seq   int64
	}{
		{nil, false, 0},
		{[]string{name("a", 1), name("b", 2)}, false, 0},
		{[]string{name("a", maxSeq-1)}, false, 0},
		{[]string{name("a", maxSeq)}, true, maxSeq},
		{[]string{name("b", 5), name("a", 5), name("c", 6)}, true, 5},
		{[]string{name("a", 7), "_c_b-lock--2147483648"}, true, -2147483648},
	} {
		seq, bad := unordered(Sort(tc.names))
		if bad != tc.bad || seq != tc.seq {
			t.Errorf("unordered(%v) = %d, %v; want %d, %v", tc.names, seq, bad, tc.seq, tc.bad)
		}
	}
}
