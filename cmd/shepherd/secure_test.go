package main_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/admin"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// writeFile writes data to name in dir with mode perm and returns its path.
func writeFile(t *testing.T, dir, name string, data []byte, perm os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, data, perm))
	require.NoError(t, os.Chmod(p, perm)) // past the umask
	return p
}

// tlsFiles are PEM files for the CLI's TLS flags.
type tlsFiles struct{ ca, cert, key string }

// env is the SHEPHERD_* variables naming f, for a cluster at addr.
func (f tlsFiles) env(addr string) []string {
	return []string{"SHEPHERD_ZK=" + addr, "SHEPHERD_TLS_CA=" + f.ca, "SHEPHERD_TLS_CERT=" + f.cert, "SHEPHERD_TLS_KEY=" + f.key}
}

// writeTLSFiles writes ca's certificate and a client certificate for cn
// issued by ca, with its key, as PEM files under a new directory.
func writeTLSFiles(t *testing.T, ca *zktest.CA, cn string) tlsFiles {
	t.Helper()
	dir := t.TempDir()
	cert, err := ca.ClientCert(cn)
	require.NoError(t, err)
	return tlsFiles{
		ca:   writeFile(t, dir, "ca.pem", ca.CertPEM(), 0o644),
		cert: writeFile(t, dir, "client.pem", certPEM(cert), 0o644),
		key:  writeFile(t, dir, "client-key.pem", keyPEM(t, cert), 0o600),
	}
}

