package main_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/admin"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/schedule"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
)

// holdKind takes a recipe of kind at path and returns its release.
func holdKind(ctx context.Context, t *testing.T, s *session.Session, kind, path string) func() {
	t.Helper()
	switch kind {
	case "mutex", "mutex-nonfair", "rwlock":
		var m interface {
			Lock(context.Context) error
			Unlock(context.Context) error
		}
		var err error
		switch kind {
		case "mutex":
			m, err = mutex.New(s, path)
		case "mutex-nonfair":
			m, err = mutex.New(s, path, mutex.NonFair())
		default:
			m, err = mutex.NewRW(s, path)
		}
		require.NoError(t, err)
		require.NoError(t, m.Lock(ctx))
		return func() { require.NoError(t, m.Unlock(context.Background())) }
	case "semaphore":
		sm, err := semaphore.New(s, path, 2)
		require.NoError(t, err)
		l, err := sm.Acquire(ctx)
		require.NoError(t, err)
		return func() { require.NoError(t, l.Release(context.Background())) }
	case "election", "election-nonfair":
		var opts []election.Option
		if kind == "election-nonfair" {
			opts = append(opts, election.NonFair())
		}
		e, err := election.New(s, path, "e", opts...)
		require.NoError(t, err)
		l, err := e.Campaign(ctx)
		require.NoError(t, err)
		return func() { require.NoError(t, l.Resign(context.Background())) }
	}
	sc, err := schedule.New(s, path, "s", time.Hour)
	require.NoError(t, err)
	rctx, cancel := context.WithCancel(ctx)
	ticked := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		done <- sc.Run(rctx, func(context.Context, schedule.Tick) error { once.Do(func() { close(ticked) }); return nil })
	}()
	select {
	case <-ticked:
	case err := <-done:
		t.Fatalf("schedule: %v", err)
	}
	return func() { cancel(); require.NoError(t, <-done) }
}

// TestKindsAgree: on each kind's path, held and idle, `shepherd status`,
// `shepherd ls` and admin.Inspect name the same kind (and ls and status
// say idle where Inspect does); `shepherd rm` refuses a held path (exit 6,
// nothing removed) and removes an idle recipe's trace; a recipe of another
// kind is refused there by the CLI with exit 6, naming what is there.
// Issue 36 (3): on b9d4272 status printed a schedule on a semaphore's
// path, ls did not know schedules, and `elect` on a semaphore's path was
// elected.
func TestKindsAgree(t *testing.T) {
	t.Parallel()
	s := testutil.Open(t, zk.Servers())
	ctx := testutil.Ctx(t, 120*time.Second)
	for _, kind := range []string{"mutex", "mutex-nonfair", "rwlock", "semaphore", "election", "election-nonfair", "schedule"} {
		for _, state := range []string{"held", "idle"} {
			t.Run(kind+"/"+state, func(t *testing.T) {
				p := uniquePath(t)
				release := holdKind(ctx, t, s, kind, p)
				if state == "idle" {
					release()
					if kind == "semaphore" {
						// The server removes its empty containers (zktest:
						// every 200 ms): idle, it leaves nothing.
						require.Eventually(t, func() bool {
							snap, err := admin.Inspect(ctx, s, s.Path(p))
							return err == nil && snap.Kind == "empty"
						}, 10*time.Second, 20*time.Millisecond)
					}
				} else {
					defer release()
				}
				snap, err := admin.Inspect(ctx, s, s.Path(p))
				require.NoError(t, err)
				if snap.Kind == "empty" {
					require.Equal(t, "idle", state, "a held %s shows nothing", kind)
					r := shepherd(t, nil, "status", p)
					require.Equal(t, 7, r.code, "status of nothing: %s", r.stderr)
					return
				}
				want := map[string]string{"mutex-nonfair": "mutex", "election-nonfair": "election"}[kind]
				if want == "" {
					want = kind
				}
				require.Equal(t, want, snap.Kind)
				require.Equal(t, state == "idle", snap.Idle)

				r := shepherd(t, nil, "status", "-json", p)
				require.Equal(t, 0, r.code, r.stderr)
				var st struct {
					Kind string `json:"kind"`
					Idle bool   `json:"idle"`
				}
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &st), r.stdout)
				require.Equal(t, snap.Kind, st.Kind, "status -json")
				if kind != "schedule" { // a schedule's status shows its record
					require.Equal(t, snap.Idle, st.Idle, "status -json idle")
				}
				r = shepherd(t, nil, "ls", "-json", p)
				require.Equal(t, 0, r.code, r.stderr)
				var out lsOut
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
				require.Len(t, out.Recipes, 1, r.stdout)
				require.Equal(t, snap.Kind, out.Recipes[0].Kind, "ls")
				require.Equal(t, snap.Idle, out.Recipes[0].Idle, "ls idle")

				// Another kind is refused there, exit 6, naming it.
				other := "lock"
				if kind == "mutex" || kind == "mutex-nonfair" {
					other = "elect"
				}
				r = shepherd(t, nil, other, "-timeout", "5s", p, "--", "true")
				require.Equal(t, 6, r.code, "%s on a %s %s's path: %s", other, state, kind, r.stderr)
				require.Contains(t, r.stderr, "refused")

				r = shepherd(t, nil, "rm", p)
				if state == "held" {
					require.Equal(t, 6, r.code, "rm of a held %s: %s", kind, r.stderr)
					after, err := admin.Inspect(ctx, s, s.Path(p))
					require.NoError(t, err)
					require.Equal(t, snap.Kind, after.Kind, "nothing removed")
					return
				}
				require.Equal(t, 0, r.code, "rm of an idle %s: %s", kind, r.stderr)
				require.Contains(t, r.stdout, "removed "+p)
				after, err := admin.Inspect(ctx, s, s.Path(p))
				require.NoError(t, err)
				require.Equal(t, "empty", after.Kind)
			})
		}
	}
}

