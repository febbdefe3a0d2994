package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// citingDocs are the documents whose citations of files and tests must hold
// today (the CHANGELOG is history: it may name what has since moved).
func citingDocs(t *testing.T) []string {
	t.Helper()
	docs := []string{"README.md", "bench/README.md"}
	for _, glob := range []string{"docs/*.md", "examples/*/README.md", "contrib/*/README.md"} {
		m, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, rel)
		}
	}
	return docs
}

var (
	// A path in backquotes with a folder: `internal/line/pause_test.go`.
	quotedPath = regexp.MustCompile("`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\\.(?:go|md|sh|json|sql|ya?ml|awk))`")
	// A test file with a folder, quoted or not.
	barePath = regexp.MustCompile(`\b[A-Za-z0-9_-]+(?:/[A-Za-z0-9_.-]+)*/[A-Za-z0-9_.-]+_test\.go\b`)
	// A relative link target: [text](path).
	linkPath = regexp.MustCompile(`\]\(([^)#:\s]+)[)#]`)
	// A test's name.
	testName = regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*\b`)
)

// TestDocsCiteWhatExists: every file the README and the docs name (a path
// in backquotes, a test file, a relative link) exists, and every test they
// name (TestXxx) is a test function of the module: a citation does not
// outlive a move or a rename (the README cited recipe/pause_test.go long
// after the test moved to internal/line).
func TestDocsCiteWhatExists(t *testing.T) {
	tests := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "third_party" || name == "node_modules" || (strings.HasPrefix(name, ".") && p != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`).FindAllStringSubmatch(string(b), -1) {
			tests[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) < 100 {
		t.Fatalf("found only %d test functions: the walk is wrong", len(tests))
	}
	cited := 0
	for _, doc := range citingDocs(t) {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		seen := map[string]bool{}
		exists := func(base, p string) {
			if seen[filepath.Join(base, p)] {
				return
			}
			seen[filepath.Join(base, p)] = true
			cited++
			if _, err := os.Stat(filepath.Join(root, base, p)); err != nil {
				t.Errorf("%s names %s, which does not exist", doc, p)
			}
		}
		for _, m := range quotedPath.FindAllStringSubmatch(text, -1) {
			exists("", m[1])
		}
		for _, p := range barePath.FindAllString(text, -1) {
			exists("", p)
		}
		for _, m := range linkPath.FindAllStringSubmatch(text, -1) {
			exists(filepath.Dir(doc), m[1])
		}
		for _, name := range testName.FindAllString(text, -1) {
			if seen[name] {
				continue
			}
			seen[name] = true
			cited++
			if !tests[name] {
				t.Errorf("%s names %s, which is no test function of the module", doc, name)
			}
		}
	}
	t.Logf("%d citations checked", cited)
}