func certPEM(c tls.Certificate) []byte {
	var b []byte
	for _, der := range c.Certificate {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	return b
}

func keyPEM(t *testing.T, c tls.Certificate) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// openParent creates path's parent, open to all, on the package's cluster:
// under an -acl preset shepherd creates PATH's missing parents with that
// ACL, which would lock the other tests out of the shared /cli-test.
func openParent(t *testing.T, path string) {
	t.Helper()
	conn, _, err := gozk.Connect(zk.Servers(), 5*time.Second, gozk.WithLogInfo(false))
	require.NoError(t, err)
	defer conn.Close()
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := 1; i < len(parts); i++ {
		_, err := conn.Create("/"+strings.Join(parts[:i], "/"), nil, 0, gozk.WorldACL(gozk.PermAll))
		if err != nil && !errors.Is(err, gozk.ErrNodeExists) {
			require.NoError(t, err)
		}
	}
}

// TestCLITLS: lock, semaphore and elect over mutual TLS to a TLS-only
// ZooKeeper; each misconfiguration gives its own error and exit status.
func TestCLITLS(t *testing.T) {
	t.Parallel()
	c := zktest.Start(t, 1, zktest.WithTLS(zktest.TLSConfig{}))
	addr := c.Addr(0)
	good := writeTLSFiles(t, c.CA(), "cli-test")
	other, err := zktest.NewCA("another CA")
	require.NoError(t, err)
	wrongCA := writeTLSFiles(t, other, "cli-test")

	t.Run("recipes over mutual TLS", func(t *testing.T) {
		t.Parallel()
		env := good.env(addr)
		r := shepherd(t, env, "lock", uniquePath(t), "--", "sh", "-c", `test -n "$SHEPHERD_TOKEN"`)
		require.Equal(t, 0, r.code, r.stderr)
		r = shepherd(t, env, "semaphore", "-n", "2", uniquePath(t), "--", "sh", "-c", `test -n "$SHEPHERD_TOKEN"`)
		require.Equal(t, 0, r.code, r.stderr)
		r = shepherd(t, env, "elect", "-once", "-id", "e", uniquePath(t), "--", "sh", "-c", `test -n "$SHEPHERD_TERM"`)
		require.Equal(t, 0, r.code, r.stderr)
		// The flags instead of the variables, status and ls included.
		path := uniquePath(t)
		flags := []string{"-zk", addr, "-tls-ca", good.ca, "-tls-cert", good.cert, "-tls-key", good.key}
		holder, _ := start(t, []string{"SHEPHERD_ZK=127.0.0.1:1"}, append(append([]string{"lock", "-id", "tls-holder"}, flags...), path, "--", "sleep", "30")...)
		require.Eventually(t, func() bool {
			r := shepherd(t, env, "status", path)
			return r.code == 0 && strings.Contains(r.stdout, "tls-holder")
		}, 20*time.Second, 50*time.Millisecond)
		r = shepherd(t, []string{"SHEPHERD_ZK=127.0.0.1:1"}, append(append([]string{"ls"}, flags...), "/")...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, path)
		require.NoError(t, holder.Process.Signal(syscall.SIGTERM))
		_ = holder.Wait()
	})
	t.Run("client certificate as the principal of -acl creator", func(t *testing.T) {
		t.Parallel()
		path := testutil.TopPath(t, "cli-x509") // no parent to create with this ACL
		start(t, good.env(addr), "lock", "-acl", "creator", "-id", "x509", path, "--", "sleep", "30")
		require.Eventually(t, func() bool {
			r := shepherd(t, good.env(addr), "status", path)
			return r.code == 0 && strings.Contains(r.stdout, "x509")
		}, 20*time.Second, 50*time.Millisecond)
		sess := testutil.Open(t, c.Servers(), session.WithTLS(c.ClientTLS()))
		ep, err := sess.Wait(testutil.Ctx(t, 10*time.Second))
		require.NoError(t, err)
		acl, _, err := ep.Conn().GetACL(path)
		require.NoError(t, err)
		require.Contains(t, acl, gozk.ACL{Perms: gozk.PermAll, Scheme: "x509", ID: "CN=cli-test"}, "%v", acl)
		require.Contains(t, acl, gozk.ACL{Perms: gozk.PermRead, Scheme: "world", ID: "anyone"}, "%v", acl)
	})
	t.Run("plaintext client, TLS port", func(t *testing.T) {
		t.Parallel()
		// The TLS server's answer to plaintext (an alert, or it closes)
		// names the cause; an attempt it leaves unanswered for the 1 s
		// connect timeout says only "no answer within 1s". Beside six busy
		// loops both attempts of a 2 s wait went unanswered: 6 s leaves
		// room for one answered attempt (the wait is the whole 6 s either
		// way: no early exit for this error).
		r := shepherd(t, []string{"SHEPHERD_ZK=" + addr}, "-connect-timeout", "6s", "lock", "/p", "--", "true")
		require.Equal(t, 3, r.code, r.stderr)
		require.Contains(t, r.stderr, "cannot reach ZooKeeper at "+addr)
		require.Contains(t, r.stderr, "server "+addr+": no ZooKeeper answer")
		require.Contains(t, r.stderr, "-tls-ca FILE")
		require.NotContains(t, r.stderr, "session.WithTLS", "the CLI's words, not the library's")
	})
	t.Run("TLS client, plaintext port", func(t *testing.T) {
		t.Parallel()
		r := shepherd(t, good.env(zk.Addr(0)), "-connect-timeout", "2s", "status", "/p")
		require.Equal(t, 3, r.code, r.stderr)
		require.Contains(t, r.stderr, "server "+zk.Addr(0)+": TLS handshake failed")
		require.Contains(t, r.stderr, "a plaintext port?")
	})
	t.Run("wrong CA", func(t *testing.T) {
		t.Parallel()
		env := append(good.env(addr), "SHEPHERD_TLS_CA="+wrongCA.ca)
		r := shepherd(t, env, "-connect-timeout", "2s", "semaphore", "-n", "1", "/p", "--", "true")
		require.Equal(t, 3, r.code, r.stderr)
		require.Contains(t, r.stderr, "server "+addr+": TLS handshake failed")
		require.Contains(t, r.stderr, "certificate signed by unknown authority")
		require.Contains(t, r.stderr, "-tls-ca FILE")
	})
	t.Run("client certificate of another CA", func(t *testing.T) {
		t.Parallel()
		env := append(wrongCA.env(addr), "SHEPHERD_TLS_CA="+good.ca)
		r := shepherd(t, env, "-connect-timeout", "2s", "elect", "-once", "/p", "--", "true")
		require.Equal(t, 3, r.code, r.stderr)
		require.Contains(t, r.stderr, "server "+addr)
		require.Contains(t, r.stderr, "the server refused us")
	})
	t.Run("no client certificate", func(t *testing.T) {
		t.Parallel()
		r := shepherd(t, []string{"SHEPHERD_ZK=" + addr, "SHEPHERD_TLS_CA=" + good.ca}, "-connect-timeout", "2s", "status", "/p")
		require.Equal(t, 3, r.code, r.stderr)
		require.Contains(t, r.stderr, "the server refused us")
		require.Contains(t, r.stderr, "-tls-cert FILE -tls-key FILE")
	})
	t.Run("file errors are usage errors", func(t *testing.T) {
		t.Parallel()
		missing := filepath.Join(t.TempDir(), "nope.pem")
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"-tls-key", missing}, "-tls-key " + missing + ": cannot read the file: no such file or directory"},
			{[]string{"-tls-cert", missing}, "-tls-cert " + missing + ": cannot read the file"},
			{[]string{"-tls-ca", missing}, "-tls-ca " + missing + ": cannot read the file"},
			{[]string{"-tls-ca", good.key}, "-tls-ca " + good.key + ": no PEM certificate"},
			{[]string{"-tls-key", wrongCA.key}, "private key does not match public key"},
			{[]string{"-tls-cert", good.cert, "-tls-key", ""}, "-tls-cert " + good.cert + " needs -tls-key"},
		} {
			args := append(append([]string{"lock"}, tc.args...), "/p", "--", "true")
			r := shepherd(t, good.env(addr), args...)
			require.Equal(t, 2, r.code, "%q: %s", tc.args, r.stderr)
			require.Contains(t, r.stderr, tc.want, "%q", tc.args)
		}
	})
}

