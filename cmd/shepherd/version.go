package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
)

// pseudoRev matches the revision at the end of a module pseudo-version
// (v0.0.0-20261127114503-abcdef123456).
var pseudoRev = regexp.MustCompile(`[.-](\d{14})-([0-9a-f]{12})(\+incompatible)?$`)

// revisionOf is the revision line of a binary built without VCS stamping:
// taken from a pseudo-version, none for a release (its tag names it), or
// said to be unknown.
func revisionOf(version string) string {
	if m := pseudoRev.FindStringSubmatch(version); m != nil {
		return "revision " + m[2] + " (from the module's pseudo-version)"
	}
	if strings.HasPrefix(version, "v") && !strings.Contains(version, "devel") {
		return ""
	}
	return "revision unknown (built without VCS stamping: -buildvcs=false, or not from a git checkout)"
}

// errVersion: -version or --version was given before the subcommand.
var errVersion = errors.New("version requested")

func (c *cli) cmdVersion(_ context.Context, args []string) error {
	s := newSub("version", "shepherd version", `
Print shepherd's version: the module version (a binary built by 'go install
github.com/shepherdzk/shepherd/cmd/shepherd@vX' says vX; one built from a
checkout says "(devel)" or a pseudo-version), the VCS revision it was built
from when the build recorded one ("modified": uncommitted changes), and the
Go version. 'shepherd --version' and 'shepherd -version' print the same.`,
		"shepherd version")
	pos, argv, err := s.parse(args, c.stdout)
	if err != nil {
		return err
	}
	if len(pos)+len(argv) > 0 {
		return usagef("version: unexpected arguments %q", strings.Join(append(pos, argv...), " "))
	}
	printVersion(c.stdout)
	return nil
}

// printVersion prints what runtime/debug.ReadBuildInfo knows of this
// binary: "shepherd VERSION", the revision line if any, the Go version.
func printVersion(w io.Writer) {
	version, rev := "(unknown)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		var revision, when string
		modified := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if revision != "" {
			rev = "revision " + revision
			if when != "" {
				rev += " (" + when + ")"
			}
			if modified {
				rev += ", modified"
			}
		}
	}
	if rev == "" {
		rev = revisionOf(version)
	}
	fmt.Fprintf(w, "shepherd %s\n", version)
	if rev != "" {
		fmt.Fprintln(w, rev)
	}
	fmt.Fprintf(w, "%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
