// Package zkpath validates and joins ZooKeeper paths, for the session's
// namespace and every recipe path.
package zkpath

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrInvalid is the error every invalid path wraps.
var ErrInvalid = errors.New("invalid path")

// MaxLen bounds the length of a path (ZooKeeper itself only bounds the request
// size; a bound here keeps names, and lists of them, sane).
const MaxLen = 1024

// Validate reports why p is not a path a recipe may use: it must be absolute,
// have no trailing slash, no empty, "." or ".." element, no control characters
// or invalid UTF-8, and must not be "/" itself or lie under /zookeeper (the
// server's own tree).
func Validate(p string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrInvalid, p, why) }
	switch {
	case p == "":
		return bad("empty")
	case len(p) > MaxLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxLen))
	case p[0] != '/':
		return bad("not absolute (must start with /)")
	case p == "/":
		return bad("the root cannot be used")
	case strings.HasSuffix(p, "/"):
		return bad("trailing slash")
	case !utf8.ValidString(p):
		return bad("not valid UTF-8")
	}
	for _, r := range p {
		if r == 0 || unicode.IsControl(r) || (r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) {
			return bad(fmt.Sprintf("character %U not allowed", r))
		}
	}
	for _, el := range strings.Split(p[1:], "/") {
		switch el {
		case "":
			return bad("empty element (//)")
		case ".", "..":
			return bad("relative element " + el)
		}
	}
	if p == "/zookeeper" || strings.HasPrefix(p, "/zookeeper/") {
		return bad("/zookeeper is reserved for the server")
	}
	return nil
}

// ValidateName reports why name cannot be a single path element.
func ValidateName(name string) error {
	if name == "" || strings.Contains(name, "/") || name == "." || name == ".." {
		return fmt.Errorf("%w element %q", ErrInvalid, name)
	}
	return Validate("/" + name)
}

// Join puts p under the namespace ns ("" for none). Both must be valid.
func Join(ns, p string) string { return ns + p }

// Parent is the parent of p: "/" for a path directly under the root ("/a").
// p must be valid.
func Parent(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "/"
}

// Parents lists the ancestors of p, shortest first, excluding "/" and p.
func Parents(p string) []string {
	var out []string
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}
