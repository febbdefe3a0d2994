package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tableRow matches a row of a markdown table: its cells.
var tableRow = regexp.MustCompile(`(?m)^\|(.*)\|\s*$`)

// goFile matches a cell naming a Go file of the repository.
var goFile = regexp.MustCompile(`^[a-z][a-z/]*[a-z]\.go$`)

// TestInternalsMap: every table row of docs/internals.md that names a Go
// file names one that exists, and every name in the cell after it (Func,
// Type, Var, Const or Type.Method) is declared in that file: the map of the
// core does not drift from the code.
func TestInternalsMap(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "internals.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, m := range tableRow.FindAllStringSubmatch(string(doc), -1) {
		cells := strings.Split(m[1], "|")
		for i, c := range cells {
			file := strings.TrimSpace(c)
			if !goFile.MatchString(file) || i+1 >= len(cells) {
				continue
			}
			rows++
			decl := declared(t, filepath.Join(root, file))
			for _, name := range strings.Split(cells[i+1], ",") {
				if name = strings.TrimSpace(name); name != "" && !decl[name] {
					t.Errorf("docs/internals.md: %s declares no %s", file, name)
				}
			}
		}
	}
	if rows < 30 {
		t.Fatalf("docs/internals.md: %d rows name a file; its tables are gone?", rows)
	}
}

// declared returns the names file declares: its top-level funcs, types,
// vars and consts, and its methods as Type.Method.
func declared(t *testing.T, file string) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatalf("docs/internals.md names %s: %v", file, err)
	}
	names := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			names[funcName(d)] = true
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names[s.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names[n.Name] = true
					}
				}
			}
		}
	}
	return names
}
