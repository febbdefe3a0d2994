package layout

// The layouts as the docs show them (docs/layouts.md: Table, Matrix).

import (
	"fmt"
	"strings"
)

// Table is the layouts as a Markdown table (docs/layouts.md shows it).
func Table() string {
	var b strings.Builder
	b.WriteString("| kind | mode | data of the path | children | contender nodes | when idle |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, k := range Kinds {
		stamp := "-"
		if k.Stamp != "" {
			stamp = "`" + k.Stamp + "…`"
		}
		var nodes []string
		for _, n := range k.Nodes {
			e := ""
			if n.Ephemeral {
				e = ", ephemeral"
			}
			nodes = append(nodes, fmt.Sprintf("`%s` (%s%s)", n.Name, n.What, e))
		}
		var cs []string
		for _, c := range k.Contenders {
			cs = append(cs, "`"+c+"`")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", k.Name, k.Mode(), stamp, orDash(strings.Join(nodes, "; ")),
			orDash(strings.Join(cs, " ")), k.Idle)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Trace is what a path of the kind shows while held: its stamp, its stamping
// children, a contender of its first kind.
func (k *Recipe) Trace() Seen {
	s := Seen{Data: []byte(k.Stamp)}
	for _, n := range k.Nodes {
		if n.Stamps {
			s.Children = append(s.Children, Child{Name: n.Name, Ephemeral: n.Ephemeral})
		}
	}
	if len(k.Contenders) > 0 {
		s.Children = append(s.Children, Child{Name: "_c_guid-" + k.Contenders[0] + "0000000001", Contender: k.Contenders[0]})
	}
	if len(s.Data) == 0 && len(s.Children) == 0 {
		for _, n := range k.Legacy {
			s.Children = append(s.Children, Child{Name: n})
		}
	}
	return s
}

// Matrix is, as a Markdown table, what each kind (row) does on a path
// another kind (column) holds: refused, or shared.
func Matrix() string {
	label := func(k *Recipe) string {
		if k.Name == "mutex" || k.Name == "election" {
			return k.Mode() + " " + k.Name
		}
		return k.Name
	}
	var b strings.Builder
	b.WriteString("| on the path of → | ")
	for _, k := range Kinds {
		b.WriteString(label(k) + " | ")
	}
	b.WriteString("\n|---|")
	for range Kinds {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, second := range Kinds {
		b.WriteString("| " + label(second) + " | ")
		for _, first := range Kinds {
			cell := "refused"
			switch {
			case first == second:
				cell = "-"
			case Refuse(second, first.Trace()) == nil:
				cell = "shared"
			}
			b.WriteString(cell + " | ")
		}
		b.WriteString("\n")
	}
	return b.String()
}
