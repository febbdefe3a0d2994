package observe_test

import (
	"testing"

	"github.com/shepherdzk/shepherd/observe"
)

// Every kind has a name of its own, and the kinds are numbered 1, 2, ...
// without a gap (observe/prometheus's tests walk them until "unknown").
func TestKindNames(t *testing.T) {
	seen := map[string]observe.RecipeEventKind{}
	last := observe.RecipeEventKind(0)
	for k := observe.RecipeEventKind(1); k.String() != "unknown"; k++ {
		if prev, ok := seen[k.String()]; ok {
			t.Fatalf("kinds %d and %d are both named %q", prev, k, k)
		}
		seen[k.String()] = k
		last = k
	}
	if last != observe.HandedOver {
		t.Fatalf("the kinds end at %d (%v), want HandedOver (%d)", last, last, observe.HandedOver)
	}
	if s := observe.RecipeEventKind(0).String(); s != "unknown" {
		t.Fatalf("the zero kind is named %q, want unknown", s)
	}
}
