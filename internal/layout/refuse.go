package layout

// Refusals: a kind's answer to what another left at a path (Refuse,
// RefusesChild), at its parent (PartOf, RefusePart) or in the containers it
// keeps under it (RefuseInPart).

import (
	"fmt"
	"strings"
)

// Mismatch is a path that belongs to another kind than the one that looked.
type Mismatch struct {
	There    *Recipe // the kind it belongs to
	Evidence string  // what says so
	// Contender is the contender kind when the evidence is a line's node
	// ("" for a stamp or a fixed-name child).
	Contender string
	// Part, when set, says which part of There's layout the path is (see
	// RefusePart): the evidence is then its parent's. With Child, it says
	// what the looking kind keeps in that child (see RefuseInPart).
	Part string
	// Child, when set, is the child of the path (a container the looking
	// kind keeps there) whose nodes are the evidence (see RefuseInPart).
	Child string
}

func (m *Mismatch) Error() string {
	if m.Child != "" {
		return fmt.Sprintf("%q under it is %s's: it has %s, %s", m.Child, m.There, m.Evidence, m.Part)
	}
	if m.Part != "" {
		return fmt.Sprintf("it is part of %s's layout: %s, and %s", m.There, m.Evidence, m.Part)
	}
	return fmt.Sprintf("it is %s's path: it has %s", m.There, m.Evidence)
}

// Refuse returns a Mismatch when s shows evidence of a kind other than me
// that is not shared with me (see the package doc), nil when the path is
// free (nothing of any kind's) or me's.
func Refuse(me *Recipe, s Seen) *Mismatch {
	for _, e := range Classify(s) {
		if !hasKind(e.Kinds, me) {
			return &Mismatch{There: e.Kinds[0], Evidence: e.What, Contender: e.Contender}
		}
	}
	return nil
}

// PartOf returns the kind whose layout a path named name is a part of, and
// which part, when its parent's data (parentData) stamps that kind and the
// kind keeps a fixed-name child of that name (a semaphore's "leases", a
// schedule's "state"); nil when it is none.
func PartOf(parentData []byte, name string) (*Recipe, *Node) {
	for _, k := range Kinds {
		if k.Stamp == "" || !strings.HasPrefix(string(parentData), k.Stamp) {
			continue
		}
		for i, n := range k.Nodes {
			if n.Name == name {
				return k, &k.Nodes[i]
			}
		}
	}
	return nil, nil
}

// RefusePart returns a Mismatch when a path named name, whose parent's
// data is parentData, is a part of another kind's layout (see PartOf) and
// me may not be made there (Node.Recipes): a recipe there would write its
// nodes into another recipe's layout, which neither would tell apart. nil
// otherwise.
func RefusePart(me *Recipe, parentData []byte, name string) *Mismatch {
	k, n := PartOf(parentData, name)
	if k == nil || hasKind(n.Recipes, me) {
		return nil
	}
	return &Mismatch{There: k, Evidence: fmt.Sprintf("its parent's data %q", short(parentData)),
		Part: fmt.Sprintf("%q is %s", name, n.What)}
}

// RefuseInPart returns a Mismatch when part n of me's layout (a container
// of contender nodes: n.Holds), whose children are seen, holds another
// kind's evidence: a contender of a kind n does not hold (a lock's line
// made at a path that a semaphore made later is part of), or another
// kind's fixed names. nil when it holds only what me keeps there.
func RefuseInPart(me *Recipe, n *Node, seen Seen) *Mismatch {
	for _, e := range Classify(seen) {
		if e.Contender != "" && has(n.Holds, e.Contender) {
			continue
		}
		return &Mismatch{There: e.Kinds[0], Evidence: e.What, Contender: e.Contender, Child: n.Name,
			Part: fmt.Sprintf("where %s keeps %s", me, n.What)}
	}
	return nil
}

// RefusesChild reports, for a listing of a line's path (names only, no
// Stat), whether a child named name belongs to another kind than me: one of
// another kind's stamping fixed names, or a contender of a kind me's line
// does not take. It names that kind. An Ambiguous name, which a listing
// cannot tell, is no evidence here (the single-node race, whose node it is,
// refuses a line's node after its own grant).
func RefusesChild(me *Recipe, name, contender string) (*Recipe, bool) {
	for _, k := range Kinds {
		if k == me {
			continue
		}
		for _, n := range k.Nodes {
			if n.Stamps && n.Name == name && !Ambiguous(name) && !hasNode(me.Nodes, name) {
				return k, true
			}
		}
		if contender != "" && has(k.Contenders, contender) && !has(me.Contenders, contender) {
			return k, true
		}
	}
	return nil, false
}
