package line_test

import (
	"context"
	"crypto/tls"
	"errors"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/admin"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// ACLs that keep other principals out of a hold (session.CreatorACL, the
// default of an authenticated session), against real servers.

// superUser is the package cluster's super user (zktest.WithSuperDigest):
// an operator's admin account, which passes every ACL check.
const superUser, superPassword = "super", "super-secret"

// digestAuth authenticates a session as the digest user name.
func digestAuth(name string) session.Option {
	return session.WithAuth("digest", []byte(name+":pw-"+name))
}

// digestID is name's principal in a digest ACL.
func digestID(name string) string { return gozk.DigestACL(gozk.PermAll, name, "pw-"+name)[0].ID }

// aclRecipe is one recipe under test: take makes owner hold at path and
// returns the hold's nodes (full paths) and its release; join is another
// client's attempt (it must fail), keep the container nodes of the layout.
type aclRecipe struct {
	name string
	take func(t *testing.T, s *session.Session, path string) (nodes []string, release func())
	join func(ctx context.Context, s *session.Session, path string) error
	// line is where a contender's node goes (the node whose CREATE a
	// joiner lacks), and kind the kind of its nodes.
	line func(path string) string
	kind string
	keep func(path string) []string
}

func aclRecipes() []aclRecipe {
	same := func(p string) string { return p }
	only := func(p string) []string { return []string{p} }
	lock := func(opts ...mutex.Option) aclRecipe {
		return aclRecipe{
			take: func(t *testing.T, s *session.Session, path string) ([]string, func()) {
				m, err := mutex.New(s, path, append([]mutex.Option{mutex.WithData([]byte("alice"))}, opts...)...)
				require.NoError(t, err)
				require.NoError(t, m.Lock(testutil.Ctx(t, 20*time.Second)))
				return m.Hold().Nodes(), func() { _ = m.Unlock(context.Background()) }
			},
			join: func(ctx context.Context, s *session.Session, path string) error {
				m, err := mutex.New(s, path, opts...)
				if err != nil {
					return err
				}
				err = m.Lock(ctx)
				if err == nil {
					_ = m.Unlock(context.Background())
				}
				return err
			},
			line: same, kind: line.KindLock, keep: only,
		}
	}
	fair, nonFair := lock(), lock(mutex.NonFair())
	fair.name, nonFair.name = "mutex", "mutex-nonfair"
	campaign := func(opts ...election.Option) aclRecipe {
		return aclRecipe{
			take: func(t *testing.T, s *session.Session, path string) ([]string, func()) {
				e, err := election.New(s, path, "alice", opts...)
				require.NoError(t, err)
				l, err := e.Campaign(testutil.Ctx(t, 20*time.Second))
				require.NoError(t, err)
				snap, err := admin.Inspect(testutil.Ctx(t, 10*time.Second), s, path)
				require.NoError(t, err)
				require.Len(t, snap.Holders, 1, "%+v", snap)
				nodes := []string{snap.Holders[0].Node}
				// A non-fair candidate's registration (docs/handover.md).
				for _, c := range testutil.Children(t, s, path+"/candidates") {
					nodes = append(nodes, path+"/candidates/"+c)
				}
				return nodes, func() { _ = l.Resign(context.Background()) }
			},
			join: func(ctx context.Context, s *session.Session, path string) error {
				e, err := election.New(s, path, "bob", opts...)
				if err != nil {
					return err
				}
				l, err := e.Campaign(ctx)
				if err == nil {
					_ = l.Resign(context.Background())
				}
				return err
			},
			line: same, kind: line.KindLatch, keep: only,
		}
	}
	elect, electNonFair := campaign(), campaign(election.NonFair())
	elect.name, electNonFair.name = "election", "election-nonfair"
	electNonFair.keep = func(p string) []string { return []string{p, p + "/candidates"} }
	sem := aclRecipe{
		name: "semaphore",
		take: func(t *testing.T, s *session.Session, path string) ([]string, func()) {
			sm, err := semaphore.New(s, path, 2, semaphore.WithData([]byte("alice")))
			require.NoError(t, err)
			l, err := sm.Acquire(testutil.Ctx(t, 20*time.Second))
			require.NoError(t, err)
			return l.Nodes(), func() { _ = l.Release(context.Background()) }
		},
		join: func(ctx context.Context, s *session.Session, path string) error {
			sm, err := semaphore.New(s, path, 2)
			if err != nil {
				return err
			}
			l, err := sm.Acquire(ctx)
			if err == nil {
				_ = l.Release(context.Background())
			}
			return err
		},
		line: func(p string) string { return p + "/locks" },
		kind: line.KindLock,
		keep: func(p string) []string { return []string{p, p + "/locks", p + "/leases"} },
	}
	return []aclRecipe{fair, nonFair, sem, elect, electNonFair}
}

// requireRefused checks that err is the typed refusal of a join at line
// (CREATE on it), and not a timeout. A line below the recipe's path (the
// semaphore's locks) is a container, which the server removes once its last
// child has gone (the holder's node, consumed by its take): then the join
// is refused making it again, CREATE on path.
func requireRefused(t *testing.T, err error, ln, path string) {
	t.Helper()
	require.ErrorIs(t, err, line.ErrPermission)
	require.ErrorIs(t, err, gozk.ErrNoAuth)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "a refusal is an answer, not a wait")
	var pe *line.PermissionError
	require.ErrorAs(t, err, &pe)
	at := ln
	if pe.Path == path && ln != path {
		at = path // the line's container removed, and refused again
	}
	require.Equal(t, at, pe.Path, "%v", err)
	require.Equal(t, int32(gozk.PermCreate), pe.Perm, "%v", err)
	require.Equal(t, "create", pe.Op, "%v", err)
	require.Contains(t, err.Error(), at)
	require.Contains(t, err.Error(), "CREATE")
}