// TestPartOfAnotherRecipe: a recipe at a part of another's layout (a held
// semaphore's leases container, where its lease nodes are) is refused,
// exit 6, naming the recipe it is part of, and writes nothing there; before,
// a lock there queued its node behind the leases. An operator's revoke
// there is refused too (it revoked the first lease), and status says whose
// part the path is.
func TestPartOfAnotherRecipe(t *testing.T) {
	t.Parallel()
	s := testutil.Open(t, zk.Servers())
	ctx := testutil.Ctx(t, 60*time.Second)
	p := testutil.UniquePath(t, "cli-part")
	defer holdKind(ctx, t, s, "semaphore", p)()
	leases := p + "/leases"
	before := testutil.Children(t, s, leases)
	for _, args := range [][]string{
		{"lock", "-timeout", "5s", p + "/leases", "--", "true"},
		{"semaphore", "-n", "1", "-timeout", "5s", p + "/leases", "--", "true"},
		{"elect", "-timeout", "5s", p + "/slots", "--", "true"},
	} {
		r := shepherd(t, nil, args...)
		require.Equal(t, 6, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "is part of "+p+", which holds a semaphore with maxLeases 2 (1 holding", "%v", args)
	}
	// An operator's revoke there is refused (it would pick one lease of
	// those held, unnamed), and status says whose part it is.
	r := shepherd(t, nil, "revoke", "-ask", "-wait", "5s", leases)
	require.Equal(t, 6, r.code, "revoke at the leases: %s", r.stderr)
	require.Contains(t, r.stderr, "it is a part of the recipe at "+p)
	r = shepherd(t, nil, "status", leases)
	require.Equal(t, 7, r.code, "status of the leases: %s", r.stderr)
	require.Contains(t, r.stdout, "a part of the recipe at "+p)
	require.ElementsMatch(t, before, testutil.Children(t, s, leases), "nodes written (or removed) in the semaphore's leases")
	var data []byte
	require.NoError(t, s.Do(ctx, func(ep *session.Epoch) (err error) {
		data, _, err = ep.Conn().Get(s.Path(leases))
		return err
	}))
	require.Empty(t, data, "the semaphore's leases container stamped")
}

// TestHandOverOtherKind: `shepherd handover` on a lock's or a schedule's
// path is refused (exit 6, naming what is there) and writes no request
// there; before, it said "no leader" of a lock, and read a schedule's
// election path as a non-fair leader's node.
func TestHandOverOtherKind(t *testing.T) {
	t.Parallel()
	s := testutil.Open(t, zk.Servers())
	ctx := testutil.Ctx(t, 60*time.Second)
	for kind, what := range map[string]string{"mutex": "holds a lock", "schedule": "holds a schedule"} {
		p := testutil.UniquePath(t, "cli-handover-"+kind)
		release := holdKind(ctx, t, s, kind, p)
		r := shepherd(t, nil, "handover", "-timeout", "5s", p)
		require.Equal(t, 6, r.code, "handover on a %s's path: %s", kind, r.stderr)
		require.Contains(t, r.stderr, p+" "+what, kind)
		require.NotContains(t, testutil.Children(t, s, p), "handover", "a request written at a %s's path", kind)
		release()
	}
}
