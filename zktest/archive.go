package zktest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// A class-data archive (CDS; a dynamic archive, Java 13 and later) of a
// ZooKeeper server's classes, shared by every server zktest starts on the
// machine with the same java and classpath: a JVM then maps the classes
// instead of loading and verifying them. An unused server's whole life
// (started until it serves, stopped with SIGTERM) took 717-731 CPU-ms
// with it and 956-970 without, and 1.13-1.14 s to serve against 1.44-1.50
// (BenchmarkServerStart, Java 17, ZooKeeper 3.8, a 2-core machine). In
// zktest's own tests (40 servers, most killed) the servers' CPU went from
// 30.7 to 26.0 s and the package's time from 59.5 to 53.9 s. make test
// starts about 240 servers.
//
// The first start on a machine that finds no archive makes it, once: a
// standalone server with -XX:ArchiveClassesAtExit, stopped with SIGTERM
// once it serves (the JVM writes the archive as it exits), then the file
// renamed into place. Another process starting a server meanwhile starts
// it without. Everything here is best effort: whatever fails, servers
// start as they would without an archive (and the JVM itself ignores an
// archive it cannot use, -Xshare:auto).

// archiveFlags returns the JVM flags that map the archive for cfg's
// classpath, making it first if there is none; nil if there is none to use.
func archiveFlags(ctx context.Context, cfg config) []string {
	f, err := archivePath(cfg.classpath)
	if err != nil {
		return nil
	}
	use := []string{"-XX:SharedArchiveFile=" + f}
	if st, err := os.Stat(f); err == nil && st.Size() > 0 {
		return use
	}
	if fileExists(f + ".failed") { // this java cannot make one: not tried again
		return nil
	}
	unlock, ok := lockFile(f + ".lock")
	if !ok {
		return nil // another process is making it
	}
	defer unlock()
	if err := makeArchive(ctx, cfg, f); err != nil {
		return nil
	}
	return use
}

// archivePath is where the archive for classpath is kept: in the user's
// cache directory, named by a digest of the java binary and of each
// classpath entry (path, size, modification time), so that an upgrade of
// either uses a new one.
func archivePath(classpath string) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return "", err
	}
	if java, err = filepath.EvalSymlinks(java); err != nil {
		return "", err
	}
	h := sha256.New()
	for _, p := range append([]string{java}, strings.Split(classpath, string(os.PathListSeparator))...) {
		st, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00", p, st.Size(), st.ModTime().UnixNano())
	}
	dir = filepath.Join(dir, "shepherd-zktest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Join(dir, "zookeeper-"+hex.EncodeToString(h.Sum(nil))[:16]+".jsa"), nil
}

// lockFile creates p exclusively; a lock older than two minutes was left
// by a process that died making the archive, and is taken over.
func lockFile(p string) (unlock func(), ok bool) {
	for range 2 {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
			return func() { os.Remove(p) }, true
		}
		st, serr := os.Stat(p)
		if !errors.Is(err, os.ErrExist) || serr != nil || time.Since(st.ModTime()) < 2*time.Minute {
			return nil, false
		}
		os.Remove(p)
	}
	return nil, false
}

// makeArchive makes the archive f with a standalone server of cfg's
// classpath. A JVM that exits by itself and writes none (one that does
// not know the flag), or writes one that does not load, leaves f.failed,
// so that it is not tried again.
func makeArchive(ctx context.Context, cfg config, f string) error {
	tmp := fmt.Sprintf("%s.%d.tmp", f, os.Getpid())
	defer os.Remove(tmp)
	dc := config{tick: cfg.tick, heapMB: cfg.heapMB, classpath: cfg.classpath, fastJIT: cfg.fastJIT,
		startWait: 30 * time.Second, maxSess: cfg.maxSess, containerCheck: cfg.containerCheck,
		jvmFlags: []string{"-XX:ArchiveClassesAtExit=" + tmp}, noArchive: true}
	c, err := startCluster(ctx, 1, dc)
	if err != nil {
		if errors.Is(err, errExitedEarly) && !errors.Is(err, errPortTaken) {
			os.WriteFile(f+".failed", []byte(err.Error()), 0o644)
		}
		return err
	}
	defer c.Close()
	c.mu.Lock()
	n := c.nodes[0]
	n.signal(syscall.SIGTERM, 20*time.Second) // the archive is written as the JVM exits
	c.mu.Unlock()
	ws, ok := n.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Exited() { // killed: what was written may be cut short
		return fmt.Errorf("zktest: the archive's server did not exit by itself: %v", n.cmd.ProcessState)
	}
	if st, err := os.Stat(tmp); err != nil || st.Size() == 0 {
		os.WriteFile(f+".failed", []byte(fmt.Sprintf("no archive written (%v)", n.cmd.ProcessState)), 0o644)
		return errors.New("zktest: no archive written")
	}
	// A JVM given a damaged archive may crash instead of ignoring it: the
	// archive is used once, required (-Xshare:on), before it is put
	// where every server start finds it.
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	check := exec.CommandContext(vctx, "java", "-Xshare:on", "-XX:SharedArchiveFile="+tmp, "-cp", cfg.classpath,
		"org.apache.zookeeper.Version")
	if out, err := check.CombinedOutput(); err != nil {
		if vctx.Err() == nil {
			os.WriteFile(f+".failed", []byte(fmt.Sprintf("the archive did not load: %v\n%s", err, out)), 0o644)
		}
		return fmt.Errorf("zktest: the archive did not load: %w", err)
	}
	return os.Rename(tmp, f)
}