// TestCLIACLCreator: under -acl creator with -auth-file, a second principal
// (a plain go-zookeeper connection with other digest credentials) cannot
// delete or overwrite the holder's node, nor join PATH's line, but reads
// it: status works for anyone. The credentials show nowhere, -v included.
func TestCLIACLCreator(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-Alice-7d1f"
	dir := t.TempDir()
	authFile := writeFile(t, dir, "auth", []byte("# alice\ndigest:alice:"+secret+"\n"), 0o600)
	path := uniquePath(t)
	openParent(t, path)
	holder, stderr := start(t, nil, "lock", "-v", "-acl", "creator", "-auth-file", authFile, "-id", "alice-holds", path, "--", "sleep", "30")
	s := waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Holders) == 1 })
	node := s.Holders[0].Node
	r := shepherd(t, nil, "status", path)
	require.Equal(t, 0, r.code, "anyone reads: %s", r.stderr)
	require.Contains(t, r.stdout, "alice-holds")

	conn, _, err := gozk.Connect(zk.Servers(), 5*time.Second, gozk.WithLogInfo(false))
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.AddAuth("digest", []byte("bob:other")))
	data, _, err := conn.Get(node)
	require.NoError(t, err, "bob reads the holder's node")
	require.Equal(t, "alice-holds", string(data))
	require.ErrorIs(t, conn.Delete(node, -1), gozk.ErrNoAuth, "bob deletes alice's node")
	_, err = conn.Set(node, []byte("bob"), -1)
	require.ErrorIs(t, err, gozk.ErrNoAuth, "bob overwrites alice's node")
	_, err = conn.Create(path+"/bob", nil, 0, gozk.WorldACL(gozk.PermAll))
	require.ErrorIs(t, err, gozk.ErrNoAuth, "bob joins the line")
	acl, _, err := conn.GetACL(path)
	require.NoError(t, err)
	require.Len(t, acl, 2)
	require.Equal(t, gozk.ACL{Perms: gozk.PermRead, Scheme: "world", ID: "anyone"}, acl[1])
	require.Equal(t, "digest", acl[0].Scheme)
	require.True(t, strings.HasPrefix(acl[0].ID, "alice:"), acl[0].ID)
	// The same principal, through SHEPHERD_AUTH, waits in the same line.
	r = shepherd(t, []string{"SHEPHERD_AUTH=digest:alice:" + secret}, "-v", "lock", "-acl", "creator", "-timeout", "300ms", path, "--", "true")
	require.Equal(t, 4, r.code, r.stderr)
	require.NotContains(t, r.stdout+r.stderr, secret)
	require.Contains(t, r.stderr, "level=", "-v logs")

	require.NoError(t, holder.Process.Signal(syscall.SIGTERM))
	_ = holder.Wait()
	require.Contains(t, stderr.String(), "level=", "-v logs")
	require.NotContains(t, stderr.String(), secret, "-v shows no credential")
	require.NotContains(t, stderr.String(), "alice:", "-v shows no credential")
}

