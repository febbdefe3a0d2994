package fence_test

import (
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// Ensure creates the target and its parents once, in the session's
// namespace, and leaves a node already there as it is.
func TestEnsure(t *testing.T) {
	ns := testutil.UniquePath(t, "fence-test")
	s := testutil.Open(t, zk.Servers(), session.WithNamespace(ns))
	raw := testutil.Open(t, zk.Servers())
	ctx := testutil.Ctx(t, 20*time.Second)
	require.NoError(t, fence.Ensure(ctx, s, "/a/b/target", []byte("v1")))
	require.NoError(t, fence.Ensure(ctx, s, "/a/b/target", []byte("v2")))
	ep, err := raw.Wait(ctx)
	require.NoError(t, err)
	data, st, err := ep.Conn().Get(ns + "/a/b/target")
	require.NoError(t, err)
	require.Equal(t, "v1", string(data), "a node already there keeps its data")
	require.Zero(t, st.EphemeralOwner, "persistent")
	require.ErrorIs(t, fence.Ensure(ctx, s, "a/relative", nil), fence.ErrInvalidPath)
	require.ErrorIs(t, fence.Ensure(ctx, s, "/zookeeper/x", nil), recipe.ErrInvalidPath)
}

// A hold's Fenced takes fence ops (namespaced paths) and go-zookeeper's
// requests (Raw: full paths) together; an op that fails on its own lands nothing
// and is matched with fence's errors; a released hold refuses.
func TestFencedOps(t *testing.T) {
	ns := testutil.UniquePath(t, "fence-test")
	s := testutil.Open(t, zk.Servers(), session.WithNamespace(ns))
	raw := testutil.Open(t, zk.Servers())
	ctx := testutil.Ctx(t, 20*time.Second)
	require.NoError(t, fence.Ensure(ctx, s, "/jobs/state", []byte("0")))
	m, err := mutex.New(s, "/jobs/lock")
	require.NoError(t, err)
	require.NoError(t, m.Lock(ctx))

	res, err := m.Fenced(ctx,
		fence.Set("/jobs/state", []byte("1"), 0),
		fence.Create("/jobs/done", []byte("yes")),
		fence.Raw(&gozk.SetDataRequest{Path: ns + "/jobs/state", Data: []byte("2"), Version: 1}))
	require.NoError(t, err)
	require.Len(t, res, 3)
	require.EqualValues(t, 1, res[0].Stat.Version, "a Set's response carries the new version")
	require.Equal(t, ns+"/jobs/done", res[1].String, "a Create's response carries the path")
	require.EqualValues(t, 2, res[2].Stat.Version)

	ep, err := raw.Wait(ctx)
	require.NoError(t, err)
	get := func(p string) string {
		data, _, err := ep.Conn().Get(ns + p)
		require.NoError(t, err)
		return string(data)
	}
	require.Equal(t, "2", get("/jobs/state"))
	require.Equal(t, "yes", get("/jobs/done"))
	acl, _, err := ep.Conn().GetACL(ns + "/jobs/done")
	require.NoError(t, err)
	require.Equal(t, s.ACL(), acl, "a Create has the session's ACL")

	// Ops that fail on their own: nothing lands.
	_, err = m.Fenced(ctx, fence.Set("/jobs/state", []byte("x"), 0))
	require.ErrorIs(t, err, fence.ErrBadVersion)
	_, err = m.Fenced(ctx, fence.Set("/jobs/state", []byte("x"), fence.AnyVersion), fence.Create("/jobs/done", nil))
	require.ErrorIs(t, err, fence.ErrNodeExists)
	_, err = m.Fenced(ctx, fence.Delete("/jobs/missing", fence.AnyVersion))
	require.ErrorIs(t, err, fence.ErrNoNode)
	require.Equal(t, "2", get("/jobs/state"), "a failed multi-op lands nothing")
	_, err = m.Fenced(ctx, fence.Set("jobs/state", nil, 0))
	require.ErrorIs(t, err, fence.ErrInvalidPath)
	_, err = m.Fenced(ctx, nil)
	require.ErrorIs(t, err, fence.ErrInvalidPath, "a nil Op")
	_, err = m.Fenced(ctx, fence.Raw((*gozk.SetDataRequest)(nil)))
	require.ErrorIs(t, err, fence.ErrInvalidPath, "a nil request")

	_, err = m.Fenced(ctx, fence.Delete("/jobs/done", 0))
	require.NoError(t, err)
	_, _, err = ep.Conn().Get(ns + "/jobs/done")
	require.ErrorIs(t, err, gozk.ErrNoNode)

	h := m.Hold()
	require.NoError(t, m.Unlock(ctx))
	_, err = h.Fenced(ctx, fence.Set("/jobs/state", []byte("late"), fence.AnyVersion))
	require.ErrorIs(t, err, recipe.ErrLost, "a released hold's fenced write")
	require.Equal(t, "2", get("/jobs/state"))
}

// Get reads a node in the session's namespace (data and version, for a
// fenced write that changes exactly what was read); a missing node's error
// says to create it with Ensure, and so does a fenced write's whose target
// is missing, naming the node.
func TestGetAndMissingNode(t *testing.T) {
	ns := testutil.UniquePath(t, "fence-test")
	s := testutil.Open(t, zk.Servers(), session.WithNamespace(ns))
	ctx := testutil.Ctx(t, 20*time.Second)
	_, _, err := fence.Get(ctx, s, "/jobs/state")
	require.ErrorIs(t, err, fence.ErrNoNode)
	require.Contains(t, err.Error(), "fence.Ensure")
	require.NoError(t, fence.Ensure(ctx, s, "/jobs/state", []byte("v1")))
	data, version, err := fence.Get(ctx, s, "/jobs/state")
	require.NoError(t, err)
	require.Equal(t, "v1", string(data))
	require.EqualValues(t, 0, version)

	m, err := mutex.New(s, "/jobs/lock")
	require.NoError(t, err)
	require.NoError(t, m.Lock(ctx))
	_, err = m.Fenced(ctx, fence.Set("/jobs/state", []byte("v2"), version))
	require.NoError(t, err)
	_, err = m.Fenced(ctx, fence.Set("/jobs/missing", []byte("x"), fence.AnyVersion))
	require.ErrorIs(t, err, fence.ErrNoNode)
	require.Contains(t, err.Error(), ns+"/jobs/missing")
	require.Contains(t, err.Error(), "fence.Ensure")
	_, err = m.Fenced(ctx, fence.Set("/jobs/state", []byte("x"), version))
	require.ErrorIs(t, err, fence.ErrBadVersion, "a write with a stale version")
	data, _, err = fence.Get(ctx, s, "/jobs/state")
	require.NoError(t, err)
	require.Equal(t, "v2", string(data))
	require.NoError(t, m.Unlock(ctx))
	_, _, err = fence.Get(ctx, s, "relative")
	require.ErrorIs(t, err, fence.ErrInvalidPath)
}

// Raw sends go-zookeeper's requests as they are (full paths, their own
// flags and ACL), a version check of another node included; an op's String
// names it as the errors do.
func TestRaw(t *testing.T) {
	ns := testutil.UniquePath(t, "fence-test")
	s := testutil.Open(t, zk.Servers(), session.WithNamespace(ns))
	ctx := testutil.Ctx(t, 20*time.Second)
	require.NoError(t, fence.Ensure(ctx, s, "/jobs/state", []byte("0")))
	m, err := mutex.New(s, "/jobs/lock")
	require.NoError(t, err)
	require.NoError(t, m.Lock(ctx))
	defer func() { require.NoError(t, m.Unlock(ctx)) }()

	res, err := m.Fenced(ctx,
		fence.Raw(&gozk.CheckVersionRequest{Path: ns + "/jobs/state", Version: 0}),
		fence.Raw(&gozk.CreateRequest{Path: ns + "/jobs/eph-", Acl: s.ACL(), Flags: gozk.FlagEphemeral | gozk.FlagSequence}),
		fence.Raw(&gozk.DeleteRequest{Path: ns + "/jobs/state", Version: 0}))
	require.NoError(t, err)
	require.Len(t, res, 3)
	require.Contains(t, res[1].String, ns+"/jobs/eph-", "a sequential create's path")
	_, err = m.Fenced(ctx, fence.Raw(&gozk.CheckVersionRequest{Path: ns + "/jobs/state", Version: 0}))
	require.ErrorIs(t, err, fence.ErrNoNode)
	require.Contains(t, err.Error(), "checking "+ns+"/jobs/state")

	require.Equal(t, "set /a version 3", fence.Set("/a", nil, 3).String())
	require.Equal(t, "create /a", fence.Create("/a", nil).String())
	require.Equal(t, "delete /a version -1", fence.Delete("/a", fence.AnyVersion).String())
	require.Equal(t, "check /a version 2", fence.Raw(&gozk.CheckVersionRequest{Path: "/a", Version: 2}).String())
	require.Equal(t, "nil *zk.DeleteRequest", fence.Raw((*gozk.DeleteRequest)(nil)).String())
}
