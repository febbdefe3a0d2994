package zktest

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// DebianJar is where Debian's "zookeeper" package installs the server.
const DebianJar = "/usr/share/java/zookeeper.jar"

// ErrNotInstalled is returned when no ZooKeeper installation can be found.
var ErrNotInstalled = errors.New("zktest: ZooKeeper not found: install Debian's package " +
	"(sudo apt-get install zookeeper, or `make setup`) or set ZOOKEEPER_CLASSPATH " +
	"to a classpath holding ZooKeeper's jars")

// Classpath returns the Java classpath that runs a ZooKeeper server: the value of
// ZOOKEEPER_CLASSPATH when set, else Debian's zookeeper.jar (its manifest names
// its dependencies) plus slf4j-simple so the server's log reaches its log file,
// and netty-codec and netty-resolver (from libnetty-java, a dependency of the
// package) for TLS.
func Classpath() (string, error) {
	if cp := os.Getenv("ZOOKEEPER_CLASSPATH"); cp != "" {
		return cp, nil
	}
	if _, err := os.Stat(DebianJar); err != nil {
		return "", ErrNotInstalled
	}
	cp := DebianJar
	// slf4j-simple, and two jars that Netty's TLS (WithTLS) needs but
	// whose names the jar's manifest leaves out.
	for _, j := range []string{"slf4j-simple.jar", "netty-codec.jar", "netty-resolver.jar"} {
		if p := "/usr/share/java/" + j; fileExists(p) {
			cp += ":" + p
		}
	}
	return cp, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// config is what the options set.
type config struct {
	tick      time.Duration
	heapMB    int
	classpath string
	baseDir   string
	jvmFlags  []string
	startWait time.Duration
	fastJIT   bool
	maxSess   time.Duration
	port      int // the standalone server's client port (0: a free one)
	// containerCheck is how often the leader removes empty container
	// nodes (ZooKeeper's znode.container.checkIntervalMs).
	containerCheck time.Duration
	tls            *TLSConfig // WithTLS
	// pickPorts, if set, replaces freePorts (tests of a taken port).
	pickPorts func(n int) ([]int, *portClaim, error)
	lag       bool // WithFollowerLag
	// noArchive: start without the class-data archive (archive.go), as
	// the server that makes it does.
	noArchive bool
}

// Option configures a Cluster.
type Option func(*config)

// WithTickTime sets ZooKeeper's tickTime (default 200ms). The server accepts
// session timeouts from 2 ticks (400ms by default) to 60s (see
// WithMaxSessionTimeout).
func WithTickTime(d time.Duration) Option { return func(c *config) { c.tick = d } }

// WithMaxSessionTimeout sets the longest session timeout the servers grant
// (maxSessionTimeout, default 60s): a client asking for more gets this.
func WithMaxSessionTimeout(d time.Duration) Option { return func(c *config) { c.maxSess = d } }

// WithHeapMB sets each server's maximum Java heap in MiB (default 64; 32 fails
// under load).
func WithHeapMB(mb int) Option { return func(c *config) { c.heapMB = mb } }

// WithClasspath sets the Java classpath of the server, overriding
// ZOOKEEPER_CLASSPATH and Debian's jar.
func WithClasspath(cp string) Option { return func(c *config) { c.classpath = cp } }

// WithDataDir puts data and logs under dir instead of a fresh temporary
// directory on tmpfs (use it to measure a server writing to disk). The
// directory is not removed.
func WithDataDir(dir string) Option { return func(c *config) { c.baseDir = dir } }

// WithClientPort makes a standalone server (size 1) listen for clients on
// 127.0.0.1:port instead of a free port (e.g. 2181 for a server people reach
// by hand). Tests should keep free ports: another ZooKeeper may run.
func WithClientPort(port int) Option { return func(c *config) { c.port = port } }

// WithJVMFlags adds flags to the java command line.
func WithJVMFlags(flags ...string) Option {
	return func(c *config) { c.jvmFlags = append(append([]string(nil), c.jvmFlags...), flags...) }
}

// WithSuperDigest makes user, with password, ZooKeeper's super user: a
// session that authenticates as it (scheme "digest", "user:password") passes
// every ACL check, as an operator's admin account does. The servers are
// given only the digest (zookeeper.DigestAuthenticationProvider.superDigest),
// never the password. Other digest users need no server configuration: any
// session may authenticate as any "user:password" (session.WithAuth).
func WithSuperDigest(user, password string) Option {
	return WithJVMFlags("-Dzookeeper.DigestAuthenticationProvider.superDigest=" + digestID(user, password))
}

// digestID is the ID that names user, with password, in a digest ACL
// (zk.DigestACL computes it too): "user:" and the base64 of the SHA-1 of
// "user:password".
func digestID(user, password string) string {
	h := sha1.Sum([]byte(user + ":" + password))
	return user + ":" + base64.StdEncoding.EncodeToString(h[:])
}

// WithContainerCheckInterval sets how often the server removes container
// nodes that have had children and have none left (ZooKeeper's
// znode.container.checkIntervalMs; default here 200ms, ZooKeeper's own 60s),
// so a test can see a recipe's parents disappear once nobody uses them.
func WithContainerCheckInterval(d time.Duration) Option {
	return func(c *config) { c.containerCheck = d }
}

// WithFullJIT lets the JVM use its optimizing compiler (slower start, faster
// steady state): for benchmarks. Tests start faster without it.
func WithFullJIT() Option { return func(c *config) { c.fastJIT = false } }

// WithStartTimeout bounds how long starting (or restarting) waits for the
// servers to serve (default 60s).
func WithStartTimeout(d time.Duration) Option { return func(c *config) { c.startWait = d } }

// node is one ZooKeeper server process.
type node struct {
	id                  int // myid, 1-based
	clientPort          int
	peerPort, electPort int
	dir                 string
	logPath             string
	cmd                 *exec.Cmd
	exited              chan struct{} // closed when cmd has been waited for
}

// spawner starts processes from one goroutine locked to its OS thread for the
// life of the Cluster: Linux's Pdeathsig fires when the *thread* that forked a
// child exits, so children must come from a thread that lives as long as the
// cluster. When the spawner ends (Close), its thread exits and, should any
// process still run, the kernel kills it; when the test binary dies, so do the
// servers.
type spawner struct {
	reqs chan spawnReq
	done chan struct{}
}

type spawnReq struct {
	cmd  *exec.Cmd
	errc chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		defer close(s.done)
		for r := range s.reqs {
			r.errc <- r.cmd.Start()
		}
	}()
	return s
}