// TestCLIACLCreatorOnly: nobody but the creator reads the nodes.
func TestCLIACLCreatorOnly(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	openParent(t, path)
	alice := []string{"SHEPHERD_AUTH=digest:alice:pw"}
	start(t, alice, "lock", "-acl", "creator-only", "-id", "hidden", path, "--", "sleep", "30")
	var r result
	require.Eventually(t, func() bool {
		r = shepherd(t, alice, "status", path)
		return r.code == 0 && strings.Contains(r.stdout, "hidden")
	}, 20*time.Second, 50*time.Millisecond, "%+v", &r)
	r = shepherd(t, nil, "status", path)
	require.NotEqual(t, 0, r.code, "others cannot read: %s", r.stdout)
	require.NotContains(t, r.stdout, "hidden")
	r = shepherd(t, []string{"SHEPHERD_AUTH=digest:bob:pw"}, "status", path)
	require.NotEqual(t, 0, r.code, "others cannot read: %s", r.stdout)
}

// TestCLIACLCredentialsRefused: credentials on the command line, in a file
// others can read, or malformed, are usage errors that never show them; an
// ACL preset that needs a principal refuses to run without one.
func TestCLIACLCredentialsRefused(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-Zq9"
	dir := t.TempDir()
	open := writeFile(t, dir, "open", []byte("digest:alice:"+secret+"\n"), 0o644)
	bad := writeFile(t, dir, "bad", []byte(secret+"\n"), 0o600)
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"lock", "-auth", "digest:alice:" + secret, "/p", "--", "true"}, "-auth-file FILE"},
		{nil, []string{"-auth=digest:alice:" + secret, "status", "/p"}, "SHEPHERD_AUTH"},
		{nil, []string{"status", "-auth-file", "digest:alice:" + secret, "/p"}, "-auth-file: no such file"},
		{nil, []string{"status", "-auth-file", open, "/p"}, "chmod 600 " + open},
		{nil, []string{"status", "-auth-file", bad, "/p"}, "line 1: want scheme:credentials"},
		{[]string{"SHEPHERD_AUTH=" + secret}, []string{"status", "/p"}, "SHEPHERD_AUTH: want scheme:credentials"},
		{nil, []string{"lock", "-acl", "creator", "/p", "--", "true"}, "-acl creator needs credentials"},
		{nil, []string{"elect", "-acl", "creator-only", "/p", "--", "true"}, "-acl creator-only needs credentials"},
		{nil, []string{"lock", "-acl", "closed", "/p", "--", "true"}, "-acl"},
	} {
		r := shepherd(t, tc.env, tc.args...)
		require.Equal(t, 2, r.code, "%q: %s", tc.args, r.stderr)
		require.Contains(t, r.stderr, tc.want, "%q", tc.args)
		require.NotContains(t, r.stdout+r.stderr, secret, "%q", tc.args)
	}
}

// TestDevTLS: `shepherd dev -tls` serves TLS only and prints export lines
// that work; Ctrl-C removes everything, the certificates included.
func TestDevTLS(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	cmd := exec.Command(bin, "dev", "-tls", "-port", port)
	errb := &syncWriter{w: new(bytes.Buffer)}
	cmd.Stderr = errb
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })

	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "stderr: %s", errb)
	m := regexp.MustCompile(`^export (SHEPHERD_ZK=127\.0\.0\.1:` + port + `) (SHEPHERD_TLS_CA=\S+) (SHEPHERD_TLS_CERT=\S+) (SHEPHERD_TLS_KEY=\S+)\n$`).FindStringSubmatch(line)
	require.NotNil(t, m, "export line: %q", line)
	env := m[1:]
	var files []string
	for _, kv := range env[1:] {
		_, f, _ := strings.Cut(kv, "=")
		fi, err := os.Stat(f)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
		files = append(files, f)
	}
	r := shepherd(t, env, "lock", "/dev-tls-test", "--", "sh", "-c", `test -n "$SHEPHERD_TOKEN"`)
	require.Equal(t, 0, r.code, r.stderr)
	r = shepherd(t, env[:1], "-connect-timeout", "1s", "status", "/dev-tls-test")
	require.Equal(t, 3, r.code, "plaintext refused: %s", r.stderr)

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-exited:
		exited <- err
		require.NoError(t, err, "Ctrl-C ends dev cleanly: %s", errb)
	case <-time.After(30 * time.Second):
		t.Fatalf("dev did not stop; stderr: %s", errb)
	}
	for _, f := range files {
		_, err := os.Stat(f)
		require.ErrorIs(t, err, os.ErrNotExist, "%s is removed", f)
	}
}

