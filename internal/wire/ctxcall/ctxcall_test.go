package ctxcall_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/wire/ctxcall"
)

// TestValueAbandoned: when ctx ends first, Value returns at once and
// hands fn's late result to abandoned; when fn finishes first, abandoned is
// never called.
func TestValueAbandoned(t *testing.T) {
	release := make(chan struct{})
	got := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	_, err := ctxcall.Value(ctx, func() (string, error) { return "never", nil }, nil)
	require.ErrorIs(t, err, context.Canceled)
	v, err := ctxcall.Value(ctx2, func() (string, error) {
		<-release
		return "late", nil
	}, func(v string, err error) { got <- v })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Empty(t, v)
	close(release)
	select {
	case v := <-got:
		require.Equal(t, "late", v)
	case <-time.After(5 * time.Second):
		t.Fatal("abandoned not called")
	}
	boom := errors.New("boom")
	v, err = ctxcall.Value(context.Background(), func() (string, error) { return "x", boom },
		func(string, error) { t.Error("abandoned called for a result that was returned") })
	require.ErrorIs(t, err, boom)
	require.Equal(t, "x", v)
}

// TestValueDirect: with a ctx that can never end, Value runs fn on
// the caller's goroutine: no goroutine, no channel, nothing allocated.
func TestValueDirect(t *testing.T) {
	fn := func() (int, error) { return 42, nil }
	var v int
	allocs := testing.AllocsPerRun(100, func() {
		v, _ = ctxcall.Value(context.Background(), fn, nil)
	})
	require.Equal(t, 42, v)
	require.Zero(t, allocs, "a call that cannot be given up costs nothing")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	allocs = testing.AllocsPerRun(100, func() {
		v, _ = ctxcall.Value(ctx, fn, nil)
	})
	require.NotZero(t, allocs, "a call that can be given up runs on a goroutine of its own")
}

// TestValuePanicReachesTheCaller: a panic of fn, run on a goroutine of its
// own, is raised on the caller's goroutine (where it can be recovered), with
// fn's value and stack, not on a goroutine where it would end the process.
func TestValuePanicReachesTheCaller(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got any
	func() {
		defer func() { got = recover() }()
		var m map[string]int
		_, _ = ctxcall.Value(ctx, func() (int, error) {
			m["x"] = 1 // a nil map: a runtime.Error
			return 0, nil
		}, nil)
	}()
	p, ok := got.(*ctxcall.Panic)
	if !ok {
		t.Fatalf("recovered %v (%T); want a *ctxcall.Panic", got, got)
	}
	var re runtime.Error
	if !errors.As(p, &re) {
		t.Fatalf("the panic %v does not unwrap to the runtime.Error fn raised", p.Value)
	}
	if !strings.Contains(string(p.Stack), "TestValuePanicReachesTheCaller") {
		t.Fatalf("the stack is not fn's:\n%s", p.Stack)
	}
}
