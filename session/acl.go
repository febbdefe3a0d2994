package session

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// CreatorACL is the ACL of the nodes an authenticated session creates by
// default (see WithACL): every permission to the principals the creating
// session authenticated as (ZooKeeper's "auth" scheme: its digest user, its
// client certificate's subject), and READ to anyone, so that anyone may see
// who holds what (shepherd status, admin.Inspect) but nobody else may
// delete, overwrite, or add a child to (join, or fake a hold under) what it
// created.
func CreatorACL() []zk.ACL {
	return []zk.ACL{{Perms: zk.PermAll, Scheme: "auth"}, {Perms: zk.PermRead, Scheme: "world", ID: "anyone"}}
}

// authenticated reports whether the configuration gives the session a
// principal of its own: credentials, or a client certificate.
func (c *config) authenticated() bool {
	return len(c.auth) > 0 || hasClientCert(c.tls)
}

func hasClientCert(cfg *tls.Config) bool {
	return cfg != nil && (len(cfg.Certificates) > 0 || cfg.GetClientCertificate != nil)
}

// Refusals by a node's ACL, matched with errors.Is.
var (
	// ErrPermission: a node's ACL denies a request (ZooKeeper's NoAuth).
	// The error is a *PermissionError, which matches zk.ErrNoAuth too.
	ErrPermission = errors.New("permission denied by the node's ACL")
	// ErrNoPrincipal: a create with an ACL naming the creator (scheme
	// "auth", as CreatorACL does) by a session the server authenticated as
	// no one: a client certificate the server does not authenticate (no
	// client authentication, or no x509 provider), or no credentials. It
	// matches zk.ErrInvalidACL too.
	ErrNoPrincipal = errors.New("the session has no authenticated principal for the creator ACL")
)

// PermissionError is a request refused by a node's ACL. It matches
// ErrPermission and zk.ErrNoAuth. ZooKeeper checks a create and a delete
// against the parent's ACL (CREATE, DELETE), a write against the node's own
// (WRITE), a read, a listing or a version check against the node's own (READ).
type PermissionError struct {
	Op   string // the request refused: "create", "delete", "setData", "getData", "getChildren", "check"
	Node string // the node the request was about
	Path string // the node whose ACL refused: Node's parent for a create or a delete, else Node
	Perm int32  // the permission Path's ACL does not grant this session (zk.PermCreate, ...)
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("%s %s: permission denied: the ACL of %s does not grant %s to this session's principals",
		e.Op, e.Node, e.Path, permString(e.Perm))
}

// Unwrap makes the error match ErrPermission and zk.ErrNoAuth.
func (e *PermissionError) Unwrap() []error { return []error{ErrPermission, zk.ErrNoAuth} }

// OutcomeKnown marks the error as the server's answer: never retried.
func (e *PermissionError) OutcomeKnown() bool { return true }

// permString names the permissions in perms as ZooKeeper's CLI does
// ("CREATE", "READ|WRITE", "ALL").
func permString(perms int32) string {
	if perms&zk.PermAll == zk.PermAll {
		return "ALL"
	}
	var names []string
	for _, p := range []struct {
		bit  int32
		name string
	}{{zk.PermRead, "READ"}, {zk.PermWrite, "WRITE"}, {zk.PermCreate, "CREATE"}, {zk.PermDelete, "DELETE"}, {zk.PermAdmin, "ADMIN"}} {
		if perms&p.bit != 0 {
			names = append(names, p.name)
		}
	}
	if len(names) == 0 {
		return "NONE"
	}
	return strings.Join(names, "|")
}
