package construct_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/admin"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/schedule"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
)

// TestNilSession: every exported call that takes a session answers a nil
// one with an error matching session.ErrInvalidArgument (and, but for
// fence's, which cannot import recipe, recipe.ErrInvalidArgument), at once,
// never a panic (bad input gets a clear error at the call). admin.Inspect,
// InspectW, Revoke, AskRevoke, EnsurePath and schedule.Inspect panicked.
func TestNilSession(t *testing.T) {
	ctx := context.Background()
	calls := map[string]func() error{
		"mutex.New":        func() error { _, err := mutex.New(nil, "/p"); return err },
		"mutex.NewRW":      func() error { _, err := mutex.NewRW(nil, "/p"); return err },
		"semaphore.New":    func() error { _, err := semaphore.New(nil, "/p", 1); return err },
		"election.New":     func() error { _, err := election.New(nil, "/p", "id"); return err },
		"election.Observe": func() error { _, err := election.Observe(ctx, nil, "/p"); return err },
		"schedule.New":     func() error { _, err := schedule.New(nil, "/p", "id", time.Second); return err },
		"schedule.Inspect": func() error { _, _, err := schedule.Inspect(ctx, nil, "/p"); return err },
		"admin.Inspect":    func() error { _, err := admin.Inspect(ctx, nil, "/p"); return err },
		"admin.InspectW":   func() error { _, err := admin.InspectW(ctx, nil, "/p"); return err },
		"admin.Revoke":     func() error { _, err := admin.Revoke(ctx, nil, admin.Grant{Node: "/p/n"}, time.Second); return err },
		"admin.AskRevoke":  func() error { return admin.AskRevoke(ctx, nil, admin.Grant{Node: "/p/n"}) },
		"fence.Ensure":     func() error { return fence.Ensure(ctx, nil, "/p", nil) },
		"fence.Get":        func() error { _, _, err := fence.Get(ctx, nil, "/p"); return err },
		"fence.Requests":   func() error { _, err := fence.Requests(nil, []fence.Op{fence.Delete("/p", -1)}); return err },
		"line.EnsurePath":  func() error { return line.EnsurePath(nil, nil, "/p") },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			err := noPanic(t, name+"(nil session)", call)
			if !errors.Is(err, session.ErrInvalidArgument) || (!strings.HasPrefix(name, "fence.") && !errors.Is(err, recipe.ErrInvalidArgument)) {
				t.Fatalf("%s(nil session) = %v; want an error matching session.ErrInvalidArgument (and recipe.ErrInvalidArgument outside fence)", name, err)
			}
		})
	}
}

// noPanic returns call's error, failing t if call panics (what is called
// with bad input must answer, not panic).
func noPanic(t *testing.T, what string, call func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s panicked: %v", what, r)
		}
	}()
	return call()
}