// TestACLDefaultKeepsOthersOut: with digest principals alice and bob, both
// authenticated and with the default ACL, alice holds each recipe. Bob can
// neither delete nor overwrite her node, nor add a contender node to the
// line; his own attempt to join fails at once with the typed error (not a
// wait), as an unauthenticated client's does, and leaves nothing behind.
// Both can read: Inspect shows alice as the holder. The nodes carry
// exactly alice's ACL.
func TestACLDefaultKeepsOthersOut(t *testing.T) {
	t.Parallel()
	alice := testutil.Open(t, zk.Servers(), digestAuth("alice"))
	bob := testutil.Open(t, zk.Servers(), digestAuth("bob"))
	anon := testutil.Open(t, zk.Servers())
	require.Equal(t, session.CreatorACL(), alice.ACL())
	require.Equal(t, gozk.WorldACL(gozk.PermAll), anon.ACL())
	want := []gozk.ACL{{Perms: gozk.PermAll, Scheme: "digest", ID: digestID("alice")},
		{Perms: gozk.PermRead, Scheme: "world", ID: "anyone"}}
	for _, rc := range aclRecipes() {
		t.Run(rc.name, func(t *testing.T) {
			path := testutil.TopPath(t, "acl")
			nodes, release := rc.take(t, alice, path)
			defer release()
			bep := epoch(t, bob)
			for _, p := range append(rc.keep(path), nodes...) {
				// Read by alice: a digest ID shows only to a principal
				// with ADMIN (ZooKeeper 3.6+ shows others "alice:x").
				acl, _, err := epoch(t, alice).Conn().GetACL(p)
				if errors.Is(err, gozk.ErrNoNode) && p == rc.line(path) && p != path {
					// The line's container, empty once the semaphore's
					// head consumed its node: the server may have reaped
					// it already (as below); nothing of it to check.
					continue
				}
				require.NoError(t, err, p)
				require.Equal(t, want, acl, p)
			}
			node := nodes[0]
			require.ErrorIs(t, bep.Conn().Delete(node, -1), gozk.ErrNoAuth, "bob deletes alice's node")
			_, err := bep.Conn().Set(node, []byte("bob"), -1)
			require.ErrorIs(t, err, gozk.ErrNoAuth, "bob overwrites alice's node")
			fake := rc.line(path) + "/" + line.ProtectedPrefix(line.NewGUID(), rc.kind)
			_, err = bep.Conn().Create(fake, nil, gozk.FlagEphemeral|gozk.FlagSequence, bob.ACL())
			if errors.Is(err, gozk.ErrNoNode) && rc.line(path) != path {
				// The line's container was removed (the semaphore's head
				// consumed its node; the server reaps an empty container):
				// bob can no more make it again.
				_, err = bep.Conn().Create(rc.line(path), nil, 0, bob.ACL())
			}
			require.ErrorIs(t, err, gozk.ErrNoAuth, "bob fakes a contender")

			for _, s := range []*session.Session{bob, anon} {
				err := rc.join(testutil.Ctx(t, 20*time.Second), s, path)
				requireRefused(t, err, rc.line(path), path)
			}
			snap, err := admin.Inspect(testutil.Ctx(t, 10*time.Second), bob, path)
			require.NoError(t, err)
			require.Len(t, snap.Holders, 1, "%+v", snap)
			require.Equal(t, node, snap.Holders[0].Node)
			require.Equal(t, alice.SessionID(), snap.Holders[0].SessionID)
			require.Empty(t, snap.Waiters, "bob left no waiter")
			left := testutil.Leftovers(t, bob, path, rc.keep(path)...)
			require.ElementsMatch(t, nodes, left, "nothing but alice's hold")
		})
	}
}

