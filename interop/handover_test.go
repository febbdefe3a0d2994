package interop_test

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/recipe"
)

// TestHandOverBesideLibraries: a directed handover on a path shared with
// Curator's LeaderLatch and with Kazoo's Election (issue 38). A foreign
// participant between the leader and the successor cannot be asked to step
// aside: the handover is refused, leadership kept, and the participant's
// latch still works (it leads once the leader resigns). As the successor,
// it leads once the shepherd candidates before it have stepped aside.
func TestHandOverBesideLibraries(t *testing.T) {
	for _, pc := range []struct {
		p      peer
		mode   string
		naming recipe.Naming
	}{
		{curatorPeer, "latch", recipe.CuratorNaming},
		{kazooPeer, "election", recipe.KazooNaming},
	} {
		t.Run(pc.p.name, func(t *testing.T) {
			t.Parallel()
			foreign := pc.p.prefix + "-0"
			// The handover's wait for the candidates between the leader and
			// the successor to step aside: 10 s, not the 2 s it was, which
			// a loaded make test's shepherd candidate once overran
			// ("successor": refused, 1 candidate did not step aside within
			// 2s). "between" is refused at once (its error says so),
			// whatever the bound.
			opts := []election.Option{election.WithNaming(pc.naming), election.WithHandOverTimeout(10 * time.Second)}
			t.Run("between", func(t *testing.T) {
				path := uniquePath(t)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				a, err := election.New(open(t), path, "a", opts...)
				require.NoError(t, err)
				l, err := a.Campaign(ctx)
				require.NoError(t, err)
				granted := startForeign(t, ctx, pc.p, pc.mode, path)
				waitParticipants(t, a, 2)
				d, err := election.New(open(t), path, "d", opts...)
				require.NoError(t, err)
				go func() { _, _ = d.Campaign(ctx) }()
				waitParticipants(t, a, 3)
				err = l.HandOver(ctx, "d")
				require.ErrorIs(t, err, election.ErrHandOverRefused)
				require.ErrorContains(t, err, "cannot be asked to step aside", "refused at once, seen as another library's")
				require.True(t, a.IsLeader(), "leadership kept")
				require.NoError(t, l.Resign(ctx))
				requireGranted(t, granted, foreign, "the foreign participant leads after the leader resigns")
				_ = d.Resign(context.Background())
			})
			t.Run("successor", func(t *testing.T) {
				path := uniquePath(t)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				a, err := election.New(open(t), path, "a", opts...)
				require.NoError(t, err)
				l, err := a.Campaign(ctx)
				require.NoError(t, err)
				b, err := election.New(open(t), path, "b", opts...)
				require.NoError(t, err)
				bLed := make(chan struct{})
				go func() {
					if _, err := b.Campaign(ctx); err == nil {
						close(bLed)
					}
				}()
				waitParticipants(t, a, 2)
				granted := startForeign(t, ctx, pc.p, pc.mode, path)
				waitParticipants(t, a, 3)
				require.NoError(t, l.HandOver(ctx, foreign))
				requireGranted(t, granted, foreign, "the foreign successor leads")
				select {
				case <-bLed:
					t.Fatal("b, which stepped aside, led")
				default:
				}
				_ = b.Resign(context.Background())
			})
		})
	}
}

// startForeign starts one client of the peer library on path (as mode: a
// participant that leads, once elected, for a minute) and returns a channel
// of the ids it reports granted.
func startForeign(t *testing.T, ctx context.Context, p peer, mode, path string) <-chan string {
	t.Helper()
	cmd := p.cmd(t, ctx, mode, path, []string{zk.ConnectString()}, 30*time.Second, time.Minute)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	granted := make(chan string, 10)
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) > 0 && f[0] == "READY":
				close(ready)
			case len(f) > 1 && f[0] == "G":
				granted <- f[1]
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s peer not ready within 30s", p.name)
	}
	_, err = io.WriteString(in, "GO\n") // its run starts
	require.NoError(t, err)
	return granted
}

// requireGranted waits for the foreign participant id to report its grant.
func requireGranted(t *testing.T, granted <-chan string, id, what string) {
	t.Helper()
	select {
	case got := <-granted:
		require.Equal(t, id, got, what)
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: no grant within 15s", what)
	}
}

// waitParticipants waits until e sees n candidates in line.
func waitParticipants(t *testing.T, e *election.Election, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ps, err := e.Participants(ctx)
		return err == nil && len(ps) == n
	}, 30*time.Second, 10*time.Millisecond, "%d candidates never in line", n)
}
