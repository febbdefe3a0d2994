package session

import (
	"fmt"
	"strings"

	"github.com/shepherdzk/shepherd/internal/zkpath"
)

// ParseConnectString parses a ZooKeeper connect string the way zkCli and
// Curator take it, "host:port,host:port/chroot": the servers (checked as
// SplitServers checks them) and the chroot, returned as a namespace to pass
// to WithNamespace ("" when there is none; a lone trailing "/" is none, as
// in ZooKeeper's own parser). The chroot must be a valid recipe path. Errors
// wrap ErrInvalidArgument.
//
//	servers, ns, err := session.ParseConnectString("zk1:2181,zk2:2181/myapp")
//	sess, err := session.Open(ctx, servers, session.WithNamespace(ns))
//
// (WithNamespace("") is not allowed: add the option only when ns != "".)
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