func (s *spawner) start(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	errc := make(chan error, 1)
	s.reqs <- spawnReq{cmd: cmd, errc: errc}
	return <-errc
}

func (s *spawner) stop() {
	close(s.reqs)
	<-s.done
}

func (n *node) running() bool {
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

func (n *node) writeConfig(cfg *config, peers []*node, ts *tlsState, links *peerLinks) error {
	if err := os.MkdirAll(filepath.Join(n.dir, "data"), 0o755); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\n", cfg.tick.Milliseconds())
	fmt.Fprintf(&b, "initLimit=10\nsyncLimit=5\n")
	fmt.Fprintf(&b, "dataDir=%s\n", filepath.Join(n.dir, "data"))
	if ts == nil {
		fmt.Fprintf(&b, "clientPort=%d\nclientPortAddress=127.0.0.1\n", n.clientPort)
	} else {
		// A TLS-only client port: no clientPort at all.
		fmt.Fprintf(&b, "secureClientPort=%d\nsecureClientPortAddress=127.0.0.1\n", n.clientPort)
		fmt.Fprintf(&b, "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n")
		fmt.Fprintf(&b, "ssl.keyStore.location=%s\nssl.keyStore.type=PEM\n", ts.keyStore)
		fmt.Fprintf(&b, "ssl.trustStore.location=%s\nssl.trustStore.type=PEM\n", ts.trustPath)
		if ts.tls13 {
			// 3.8's default cipher suites are TLS 1.2's only.
			fmt.Fprintf(&b, "ssl.protocol=TLSv1.3\nssl.enabledProtocols=TLSv1.3\n")
			fmt.Fprintf(&b, "ssl.ciphersuites=TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256\n")
		}
		if ts.noAuth {
			fmt.Fprintf(&b, "ssl.clientAuth=none\n")
		} else {
			fmt.Fprintf(&b, "ssl.clientAuth=need\n")
			fmt.Fprintf(&b, "authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n")
		}
	}
	fmt.Fprintf(&b, "maxSessionTimeout=%d\nmaxClientCnxns=0\n", cfg.maxSess.Milliseconds())
	fmt.Fprintf(&b, "admin.enableServer=false\n4lw.commands.whitelist=*\n")
	fmt.Fprintf(&b, "forceSync=no\npreAllocSize=1024\nsnapCount=100000\n")
	if len(peers) > 1 {
		fmt.Fprintf(&b, "cnxTimeout=1000\n")
		for _, p := range peers {
			port := p.peerPort
			if links != nil && p != n {
				port = links.port(n.id-1, p.id-1) // through the cluster's proxy (WithFollowerLag)
			}
			fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d\n", p.id, port, p.electPort)
		}
		if err := os.WriteFile(filepath.Join(n.dir, "data", "myid"), []byte(fmt.Sprintf("%d\n", n.id)), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(n.dir, "zoo.cfg"), []byte(b.String()), 0o644)
}

func (n *node) start(sp *spawner, cfg *config) error {
	args := []string{
		fmt.Sprintf("-Xmx%dm", cfg.heapMB),
		"-XX:+ExitOnOutOfMemoryError",
		"-XX:+UseSerialGC",
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		// Leader election backs off between rounds of notifications up to
		// this long (default 60 s): an ensemble whose leader a test kills
		// must not sit without quorum for most of a minute because one
		// round went unanswered on a loaded machine.
		"-Dzookeeper.fastleader.maxNotificationInterval=2000",
		fmt.Sprintf("-Dznode.container.checkIntervalMs=%d", cfg.containerCheck.Milliseconds()),
	}
	if cfg.fastJIT {
		args = append(args, "-XX:TieredStopAtLevel=1")
	}
	args = append(args, cfg.jvmFlags...)
	args = append(args, "-cp", cfg.classpath,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(n.dir, "zoo.cfg"))
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("zktest: server %d log: %w", n.id, err)
	}
	fmt.Fprintf(logf, "==== zktest: starting server %d at %s ====\n", n.id, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command("java", args...)
	cmd.Dir = n.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	if err := sp.start(cmd); err != nil {
		logf.Close()
		return fmt.Errorf("zktest: starting server %d (java): %w", n.id, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	n.cmd, n.exited = cmd, exited
	return nil
}

// signal sends sig and waits up to wait for the process to end, then kills it.
func (n *node) signal(sig syscall.Signal, wait time.Duration) {
	if !n.running() {
		return
	}
	_ = n.cmd.Process.Signal(sig)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-n.exited:
		return
	case <-t.C:
	}
	_ = n.cmd.Process.Kill()
	<-n.exited
}

func (n *node) addr() string { return fmt.Sprintf("127.0.0.1:%d", n.clientPort) }
