package line

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// sweepLate removes a node with our guid that lands after Enter is done (a
// create the lost server forwarded late), and leaves our own node alone. The
// late node is made here by hand: no fault of the test kit delivers a
// request late.
func TestSweepLateRemovesALateCreate(t *testing.T) {
	c := zktest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := session.Open(ctx, c.Servers())
	require.NoError(t, err)
	defer func() { s.Close(); <-s.Done() }()
	ep, err := s.Wait(ctx)
	require.NoError(t, err)
	l := &Line{Sess: s, Path: "/sweep/line"}
	require.NoError(t, l.ensurePath(ep))
	guid := NewGUID()
	mk := func() string {
		p, err := ep.Conn().Create(l.Path+"/"+ProtectedPrefix(guid, KindLock), nil, zk.FlagEphemeral|zk.FlagSequence, s.ACL())
		require.NoError(t, err)
		return p
	}
	made := mk()
	done := make(chan struct{})
	go func() { defer close(done); l.sweepLate(ep, guid, made) }()
	late := mk()
	require.Eventually(t, func() bool {
		ok, _, err := ep.Conn().Exists(late)
		return err == nil && !ok
	}, 5*time.Second, 10*time.Millisecond, "the late node stayed")
	ok, _, err := ep.Conn().Exists(made)
	require.NoError(t, err)
	require.True(t, ok, "our own node was removed")
	s.Close()
	<-done // the sweep ends with the session
}
