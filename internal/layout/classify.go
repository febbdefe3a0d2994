package layout

// What a path shows (Seen) and whose it is: each piece of evidence and
// the kinds it belongs to (Classify, KindOf).

import (
	"fmt"
	"strings"
)

// Seen is what a path shows: its data and its children.
type Seen struct {
	Data     []byte
	Children []Child
}

// Child is one child of a path.
type Child struct {
	Name string
	// Ephemeral: the child is a session's node. Known (Stat read) only
	// for fixed names two kinds share (Ambiguous); false otherwise.
	Ephemeral bool
	// Contender is the child's contender kind if its name parses as a
	// contender's ("lock-", ...), "" otherwise.
	Contender string
}

// Ambiguous reports whether a child named name needs its Stat read to be
// classified: a fixed name that two kinds use, one for a holder's node and
// one for a path.
func Ambiguous(name string) bool { return name == NonFairLeaderNode }

// Evidence is one thing at a path that belongs to some kinds.
type Evidence struct {
	// What it is, for a message: `data "shepherd:semaphore:v1 maxLeases=3"`,
	// `child "nonfair-lock" (the holder's node)`.
	What string
	// Kinds are the kinds it belongs to (more than one only for Kazoo's
	// "__lock__", shared by design).
	Kinds []*Recipe
	// Contender is the contender kind of a line's node ("" for a stamp or a
	// fixed-name child).
	Contender string
}

// Classify returns what at a path belongs to which kinds: its data's stamp,
// its fixed-name children, its contender nodes. Children no kind declares
// (another application's, a name that does not parse) are no evidence.
func Classify(s Seen) []Evidence {
	var ev []Evidence
	for _, k := range Kinds {
		if k.Stamp != "" && strings.HasPrefix(string(s.Data), k.Stamp) {
			ev = append(ev, Evidence{What: fmt.Sprintf("data %q", short(s.Data)), Kinds: []*Recipe{k}})
		}
	}
	for _, c := range s.Children {
		e := Evidence{}
		for _, k := range Kinds {
			if c.Contender != "" && has(k.Contenders, c.Contender) {
				e.Kinds = append(e.Kinds, k)
				e.What = fmt.Sprintf("child %q (a %s contender's node)", c.Name, c.Contender)
				e.Contender = c.Contender
			}
			for _, n := range k.Nodes {
				if n.Stamps && n.Name == c.Name && (!Ambiguous(c.Name) || n.Ephemeral == c.Ephemeral) {
					e.Kinds = append(e.Kinds, k)
					e.What = fmt.Sprintf("child %q (%s)", c.Name, n.What)
				}
			}
		}
		if len(e.Kinds) > 0 {
			ev = append(ev, e)
		}
	}
	for _, k := range Kinds {
		if len(k.Legacy) > 0 && hasAll(s.Children, k.Legacy) {
			ev = append(ev, Evidence{What: fmt.Sprintf("children %q (a %s made before its stamp)", k.Legacy, k.Name),
				Kinds: []*Recipe{k}})
		}
	}
	return ev
}

// hasAll reports whether children include every name (none of them a
// session's node).
func hasAll(children []Child, names []string) bool {
	for _, n := range names {
		found := false
		for _, c := range children {
			found = found || (c.Name == n && !c.Ephemeral)
		}
		if !found {
			return false
		}
	}
	return true
}

// KindOf returns the kind a path is, by the first evidence Classify finds
// (nil: no kind's), and the other kinds whose evidence is there too (a path
// that mixes kinds, which no shepherd recipe makes).
func KindOf(ev []Evidence) (k *Recipe, others []*Recipe) {
	for _, e := range ev {
		for _, ek := range e.Kinds {
			switch {
			case k == nil:
				k = ek
			case ek != k && !hasKind(others, ek) && !hasKind(e.Kinds, k):
				others = append(others, ek)
			}
		}
	}
	return k, others
}