// TestACLExplicitWins: an ACL given with WithACL is used as given, even by
// an authenticated session: here open to all, so bob may join and waits in
// line behind alice.
func TestACLExplicitWins(t *testing.T) {
	t.Parallel()
	open := gozk.WorldACL(gozk.PermAll)
	alice := testutil.Open(t, zk.Servers(), digestAuth("alice"), session.WithACL(open))
	bob := testutil.Open(t, zk.Servers(), digestAuth("bob"))
	require.Equal(t, open, alice.ACL())
	path := testutil.TopPath(t, "acl")
	m, err := mutex.New(alice, path)
	require.NoError(t, err)
	require.NoError(t, m.Lock(testutil.Ctx(t, 20*time.Second)))
	defer func() { require.NoError(t, m.Unlock(context.Background())) }()
	ep := epoch(t, bob)
	for _, p := range append([]string{path}, m.Hold().Nodes()...) {
		acl, _, err := ep.Conn().GetACL(p)
		require.NoError(t, err)
		require.Equal(t, open, acl, p)
	}
	mb, err := mutex.New(bob, path)
	require.NoError(t, err)
	ok, err := mb.TryLock(testutil.Ctx(t, 20*time.Second))
	require.NoError(t, err, "bob may join an open path")
	require.False(t, ok, "alice holds")
}

// TestACLSuperUserRevokes: the server's super user (zktest.WithSuperDigest,
// an operator's admin account) passes the ACL that keeps bob out: it deletes
// alice's node, and her hold no longer validates.
func TestACLSuperUserRevokes(t *testing.T) {
	t.Parallel()
	alice := testutil.Open(t, zk.Servers(), digestAuth("alice"))
	super := testutil.Open(t, zk.Servers(), session.WithAuth("digest", []byte(superUser+":"+superPassword)))
	path := testutil.TopPath(t, "acl")
	m, err := mutex.New(alice, path)
	require.NoError(t, err)
	require.NoError(t, m.Lock(testutil.Ctx(t, 20*time.Second)))
	node := m.Hold().Nodes()[0]
	ctx := testutil.Ctx(t, 20*time.Second)

	// Bob may neither ask nor force: a typed error, and alice still holds.
	bob := testutil.Open(t, zk.Servers(), digestAuth("bob"))
	err = admin.AskRevoke(ctx, bob, admin.Grant{Node: node})
	require.ErrorIs(t, err, line.ErrPermission)
	_, err = admin.Revoke(ctx, bob, admin.Grant{Node: node}, time.Second)
	require.ErrorIs(t, err, line.ErrPermission)
	var pe *line.PermissionError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, int32(gozk.PermDelete), pe.Perm, "%v", err)
	require.NoError(t, m.Hold().Validate(ctx))

	// The super user revokes: alice is told first and deletes her node.
	byHolder, err := admin.Revoke(ctx, super, admin.Grant{Node: node}, 10*time.Second)
	require.NoError(t, err)
	require.True(t, byHolder)
	waitClosed(t, m.Hold().Lost(), 5*time.Second, "alice's loss")
	require.ErrorIs(t, context.Cause(m.Hold().Context()), line.ErrRevoked)
	require.ErrorIs(t, m.Hold().Validate(ctx), line.ErrLost)
}

// TestACLSemaphoreLeavesNoStrayChild: bob may join the semaphore's line
// (its locks) but not take a lease (an operator closed its leases to him):
// his Acquire fails with the typed error naming the leases, and his node
// in the line is gone with it.
func TestACLSemaphoreLeavesNoStrayChild(t *testing.T) {
	t.Parallel()
	both := []gozk.ACL{{Perms: gozk.PermAll, Scheme: "digest", ID: digestID("alice")},
		{Perms: gozk.PermAll, Scheme: "digest", ID: digestID("bob")}}
	alice := testutil.Open(t, zk.Servers(), digestAuth("alice"), session.WithACL(both))
	bob := testutil.Open(t, zk.Servers(), digestAuth("bob"), session.WithACL(both))
	super := testutil.Open(t, zk.Servers(), session.WithAuth("digest", []byte(superUser+":"+superPassword)))
	path := testutil.TopPath(t, "acl")
	sa, err := semaphore.New(alice, path, 2)
	require.NoError(t, err)
	lease, err := sa.Acquire(testutil.Ctx(t, 20*time.Second))
	require.NoError(t, err)
	defer func() { require.NoError(t, lease.Release(context.Background())) }()
	closed := []gozk.ACL{both[0], {Perms: gozk.PermRead, Scheme: "world", ID: "anyone"}}
	_, err = epoch(t, super).Conn().SetACL(path+"/leases", closed, -1)
	require.NoError(t, err)

	sb, err := semaphore.New(bob, path, 2)
	require.NoError(t, err)
	_, err = sb.Acquire(testutil.Ctx(t, 20*time.Second))
	require.ErrorIs(t, err, line.ErrPermission)
	require.NotErrorIs(t, err, context.DeadlineExceeded)
	var pe *line.PermissionError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, path+"/leases", pe.Path, "%v", err)
	require.Equal(t, int32(gozk.PermCreate), pe.Perm)
	require.Empty(t, testutil.Children(t, super, path+"/locks"), "bob's node left the line")
	left := testutil.Leftovers(t, super, path, path, path+"/locks", path+"/leases")
	require.Equal(t, lease.Nodes(), left, "nothing but alice's lease")
}

