package line

import (
	"fmt"
	"testing"
)

func BenchmarkParseName(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := ParseName("_c_0123456789abcdef0123456789abcdef-lock-0000000042"); !ok {
			b.Fatal("no parse")
		}
	}
}

// BenchmarkSortLine: a line of 1,000 contenders, as a waiter lists it.
func BenchmarkSortLine(b *testing.B) {
	names := make([]string, 1000)
	for i := range names {
		names[(i*7919)%1000] = fmt.Sprintf("_c_%032x-lock-%010d", i, i)
	}
	b.ReportAllocs()
	for b.Loop() {
		if line := Sort(names); len(line) != 1000 {
			b.Fatal(len(line))
		}
	}
}