// TestCLITLSRotatedCert: the client certificate is read again at each
// reconnect: after its files are replaced and the server restarted, the
// holder's reconnect presents the new one (the server logs its principal).
func TestCLITLSRotatedCert(t *testing.T) {
	t.Parallel()
	c := zktest.Start(t, 1, zktest.WithTLS(zktest.TLSConfig{}))
	files := writeTLSFiles(t, c.CA(), "before-rotation")
	dir := t.TempDir()
	path := uniquePath(t)
	// A 30 s session: the restart of the one server (a JVM, and TLS
	// handshakes refused until it serves) can outlast the default 10 s on
	// a loaded machine, and then the session, and the hold, are gone before
	// any reconnect: it happened beside six busy loops.
	start(t, files.env(c.Addr(0)), "-session-timeout", "30s", "lock", "-on-disconnect", "pause", path, "--", "sh", "-c",
		"touch "+dir+"/started; exec sleep 60")
	waitFile(t, filepath.Join(dir, "started"))
	require.NotContains(t, c.LogTail(0, 1000), "CN=after-rotation")

	cert, err := c.CA().ClientCert("after-rotation")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(files.cert, certPEM(cert), 0o644))
	require.NoError(t, os.WriteFile(files.key, keyPEM(t, cert), 0o600))
	require.NoError(t, c.Restart(testutil.Ctx(t, 60*time.Second), 0))
	require.Eventually(t, func() bool {
		return strings.Contains(c.LogTail(0, 1000), "Authenticated Id 'CN=after-rotation'")
	}, 60*time.Second, 100*time.Millisecond, "the reconnect presents the rotated certificate")
}

// TestCLIACLRefused: with credentials and no -acl, the holder's nodes get
// the creator ACL (the library's default); another principal, or a client
// without credentials, is refused at once with exit status 6 and a message
// naming the node and the permission it lacks, for a lock and an election.
func TestCLIACLRefused(t *testing.T) {
	t.Parallel()
	alice := []string{"SHEPHERD_AUTH=digest:alice:pw-a"}
	bob := []string{"SHEPHERD_AUTH=digest:bob:pw-b"}
	for _, sub := range []string{"lock", "elect"} {
		path := uniquePath(t)
		openParent(t, path)
		start(t, alice, sub, "-id", "alice-holds", path, "--", "sleep", "30")
		waitStatus(t, path, func(s admin.Snapshot) bool { return len(s.Holders) == 1 })
		for _, env := range [][]string{bob, nil} {
			r := shepherd(t, env, sub, "-timeout", "30s", path, "--", "true")
			require.Equal(t, 6, r.code, "%s: %s", sub, r.stderr)
			require.Contains(t, r.stderr, "permission denied", sub)
			require.Contains(t, r.stderr, "the ACL of "+path+" does not grant CREATE", sub)
		}
		r := shepherd(t, bob, "status", path)
		require.Equal(t, 0, r.code, "anyone reads: %s", r.stderr)
		require.Contains(t, r.stdout, "alice-holds")
		// Nor may bob revoke alice's hold: a clear refusal, and she holds.
		for _, args := range [][]string{{"revoke", path}, {"revoke", "-ask", "-wait", "1s", path}} {
			r = shepherd(t, bob, args...)
			require.Equal(t, 6, r.code, "%v: %s", args, r.stderr)
			require.Contains(t, r.stderr, "permission denied", "%v", args)
			require.Equal(t, 1, strings.Count(r.stderr, "revoke "), "%v: the prefix once: %s", args, r.stderr)
		}
		r = shepherd(t, bob, "status", path)
		require.Contains(t, r.stdout, "alice-holds", "a refused revoke ended the hold")
	}
}
