// Command consumercheck serves shepherd's working tree as a published module
// would be: it writes a module zip of the tree at a pseudo-version, with its
// .info and .mod files, into a directory laid out as a module proxy
// (GOPROXY=file://DIR). scripts/consumercheck.sh then builds a fresh module
// that depends on shepherd through that proxy, the way an importer does.
//
//	go run . -root ../.. -out DIR
//
// It prints "MODULE VERSION" on stdout. It fails if go.mod has a replace or
// exclude directive (an importer ignores them, and `go install …@version`
// refuses the module), or if the tree has no LICENSE at its root.
//
// The zip holds the files git would commit (tracked and untracked ones, less
// those .gitignore excludes), uncommitted changes included; nested modules
// (directories with a go.mod of their own, like this one) are left out, as
// the go command leaves them out of every module zip. The pseudo-version is
// built from HEAD (its commit time and hash, after the latest v0/v1 tag if
// any).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

func main() {
	root := flag.String("root", "../..", "the repository's root directory (a git work tree)")
	out := flag.String("out", "", "directory to write the proxy tree into (required)")
	dir := flag.String("dir", "", "the module's directory in the repository, if not its root (a nested module: contrib/gocron)")
	rev := flag.String("rev", "", "serve the module as it is at this commit (its pseudo-version), not the work tree")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: consumercheck -root DIR [-dir SUBDIR] [-rev COMMIT] -out DIR")
		os.Exit(2)
	}
	var mod, version string
	var err error
	if *rev != "" {
		mod, version, err = runRev(*root, *dir, *rev, *out)
	} else {
		mod, version, err = run(*root, *dir, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "consumercheck:", err)
		os.Exit(1)
	}
	fmt.Println(mod, version)
}

func run(root, sub, out string) (modPath, version string, err error) {
	root, err = filepath.Abs(root)
	if err != nil {
		return "", "", err
	}
	gomod, err := os.ReadFile(filepath.Join(root, sub, "go.mod"))
	if err != nil {
		return "", "", err
	}
	mf, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		return "", "", err
	}
	if err := importable(mf); err != nil {
		return "", "", err
	}
	modPath = mf.Module.Mod.Path

	version, when, err := pseudoVersion(root, "HEAD", sub)
	if err != nil {
		return "", "", err
	}
	if dirty, err := git(root, "status", "--porcelain"); err == nil && len(dirty) > 0 {
		fmt.Fprintf(os.Stderr, "consumercheck: the tree has uncommitted changes; they are in the zip of %s\n", version)
	}
	files, err := treeFiles(root, sub)
	if err != nil {
		return "", "", err
	}
	return modPath, version, publish(out, modPath, version, when, gomod, files)
}

// publish writes the module's zip, .mod and .info into the proxy tree out,
// and adds the version to its list.
func publish(out, modPath, version string, when time.Time, gomod []byte, files []modzip.File) error {
	checked, err := modzip.CheckFiles(files)
	if err != nil {
		return fmt.Errorf("files that cannot be in a module zip: %w", err)
	}
	hasLicense := false
	for _, f := range checked.Valid {
		hasLicense = hasLicense || f == "LICENSE"
	}
	if !hasLicense {
		return errors.New("no LICENSE at the module's root: the Go package site hides the docs of an unlicensed module, and no one may use it")
	}
	m := module.Version{Path: modPath, Version: version}
	esc, err := module.EscapePath(modPath)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var zip bytes.Buffer
	if err := modzip.Create(&zip, m, files); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, when})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		version + ".zip":  zip.Bytes(),
		version + ".mod":  gomod,
		version + ".info": info,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	list, err := os.OpenFile(filepath.Join(dir, "list"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(list, version); err != nil {
		list.Close()
		return err
	}
	if err := list.Close(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "consumercheck: %s@%s: %d files (%d left out: nested modules), zip %d bytes\n",
		modPath, version, len(checked.Valid), len(checked.Omitted), zip.Len())
	return nil
}

// runRev serves the module as it is at commit rev: the files of
// git archive, at rev's pseudo-version (the version another module of the
// repository requires, such as contrib/gocron's requirement of shepherd).
func runRev(root, sub, rev, out string) (modPath, version string, err error) {
	root, err = filepath.Abs(root)
	if err != nil {
		return "", "", err
	}
	tmp, err := os.MkdirTemp("", "consumercheck-rev-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	tarball := filepath.Join(tmp, "tree.tar")
	if _, err := git(root, "archive", "--format=tar", "-o", tarball, rev); err != nil {
		return "", "", err
	}
	tree := filepath.Join(tmp, "tree")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		return "", "", err
	}
	if out, err := exec.Command("tar", "-x", "-f", tarball, "-C", tree).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("tar: %v: %s", err, out)
	}
	modDir := filepath.Join(tree, sub)
	gomod, err := os.ReadFile(filepath.Join(modDir, "go.mod"))
	if err != nil {
		return "", "", err
	}
	mf, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		return "", "", err
	}
	if err := importable(mf); err != nil {
		return "", "", err
	}
	modPath = mf.Module.Mod.Path
	version, when, err := pseudoVersion(root, rev, sub)
	if err != nil {
		return "", "", err
	}
	files, err := dirFiles(modDir)
	if err != nil {
		return "", "", err
	}
	return modPath, version, publish(out, modPath, version, when, gomod, files)
}

