package hold_test

import (
	"context"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/hold"
)

// TestGoDocShowsTheHold: the hold is defined where users read it, so go doc
// prints each of its methods with its doc (an alias of an internal type,
// as hold.Hold was, showed none: "no method or field Hold.Lost").
func TestGoDocShowsTheHold(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go doc")
	}
	typ := reflect.TypeOf((*hold.Hold)(nil))
	for i := range typ.NumMethod() {
		name := typ.Method(i).Name
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		out, err := exec.CommandContext(ctx, "go", "doc", "github.com/shepherdzk/shepherd/hold", "Hold."+name).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("go doc hold Hold.%s: %v\n%s", name, err, out)
		}
		if !strings.Contains(string(out), "func (h *Hold) "+name) || strings.Count(string(out), "\n") < 3 {
			t.Errorf("go doc hold Hold.%s shows no documented method:\n%s", name, out)
		}
	}
}
