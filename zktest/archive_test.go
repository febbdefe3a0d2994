package zktest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClassArchive: with an empty cache, the first start makes the class
// archive (a server stopped with SIGTERM writes it), leaves no lock or
// temporary file, and starts its own server with it; the archive loads (a
// JVM that requires it, -Xshare:on, serves: one whose classpath does not
// match it refuses to start); and a later start maps it without making
// it again.
func TestClassArchive(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err := Classpath()
	require.NoError(t, err)
	f, err := archivePath(cp)
	require.NoError(t, err)
	require.NoFileExists(t, f)

	c, err := StartCluster(ctx, 1)
	require.NoError(t, err)
	defer c.Close()
	require.FileExists(t, f)
	require.Contains(t, c.nodes[0].cmd.Args, "-XX:SharedArchiveFile="+f)
	made, err := os.Stat(f)
	require.NoError(t, err)
	entries, err := os.ReadDir(filepath.Dir(f))
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the archive is left: %v", entries)

	required, err := StartCluster(ctx, 1, WithJVMFlags("-Xshare:on"))
	require.NoError(t, err, "a JVM that requires the archive starts")
	require.NoError(t, required.Close())
	again, err := os.Stat(f)
	require.NoError(t, err)
	require.Equal(t, made.ModTime(), again.ModTime(), "made once")
}

// TestArchivePath: the archive's name follows the classpath (and the java
// binary), so a server of another ZooKeeper never maps another's classes.
func TestArchivePath(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cp, err := Classpath()
	require.NoError(t, err)
	a, err := archivePath(cp)
	require.NoError(t, err)
	b, err := archivePath(cp)
	require.NoError(t, err)
	require.Equal(t, a, b)
	jar := filepath.Join(t.TempDir(), "extra.jar")
	require.NoError(t, os.WriteFile(jar, []byte("PK"), 0o644))
	other, err := archivePath(cp + string(os.PathListSeparator) + jar)
	require.NoError(t, err)
	require.NotEqual(t, a, other)
	require.NoError(t, os.WriteFile(jar, []byte("PK.."), 0o644)) // the jar replaced
	replaced, err := archivePath(cp + string(os.PathListSeparator) + jar)
	require.NoError(t, err)
	require.NotEqual(t, other, replaced)
	_, err = archivePath(cp + string(os.PathListSeparator) + filepath.Join(t.TempDir(), "missing.jar"))
	require.Error(t, err, "no archive for a classpath that names a missing file")
}

// TestLockFile: one holder at a time; a lock older than two minutes (its
// process died making the archive) is taken over.
func TestLockFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.lock")
	unlock, ok := lockFile(p)
	require.True(t, ok)
	_, ok = lockFile(p)
	require.False(t, ok, "held")
	unlock()
	require.NoFileExists(t, p)

	require.NoError(t, os.WriteFile(p, nil, 0o644))
	old := time.Now().Add(-3 * time.Minute)
	require.NoError(t, os.Chtimes(p, old, old))
	unlock, ok = lockFile(p)
	require.True(t, ok, "a stale lock is taken over")
	unlock()
}

// BenchmarkServerStart: the CPU of a standalone server's whole life when
// nothing uses it (started until it serves, stopped with SIGTERM), with
// the class archive and without: cpu-ms/start. Run it with make
// bench-start.
func BenchmarkServerStart(b *testing.B) {
	b.Setenv("XDG_CACHE_HOME", b.TempDir())
	for _, bc := range []struct {
		name string
		opt  Option
	}{
		{"archive", func(*config) {}},
		{"none", func(c *config) { c.noArchive = true }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			if c, err := StartCluster(ctx, 1, bc.opt); err == nil { // the archive made, outside the count
				c.Close()
			}
			var cpu time.Duration
			for range b.N {
				c, err := StartCluster(ctx, 1, bc.opt)
				require.NoError(b, err)
				require.Equal(b, bc.name == "archive", slices.ContainsFunc(c.nodes[0].cmd.Args, func(a string) bool {
					return strings.HasPrefix(a, "-XX:SharedArchiveFile=")
				}))
				require.NoError(b, c.Stop(0)) // SIGTERM, and waits until it is gone
				st := c.nodes[0].cmd.ProcessState
				cpu += st.UserTime() + st.SystemTime()
				require.NoError(b, c.Close())
			}
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/start")
		})
	}
}
