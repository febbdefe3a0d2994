package chaos_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
)

// TestACLs: nodes are created with the session's ACL; with digest auth, a
// second identity can neither delete nor overwrite another's lock, lease or
// candidate nodes, nor join its line; credentials appear in no log or error.
func TestACLs(t *testing.T) {
	const secret = "s3cr3t-pw"
	logs := &testutil.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	acl := []gozk.ACL{{Perms: gozk.PermAll, Scheme: "auth"}, {Perms: gozk.PermRead, Scheme: "world", ID: "anyone"}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	alice, err := session.Open(ctx, standalone.Servers(), session.WithAuth("digest", []byte("alice:"+secret)),
		session.WithACL(acl), session.WithLogger(log), session.WithNamespace("/acl-test"))
	require.NoError(t, err)
	defer func() { alice.Close(); <-alice.Done() }()
	mallory := open(t, standalone.Servers())
	mep, err := mallory.Wait(ctx)
	require.NoError(t, err)
	require.NoError(t, mep.Conn().AddAuth("digest", []byte("mallory:guess")))

	m, err := mutex.New(alice, "/lock")
	require.NoError(t, err)
	require.NoError(t, m.Lock(ctx))
	sem, err := semaphore.New(alice, "/sem", 2)
	require.NoError(t, err)
	lease, err := sem.Acquire(ctx)
	require.NoError(t, err)
	e, err := election.New(alice, "/elect", "alice")
	require.NoError(t, err)
	_, err = e.Campaign(ctx)
	require.NoError(t, err)

	l, err := e.Leader(ctx)
	require.NoError(t, err)
	nodes := append([]string{m.Node(), l.Node}, lease.Nodes()...)
	for _, n := range nodes {
		got, _, err := mep.Conn().GetACL(n)
		require.NoError(t, err)
		require.Len(t, got, 2, "%s has the session's ACL", n)
		require.Equal(t, "digest", got[0].Scheme)
		require.True(t, strings.HasPrefix(got[0].ID, "alice:"))
		require.ErrorIs(t, mep.Conn().Delete(n, -1), gozk.ErrNoAuth, "mallory deletes %s", n)
		_, err = mep.Conn().Set(n, []byte("mallory"), -1)
		require.ErrorIs(t, err, gozk.ErrNoAuth, "mallory overwrites %s", n)
	}
	// Mallory cannot even join the lines.
	mm, err := mutex.New(mallory, "/acl-test/lock")
	require.NoError(t, err)
	_, err = mm.TryLock(ctx)
	require.ErrorIs(t, err, gozk.ErrNoAuth)
	require.NoError(t, m.Validate(ctx))
	require.NoError(t, lease.Hold().Validate(ctx))
	require.NoError(t, e.Validate(ctx))
	require.NoError(t, m.Unlock(ctx))
	require.NoError(t, lease.Release(ctx))
	require.NoError(t, e.Resign(ctx))

	// Bad credentials: a clear error without the secret.
	_, err = session.Open(ctx, standalone.Servers(), session.WithAuth("nosuchscheme", []byte("bob:"+secret)),
		session.WithConnectTimeout(2*time.Second))
	require.Error(t, err)
	require.NotContains(t, err.Error(), secret)
	require.ErrorIs(t, err, session.ErrAuthFailed)
	require.NotEmpty(t, logs.String(), "debug logs were written")
	require.NotContains(t, logs.String(), secret, "credentials never appear in logs")
}
