package session

import (
	"context"
	"fmt"
	"strings"

	"github.com/shepherdzk/shepherd/internal/zkpath"
)

// Connect opens a session (see Open) from a ZooKeeper connect string as
// zkCli, Curator and Kazoo take it: "host:port,host:port/chroot" (a host
// without a port gets DefaultPort). The chroot is the session's namespace;
// a WithNamespace option among opts goes under it.
//
//	sess, err := session.Connect(ctx, "zk1:2181,zk2:2181/myapp")
//
// A bad connect string is an error matching ErrInvalidArgument.
func Connect(ctx context.Context, connect string, opts ...Option) (*Session, error) {
	servers, chroot, err := ParseConnectString(connect)
	if err != nil {
		return nil, err
	}
	return Open(ctx, servers, append(opts, func(c *config) { c.chroot = chroot })...)
}

// ParseConnectString parses a ZooKeeper connect string the way zkCli and
// Curator take it, "host:port,host:port/chroot": the servers (checked as
// SplitServers checks them; a host without a port gets DefaultPort) and the
// chroot, returned as a namespace to pass to WithNamespace ("" when there is
// none, which WithNamespace ignores; a lone trailing "/" is none, as in
// ZooKeeper's own parser). The chroot must be a valid recipe path. Errors
// wrap ErrInvalidArgument. Connect does both.
//
//	servers, ns, err := session.ParseConnectString("zk1:2181,zk2:2181/myapp")
//	sess, err := session.Open(ctx, servers, session.WithNamespace(ns))
func ParseConnectString(s string) (servers []string, namespace string, err error) {
	hosts, chroot, found := strings.Cut(s, "/")
	servers, err = SplitServers(hosts)
	if err != nil {
		return nil, "", err
	}
	if !found || chroot == "" {
		return servers, "", nil
	}
	namespace = "/" + chroot
	if err := zkpath.Validate(namespace); err != nil {
		return nil, "", fmt.Errorf("%w: connect string chroot: %w", ErrInvalidArgument, err)
	}
	return servers, namespace, nil
}
