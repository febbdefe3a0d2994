package session

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/shepherdzk/shepherd/internal/wire/zkpath"
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

// DefaultPort is the port of a server given without one, as zkCli and
// Curator default it.
const DefaultPort = "2181"

// SplitServers parses a connect string "host:port,host:port" into a server
// list, checking each address. A host without a port gets DefaultPort.
func SplitServers(connect string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(connect, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, withPort(s))
		}
	}
	if err := checkServers(out); err != nil {
		return nil, err
	}
	return out, nil
}

// withPort adds DefaultPort to an address that has no port: "zk1",
// "127.0.0.1", "[::1]".
func withPort(s string) string {
	if _, _, err := net.SplitHostPort(s); err == nil {
		return s
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		return s + ":" + DefaultPort
	}
	if !strings.Contains(s, ":") {
		return net.JoinHostPort(s, DefaultPort)
	}
	return s // not an address: checkServers says so
}

func checkServers(servers []string) error {
	if len(servers) == 0 {
		return fmt.Errorf("%w: empty server list", ErrInvalidArgument)
	}
	for _, s := range servers {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			return fmt.Errorf("%w: server %q: want host:port", ErrInvalidArgument, s)
		}
		p, err := strconv.Atoi(port)
		if host == "" || err != nil || p < 1 || p > 65535 || strings.ContainsAny(host, "/ ") {
			return fmt.Errorf("%w: server %q: want host:port with a port in 1-65535", ErrInvalidArgument, s)
		}
	}
	return nil
}