// dirFiles lists every file under dir (a git archive: nothing ignored).
func dirFiles(dir string) ([]modzip.File, error) {
	var files []modzip.File
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files = append(files, file{path: filepath.ToSlash(rel), abs: p, info: fi})
		return nil
	})
	return files, err
}

// importable reports why a module with this go.mod cannot be depended on as
// it builds here: replace and exclude directives apply only in the main
// module, so an importer builds without them, and `go install pkg@version`
// refuses a module that has them.
func importable(mf *modfile.File) error {
	var lines []string
	for _, r := range mf.Replace {
		lines = append(lines, fmt.Sprintf("go.mod:%d: replace %s => %s", r.Syntax.Start.Line, r.Old, r.New))
	}
	for _, e := range mf.Exclude {
		lines = append(lines, fmt.Sprintf("go.mod:%d: exclude %s", e.Syntax.Start.Line, e.Mod))
	}
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("go.mod has replace or exclude directives:\n\t%s\n"+
		"an importer ignores them (it builds against what they replace or exclude), "+
		"and `go install …@version` refuses the module: remove them",
		strings.Join(lines, "\n\t"))
}

// pseudoVersion is the pseudo-version of rev, after the latest v0 or v1
// tag reachable from it, if any (for a nested module in sub, a tag
// "sub/vX.Y.Z").
func pseudoVersion(root, rev, sub string) (string, time.Time, error) {
	out, err := git(root, "show", "-s", "--format=%H %ct", rev)
	if err != nil {
		return "", time.Time{}, err
	}
	hash, ts, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if !ok || len(hash) < 12 || err != nil {
		return "", time.Time{}, fmt.Errorf("cannot read HEAD's hash and time from %q", out)
	}
	when := time.Unix(sec, 0).UTC()
	older := ""
	prefix := ""
	if sub != "" {
		prefix = strings.TrimSuffix(filepath.ToSlash(sub), "/") + "/"
	}
	if tag, err := git(root, "describe", "--tags", "--abbrev=0", "--match", prefix+"v[0-9]*", rev); err == nil {
		t := strings.TrimPrefix(strings.TrimSpace(string(tag)), prefix)
		if semver.IsValid(t) && (semver.Major(t) == "v0" || semver.Major(t) == "v1") {
			older = t
		}
	}
	return module.PseudoVersion("", older, when, hash[:12]), when, nil
}

// treeFiles lists the files git would commit in sub (the whole tree if
// ""): tracked and untracked ones, less ignored ones and tracked ones
// deleted from the work tree; their paths are relative to sub.
func treeFiles(root, sub string) ([]modzip.File, error) {
	args := []string{"ls-files", "-z", "--cached", "--others", "--exclude-standard"}
	if sub != "" {
		args = append(args, "--", sub)
	}
	out, err := git(root, args...)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var files []modzip.File
	for _, p := range strings.Split(string(out), "\x00") {
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		abs := filepath.Join(root, filepath.FromSlash(p))
		if sub != "" {
			p = strings.TrimPrefix(p, strings.TrimSuffix(filepath.ToSlash(sub), "/")+"/")
		}
		fi, err := os.Lstat(abs)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted, not yet committed
		}
		if err != nil {
			return nil, err
		}
		files = append(files, file{path: p, abs: abs, info: fi})
	}
	return files, nil
}

type file struct {
	path, abs string
	info      os.FileInfo
}

func (f file) Path() string                 { return f.path }
func (f file) Lstat() (os.FileInfo, error)  { return f.info, nil }
func (f file) Open() (io.ReadCloser, error) { return os.Open(f.abs) }

func git(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
