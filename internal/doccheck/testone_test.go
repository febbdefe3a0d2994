package doccheck

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestReadmeOneTest: the README's commands for running one test (`make
// test-one ...`, `go test ...` lines of its sh blocks) run as printed, from
// the repository's root, and pass.
func TestReadmeOneTest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test itself")
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	comment := regexp.MustCompile(`\s+#.*$`)
	var cmds []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in && (strings.HasPrefix(line, "make test-one ") || strings.HasPrefix(line, "go test ")):
			cmds = append(cmds, strings.TrimSpace(comment.ReplaceAllString(line, "")))
		}
	}
	if len(cmds) < 2 {
		t.Fatalf("README.md shows %d commands to run one test: want make test-one and go test", len(cmds))
	}
	for _, c := range cmds {
		t.Run(c, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "sh", "-c", c)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "GOFLAGS=")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", c, err, out)
			}
			if !strings.Contains(string(out), "--- PASS") && !strings.Contains(string(out), "ok ") {
				t.Fatalf("%s ran no test:\n%s", c, out)
			}
		})
	}
}
