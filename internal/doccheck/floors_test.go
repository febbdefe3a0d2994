package doccheck

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/shepherdzk/shepherd/"

// floors places every package of the module on its floor, as
// docs/internals.md ("Where things live: the floors") tells them: a
// package imports only packages of its floor or below. Floor 6 is what
// sits beside the library (tests' helpers, benchmarks, the repository's
// checks, examples): it may import anything, and nothing of floors 1-5 may
// import it.
var floors = map[string]int{
	"internal/wire/ctxcall": 1,
	"internal/wire/wiretap": 1,
	"internal/wire/zkpath":  1,
	"internal/wire/zkwire":  1,
	"observe":               1,

	"session": 2,
	"zktest":  2,

	"fence":              3,
	"hold":               3,
	"internal/line":      3,
	"internal/race":      3,
	"internal/aclerr":    3,
	"internal/construct": 3,
	"internal/epcall":    3,
	"internal/errs":      3,
	"internal/layout":    3,
	"internal/zkdelete":  3,
	"recipe":             3,

	"mutex":                      4,
	"semaphore":                  4,
	"election":                   4,
	"election/internal/handover": 4,
	"schedule":                   4,
	"fence/sqlfence":             4,
	"fence/httpfence":            4,
	"observe/prometheus":         4,

	"admin":             5,
	"cmd/shepherd":      5,
	"cmd/shepherd-demo": 5,
}

// beside are the folders of floor 6 (every package under them).
var beside = []string{"bench", "chaos", "interop", "examples", "internal/testutil",
	"internal/pgtest", "internal/holdtest", "internal/outagetest", "internal/doccheck", "internal/consumercheck",
	"internal/dashrules"}

// TestFloors: every package of the module has a floor, and imports nothing
// of a floor above its own (from its non-test files). A new package must be
// placed here (and in docs/internals.md).
func TestFloors(t *testing.T) {
	imports := moduleImports(t)
	if len(imports) < len(floors) {
		t.Fatalf("found %d packages, fewer than the %d placed: is the walk broken?", len(imports), len(floors))
	}
	for pkg, deps := range imports {
		f, ok := floorOf(pkg)
		if !ok {
			t.Errorf("package %s has no floor: place it in floors (and docs/internals.md)", pkg)
			continue
		}
		for _, d := range deps {
			g, ok := floorOf(d)
			if !ok {
				continue // reported as a package of its own
			}
			if g > f {
				t.Errorf("%s (floor %d) imports %s (floor %d): an import up", pkg, f, d, g)
			}
		}
	}
	for pkg := range floors {
		if _, ok := imports[pkg]; !ok {
			t.Errorf("floors places %s, which is not a package of the module (moved?)", pkg)
		}
	}
}

func floorOf(pkg string) (int, bool) {
	if f, ok := floors[pkg]; ok {
		return f, true
	}
	for _, b := range beside {
		if pkg == b || strings.HasPrefix(pkg, b+"/") {
			return 6, true
		}
	}
	return 0, false
}

// moduleImports reads the module's packages (folders with non-test Go
// files, outside other modules and testdata) and the module's packages
// each imports.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "third_party") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		deps := out[pkg]
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, module) {
				deps = append(deps, strings.TrimPrefix(p, module))
			}
		}
		out[pkg] = deps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