// TestACLX509: two client-certificate principals (ZooKeeper's x509
// provider: "CN=<name>") on a TLS cluster. The holder's node carries its
// certificate's principal; the other certificate can neither delete nor
// overwrite it, nor join the line, and is refused with the typed error;
// it reads the holder with Inspect.
func TestACLX509(t *testing.T) {
	t.Parallel()
	c := zktest.Start(t, 1, zktest.WithTLS(zktest.TLSConfig{}))
	cert, err := c.CA().ClientCert("bob")
	require.NoError(t, err)
	bobTLS := &tls.Config{RootCAs: c.CA().Pool(), Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	alice := testutil.Open(t, c.Servers(), session.WithTLS(c.ClientTLS()))
	bob := testutil.Open(t, c.Servers(), session.WithTLS(bobTLS))
	require.Equal(t, session.CreatorACL(), alice.ACL(), "a client certificate is a principal")
	path := testutil.TopPath(t, "acl")
	m, err := mutex.New(alice, path, mutex.WithData([]byte("alice")))
	require.NoError(t, err)
	require.NoError(t, m.Lock(testutil.Ctx(t, 20*time.Second)))
	defer func() { require.NoError(t, m.Unlock(context.Background())) }()
	node := m.Hold().Nodes()[0]
	ep := epoch(t, bob)
	acl, _, err := ep.Conn().GetACL(node)
	require.NoError(t, err)
	require.Equal(t, []gozk.ACL{{Perms: gozk.PermAll, Scheme: "x509", ID: "CN=" + zktest.ClientCN},
		{Perms: gozk.PermRead, Scheme: "world", ID: "anyone"}}, acl)
	require.ErrorIs(t, ep.Conn().Delete(node, -1), gozk.ErrNoAuth)
	_, err = ep.Conn().Set(node, []byte("bob"), -1)
	require.ErrorIs(t, err, gozk.ErrNoAuth)
	_, err = ep.Conn().Create(path+"/"+line.ProtectedPrefix(line.NewGUID(), line.KindLock), nil,
		gozk.FlagEphemeral|gozk.FlagSequence, bob.ACL())
	require.ErrorIs(t, err, gozk.ErrNoAuth)
	mb, err := mutex.New(bob, path)
	require.NoError(t, err)
	requireRefused(t, mb.Lock(testutil.Ctx(t, 20*time.Second)), path, path)
	snap, err := admin.Inspect(testutil.Ctx(t, 10*time.Second), bob, path)
	require.NoError(t, err)
	require.Len(t, snap.Holders, 1)
	require.Equal(t, node, snap.Holders[0].Node)
	require.Equal(t, "alice", snap.Holders[0].Data)
	require.Equal(t, []string{node}, testutil.Leftovers(t, bob, path, path))
}

// TestACLNoPrincipal: a client certificate the server does not authenticate
// (ssl.clientAuth=none: it never asks for it) gives the session no
// principal, so the default creator ACL cannot be set: the lock fails with
// ErrNoPrincipal, naming the node and the way out, and creates nothing.
func TestACLNoPrincipal(t *testing.T) {
	t.Parallel()
	c := zktest.Start(t, 1, zktest.WithTLS(zktest.TLSConfig{NoClientAuth: true}))
	s := testutil.Open(t, c.Servers(), session.WithTLS(c.ClientTLS()))
	require.Equal(t, session.CreatorACL(), s.ACL())
	path := testutil.TopPath(t, "acl")
	m, err := mutex.New(s, path)
	require.NoError(t, err)
	err = m.Lock(testutil.Ctx(t, 20*time.Second))
	require.ErrorIs(t, err, line.ErrNoPrincipal)
	require.ErrorIs(t, err, gozk.ErrInvalidACL)
	require.NotErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), path)
	require.Contains(t, err.Error(), "WithAuth")
	require.Contains(t, err.Error(), "WithACL")
	require.Nil(t, testutil.Leftovers(t, s, path), "nothing created")
}

// epoch is s's current epoch.
func epoch(t *testing.T, s *session.Session) *session.Epoch {
	t.Helper()
	ep, err := s.Wait(testutil.Ctx(t, 10*time.Second))
	require.NoError(t, err)
	return ep
}
