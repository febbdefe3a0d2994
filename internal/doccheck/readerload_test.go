package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// readerLoad is what a reader opens on a path: files, packages, lines of
// functions and type declarations (and of them, code: not blank, not a
// comment), and types.
type readerLoad struct {
	files, packages, lines, code, types int
}

// TestReaderLoad: each of docs/internals.md's lists of every function and
// type on a path (Mutex.Lock's, Semaphore.Acquire's, Election.Run's) names
// what exists (TestInternalsMap checks that too), and the figures stated
// under it are the list's, counted from the code: files, packages and
// types exactly, lines within 2%. The comparison table's shepherd row
// repeats Mutex.Lock's.
func TestReaderLoad(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "internals.md"))
	if err != nil {
		t.Fatal(err)
	}
	const heading = "### Every function and type on "
	text := string(doc)
	sections := strings.Split(text, "\n"+heading)[1:]
	if len(sections) < 3 {
		t.Fatalf("docs/internals.md has %d sections %q...: want Mutex.Lock's, Semaphore.Acquire's and Election.Run's", len(sections), heading)
	}
	stated := regexp.MustCompile(`That is (\d+) files in (\d+) packages, about ([\d,]+) lines \(about ([\d,]+) of them code: not blank, not a comment\), (\d+) types\.`)
	for _, section := range sections {
		title, _, _ := strings.Cut(section, "\n")
		if j := strings.Index(section, "\n## "); j >= 0 {
			section = section[:j]
		}
		got := countPath(t, section)
		m := stated.FindStringSubmatch(strings.Join(strings.Fields(section), " "))
		if m == nil {
			t.Errorf("docs/internals.md: no \"That is N files in N packages, about N lines (about N of them code: ...), N types.\" under %q", heading+title)
			continue
		}
		want := fmt.Sprintf("That is %d files in %d packages, about %s lines (about %s of them code: not blank, not a comment), %d types.",
			got.files, got.packages, tens(got.lines), tens(got.code), got.types)
		n := readerLoad{files: atoi(t, m[1]), packages: atoi(t, m[2]), lines: atoi(t, m[3]), code: atoi(t, m[4]), types: atoi(t, m[5])}
		if n.files != got.files || n.packages != got.packages || n.types != got.types ||
			!near(n.lines, got.lines) || !near(n.code, got.code) {
			t.Errorf("docs/internals.md, %s: states %q;\nthe list counts to %q", title, m[0], want)
		}
		if !strings.Contains(title, "Mutex.Lock") {
			continue
		}
		row := fmt.Sprintf("| shepherd, `Mutex.Lock` (fair) | %d | ~%s | %d | %d |", got.files, tens(got.lines), got.types, got.packages)
		if !strings.Contains(text, row) && !strings.Contains(text, strings.Replace(row, "~"+tens(got.lines), "~"+m[3], 1)) {
			t.Errorf("docs/internals.md: the comparison table's shepherd row does not start %q", row)
		}
	}
}

// countPath counts the table of file and names in section.
func countPath(t *testing.T, section string) readerLoad {
	t.Helper()
	var n readerLoad
	files, pkgs := map[string]bool{}, map[string]bool{}
	for _, m := range tableRow.FindAllStringSubmatch(section, -1) {
		cells := strings.Split(m[1], "|")
		if len(cells) != 2 || !goFile.MatchString(strings.TrimSpace(cells[0])) {
			continue
		}
		file := strings.TrimSpace(cells[0])
		if files[file] {
			t.Errorf("docs/internals.md: %s has two rows in the path's list", file)
		}
		files[file], pkgs[filepath.Dir(file)] = true, true
		for _, name := range strings.Split(cells[1], ",") {
			lines, code, isType := span(t, file, strings.TrimSpace(name))
			n.lines += lines
			n.code += code
			if isType {
				n.types++
			}
		}
	}
	n.files, n.packages = len(files), len(pkgs)
	if n.files == 0 {
		t.Fatal("docs/internals.md: the path's list names no file")
	}
	return n
}

// span is how many lines name's declaration in file takes (a function from
// its func keyword to its closing brace; a type its declaration), how many
// of them are code, and whether it is a type.
func span(t *testing.T, file, name string) (lines, code int, isType bool) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var from, to token.Pos
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if funcName(d) == name {
				from, to = d.Type.Func, d.End()
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.Name == name {
					from, to, isType = ts.Pos(), ts.End(), true
					if len(d.Specs) == 1 {
						from = d.Pos()
					}
				}
			}
		}
	}
	if !from.IsValid() {
		t.Errorf("docs/internals.md: %s declares no %s", file, name)
		return 0, 0, false
	}
	a, b := fset.Position(from).Line, fset.Position(to).Line
	all := strings.Split(string(src), "\n")
	for _, l := range all[a-1 : b] {
		if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "//") {
			code++
		}
	}
	return b - a + 1, code, isType
}

// funcName is d's name as the docs write it: Func or Type.Method.
func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil {
		return d.Name.Name
	}
	typ := d.Recv.List[0].Type
	if s, ok := typ.(*ast.StarExpr); ok {
		typ = s.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + d.Name.Name
	}
	return d.Name.Name // a receiver of another form: no row names it
}

// near reports whether a stated figure is within 2% of the counted one.
func near(stated, counted int) bool {
	d := stated - counted
	return d*50 <= counted && -d*50 <= counted
}

// tens is n rounded to tens, written with thousands separated by commas.
func tens(n int) string {
	n = (n + 5) / 10 * 10
	if n < 1000 {
		return strconv.Itoa(n)
	}
	return fmt.Sprintf("%d,%03d", n/1000, n%1000)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
