package session_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/session"
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
	}
	for _, c := range good {
		servers, ns, err := session.ParseConnectString(c.in)
		require.NoError(t, err, c.in)
		require.Equal(t, c.servers, servers, c.in)
		require.Equal(t, c.ns, ns, c.in)
	}
	bad := []string{
		"", "/app", " , /app", "127.0.0.1/app", "127.0.0.1:0/app", "127.0.0.1:2181/app/",
		"127.0.0.1:2181//app", "127.0.0.1:2181/zookeeper", "127.0.0.1:2181/zookeeper/quota",
		"127.0.0.1:2181/a/../b", "127.0.0.1:2181/a\x00b", "127.0.0.1:2181,host/x:2182",
	}
	for _, s := range bad {
		servers, ns, err := session.ParseConnectString(s)
		require.ErrorIs(t, err, session.ErrInvalidArgument, "%q", s)
		require.Nil(t, servers, "%q", s)
		require.Empty(t, ns, "%q", s)
	}
}
