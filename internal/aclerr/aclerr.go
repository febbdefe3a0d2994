// Package aclerr gives a refusal by a node's ACL its meaning: ZooKeeper's
// answer (NoAuth, InvalidACL) names neither the node nor the permission, so
// every request shepherd makes hands its error here with what it asked.
package aclerr

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/wire/zkpath"
	"github.com/shepherdzk/shepherd/session"
)

// Map is the one place a refusal by an ACL gets its meaning: every
// request a recipe makes hands its error here with what it asked (op, as
// session.PermissionError.Op names it) about which node. ZooKeeper's answer carries
// neither. zk.ErrNoAuth becomes a *session.PermissionError naming the node whose ACL
// refused and the permission it lacks; zk.ErrInvalidACL on a create, an
// error matching session.ErrNoPrincipal that says what to do. Any other err is
// returned as it is (nil too), and so is an error already mapped.
func Map(op, node string, err error) error {
	if err == nil {
		return nil
	}
	var pe *session.PermissionError
	if errors.As(err, &pe) || errors.Is(err, session.ErrNoPrincipal) {
		return err
	}
	switch {
	case errors.Is(err, zk.ErrNoAuth):
		e := &session.PermissionError{Op: op, Node: node, Path: node}
		switch op {
		case "create":
			e.Perm, e.Path = zk.PermCreate, zkpath.Parent(node)
		case "delete":
			e.Perm, e.Path = zk.PermDelete, zkpath.Parent(node)
		case "setData":
			e.Perm = zk.PermWrite
		default:
			e.Perm = zk.PermRead
		}
		return e
	case errors.Is(err, zk.ErrInvalidACL) && op == "create":
		return fmt.Errorf("create %s: %w (%w): the server authenticated this session as no one (credentials it "+
			"did not take, or a client certificate it does not authenticate: no client authentication, or no "+
			"x509 auth provider), and the node's ACL names its creator (the default, session.CreatorACL, of a session "+
			"with credentials or a client certificate); add credentials the server accepts (session.WithAuth), or "+
			"give the ACL to use (session.WithACL)", node, session.ErrNoPrincipal, zk.ErrInvalidACL)
	}
	return err
}

// MapMulti is Map for a multi-op: ops are the requests sent
// (*zk.CreateRequest, *zk.DeleteRequest, *zk.SetDataRequest,
// *zk.CheckVersionRequest), res the answers. A refusal by an ACL names the
// op the server refused; other errors are returned as they are.
func MapMulti(ops []any, res []zk.MultiResponse, err error) error {
	if err == nil || !(errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrInvalidACL)) {
		return err
	}
	for i, r := range res {
		if i >= len(ops) || !(errors.Is(r.Error, zk.ErrNoAuth) || errors.Is(r.Error, zk.ErrInvalidACL)) {
			continue
		}
		switch o := ops[i].(type) {
		case *zk.CreateRequest:
			return Map("create", o.Path, r.Error)
		case *zk.DeleteRequest:
			return Map("delete", o.Path, r.Error)
		case *zk.SetDataRequest:
			return Map("setData", o.Path, r.Error)
		case *zk.CheckVersionRequest:
			return Map("check", o.Path, r.Error)
		}
	}
	return err
}
