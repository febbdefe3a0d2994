package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const root = "../.."

// goBlock matches a fenced Go block of a markdown file.
var goBlock = regexp.MustCompile("(?ms)^```go\n(.*?)^```$")

// TestReadmeCodeIsExampleCode: each Go block of README.md, line by line with
// leading and trailing blanks ignored, is a contiguous run of lines of one
// example_test.go. A line "// ..." in a block separates excerpts.
func TestReadmeCodeIsExampleCode(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	examples := exampleFiles(t)
	blocks := goBlock.FindAllSubmatchIndex(readme, -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go block: the tour is gone?")
	}
	for _, b := range blocks {
		line := 1 + strings.Count(string(readme[:b[0]]), "\n")
		for _, part := range strings.Split(string(readme[b[2]:b[3]]), "// ...\n") {
			want := lines(part)
			if len(want) == 0 {
				continue
			}
			if !foundIn(want, examples) {
				t.Errorf("README.md:%d: this code is not a verbatim excerpt of any example_test.go "+
					"(copy it from a runnable example, or change the example first):\n%s", line, part)
			}
		}
	}
}

// exampleFiles reads every example_test.go of the module (nested modules
// left out), as trimmed lines.
func exampleFiles(t *testing.T) map[string][]string {
	t.Helper()
	files := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (d.Name() == ".git" || d.Name() == "testdata" || exists(filepath.Join(p, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == "example_test.go" || strings.HasPrefix(d.Name(), "example_") && strings.HasSuffix(d.Name(), "_test.go") {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files[p] = lines(string(data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no example_test.go found")
	}
	return files
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// lines splits s into lines trimmed of blanks, without leading and trailing
// empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		out = append(out, strings.TrimSpace(l))
	}
	for len(out) > 0 && out[0] == "" {
		out = out[1:]
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

func foundIn(want []string, files map[string][]string) bool {
	for _, have := range files {
	next:
		for i := 0; i+len(want) <= len(have); i++ {
			for j, w := range want {
				if have[i+j] != w {
					continue next
				}
			}
			return true
		}
	}
	return false
}
