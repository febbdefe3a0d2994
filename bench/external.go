package bench

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The drivers of the peers in other languages, shipped inside the runner so
// it works from any directory.
//
//go:embed peers/curator/Bench.java peers/kazoo/bench.py
var drivers embed.FS

// ErrUnavailable wraps the reason a peer cannot run on this machine (a missing
// package); the runner skips such a peer and says why.
var ErrUnavailable = errors.New("peer unavailable")

// Debian's jars (packages libcurator-recipes-java and libslf4j-java, pulled in
// by it). Each jar's manifest Class-Path names its own dependencies
// (ZooKeeper, Guava, ...), so these are all javac and java need.
var curatorJars = []string{
	"/usr/share/java/curator-recipes.jar",
	"/usr/share/java/curator-framework.jar",
	"/usr/share/java/curator-client.jar",
}

// CuratorClasspath returns the classpath for the Curator driver:
// $SHEPHERD_BENCH_CURATOR_CLASSPATH if set, else Debian's jars plus an slf4j
// binding that keeps Curator and ZooKeeper quiet (slf4j-nop; else
// slf4j-simple, which the java command line sets to warn).
func CuratorClasspath() (string, error) {
	if cp := os.Getenv("SHEPHERD_BENCH_CURATOR_CLASSPATH"); cp != "" {
		return cp, nil
	}
	for _, j := range curatorJars {
		if _, err := os.Stat(j); err != nil {
			return "", fmt.Errorf("%w: curator: %s missing (apt-get install libcurator-recipes-java, or make setup-bench)", ErrUnavailable, j)
		}
	}
	cp := strings.Join(curatorJars, ":")
	for _, b := range []string{"/usr/share/java/slf4j-nop.jar", "/usr/share/java/slf4j-simple.jar"} {
		if _, err := os.Stat(b); err == nil {
			cp += ":" + b
			break
		}
	}
	return cp, nil
}

// CacheDir is where compiled drivers live: $SHEPHERD_BENCH_CACHE, else
// shepherd-bench under the user's cache directory (else the temp directory).
func CacheDir() string {
	if d := os.Getenv("SHEPHERD_BENCH_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "shepherd-bench")
	}
	return filepath.Join(os.TempDir(), "shepherd-bench")
}

// materialize writes an embedded driver file into a cache directory named by
// its content hash and runs build there (once: the directory appears only when
// build succeeded), returning the directory.
func materialize(ctx context.Context, name, file string, build func(ctx context.Context, dir string) error) (string, error) {
	src, err := drivers.ReadFile(file)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(src)
	final := filepath.Join(CacheDir(), name+"-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	if err := os.MkdirAll(CacheDir(), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(CacheDir(), name+"-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, filepath.Base(file)), src, 0o644); err != nil {
		return "", err
	}
	if build != nil {
		if err := build(ctx, tmp); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(final); serr == nil {
			return final, nil // built concurrently by another runner or test
		}
		return "", err
	}
	return final, nil
}

// NewCurator compiles the Curator driver (bench/peers/curator/Bench.java)
// with javac against Debian's jars, into the cache directory, and returns the
// peer. The error wraps ErrUnavailable when Java or Curator is missing.
func NewCurator(ctx context.Context, logDir string) (*Subprocess, error) {
	cp, err := CuratorClasspath()
	if err != nil {
		return nil, err
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		return nil, fmt.Errorf("%w: curator: no javac (apt-get install default-jdk-headless)", ErrUnavailable)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("%w: curator: no java", ErrUnavailable)
	}
	dir, err := materialize(ctx, "curator", "peers/curator/Bench.java", func(ctx context.Context, dir string) error {
		cmd := exec.CommandContext(ctx, javac, "-nowarn", "-encoding", "UTF-8", "-cp", cp, "-d", dir,
			filepath.Join(dir, "Bench.java"))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("bench: compiling the Curator driver: %w\n%s", err, out)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	argv := []string{java, "-Xmx512m", "-XX:+ExitOnOutOfMemoryError",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", dir + ":" + cp, "Bench", "--serve"}
	return NewSubprocess("curator", argv, dir, filepath.Join(logDir, "curator.log"), curatorWorkloads...), nil
}

// KazooPython returns a Python interpreter that can import kazoo:
// $SHEPHERD_BENCH_PYTHON if set, else Debian's /usr/bin/python3 (where
// python3-kazoo installs it; a pyenv python3 earlier on PATH cannot see it),
// else python3 on PATH.
func KazooPython(ctx context.Context) (string, error) {
	cands := []string{"/usr/bin/python3", "python3"}
	if p := os.Getenv("SHEPHERD_BENCH_PYTHON"); p != "" {
		cands = []string{p}
	}
	for _, c := range cands {
		p, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		if exec.CommandContext(ctx, p, "-c", "import kazoo").Run() == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: kazoo: no python3 can import kazoo (apt-get install python3-kazoo, or make setup-bench)", ErrUnavailable)
}

// NewKazoo returns the Kazoo peer (bench/peers/kazoo/bench.py). The error
// wraps ErrUnavailable when no Python can import kazoo.
func NewKazoo(ctx context.Context, logDir string) (*Subprocess, error) {
	py, err := KazooPython(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := materialize(ctx, "kazoo", "peers/kazoo/bench.py", nil)
	if err != nil {
		return nil, err
	}
	argv := []string{py, "-u", filepath.Join(dir, "bench.py"), "--serve"}
	return NewSubprocess("kazoo", argv, dir, filepath.Join(logDir, "kazoo.log"), kazooWorkloads...), nil
}

// The workloads the Curator and Kazoo drivers run. Curator does not run
// W7-1000: closing a
// thousand ZooKeeper Java clients in one JVM takes over 100 s, because
// ClientCnxnSocketNIO.cleanup sleeps 100 ms while holding a lock shared by
// every client of the JVM (the ZooKeeper$States monitor; seen with jstack).
var (
	curatorWorkloads = []string{W1, W2, W3, W4, W5, W6, W7s, W8, W9}
	kazooWorkloads   = []string{W1, W2, W3, W4, W5, W6, W7s, W7l, W8, W9}
)
