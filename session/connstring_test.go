package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

func TestParseConnectString(t *testing.T) {
	good := []struct {
		in      string
		servers []string
		ns      string
	}{
		{"127.0.0.1:2181", []string{"127.0.0.1:2181"}, ""},
		{"127.0.0.1:2181,127.0.0.2:2182", []string{"127.0.0.1:2181", "127.0.0.2:2182"}, ""},
		{"127.0.0.1:2181, 127.0.0.2:2182/app", []string{"127.0.0.1:2181", "127.0.0.2:2182"}, "/app"},
		{"zk1:2181,zk2:2181/app/team", []string{"zk1:2181", "zk2:2181"}, "/app/team"},
		{"[::1]:2181/x", []string{"[::1]:2181"}, "/x"},
		{"127.0.0.1:2181/", []string{"127.0.0.1:2181"}, ""},
		// A host without a port gets 2181, as zkCli and Curator give it.
		{"127.0.0.1", []string{"127.0.0.1:2181"}, ""},
		{"127.0.0.1/app", []string{"127.0.0.1:2181"}, "/app"},
		{"zk1,zk2:2182,[::1]", []string{"zk1:2181", "zk2:2182", "[::1]:2181"}, ""},
	}
	for _, c := range good {
		servers, ns, err := session.ParseConnectString(c.in)
		require.NoError(t, err, c.in)
		require.Equal(t, c.servers, servers, c.in)
		require.Equal(t, c.ns, ns, c.in)
	}
	bad := []string{
		"", "/app", " , /app", "127.0.0.1:0/app", "::1/app", "host:x", "127.0.0.1:2181/app/",
		"127.0.0.1:2181//app", "127.0.0.1:2181/zookeeper", "127.0.0.1:2181/zookeeper/quota",
		"127.0.0.1:2181/a/../b", "127.0.0.1:2181/a\x00b",
	}
	for _, s := range bad {
		servers, ns, err := session.ParseConnectString(s)
		require.ErrorIs(t, err, session.ErrInvalidArgument, "%q", s)
		require.Nil(t, servers, "%q", s)
		require.Empty(t, ns, "%q", s)
	}
}

// TestConnect: a connect string's chroot is the session's namespace, a
// WithNamespace goes under it, and WithNamespace("") adds none.
func TestConnect(t *testing.T) {
	c := zktest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range []struct {
		connect string
		opts    []session.Option
		ns      string
	}{
		{c.ConnectString(), nil, ""},
		{c.ConnectString(), []session.Option{session.WithNamespace("")}, ""},
		{c.ConnectString() + "/app", nil, "/app"},
		{c.ConnectString() + "/app", []session.Option{session.WithNamespace("/team")}, "/app/team"},
	} {
		s, err := session.Connect(ctx, tc.connect, tc.opts...)
		require.NoError(t, err, tc.connect)
		require.Equal(t, tc.ns, s.Namespace(), tc.connect)
		require.Equal(t, tc.ns+"/x", s.Path("/x"))
		require.NoError(t, s.Close())
	}
	_, err := session.Connect(ctx, "127.0.0.1:2181/zookeeper")
	require.ErrorIs(t, err, session.ErrInvalidArgument)
}
