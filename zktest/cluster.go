package zktest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Cluster is a running ZooKeeper standalone server (size 1) or ensemble. Nodes
// are indexed from 0. Methods are safe for concurrent use.
type Cluster struct {
	cfg     config
	dir     string
	ownDir  bool
	sp      *spawner
	mu      sync.Mutex
	nodes   []*node
	closed  bool
	started time.Duration
	tls     *tlsState // WithTLS; nil for plaintext
	ports   *portClaim
	links   *peerLinks // WithFollowerLag; nil without
}

// Start starts a cluster of size nodes for a test (1 for a standalone server, 3
// or 5 for an ensemble), fails tb if it cannot, and stops it when the test ends.
// If the test failed, the tail of each server's log is written to the test log.
func Start(tb testing.TB, size int, opts ...Option) *Cluster {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := StartCluster(ctx, size, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			for i := range c.Size() {
				tb.Logf("zktest: server %d log tail:\n%s", i, c.LogTail(i, 20))
			}
		}
		if err := c.Close(); err != nil {
			tb.Error(err)
		}
	})
	return c
}

// StartCluster starts a cluster of size nodes and waits until every node serves
// and, for an ensemble, a leader is elected. The caller must Close it (in
// TestMain: defer before m.Run's result is returned).
func StartCluster(ctx context.Context, size int, opts ...Option) (*Cluster, error) {
	if size < 1 {
		return nil, fmt.Errorf("zktest: cluster size %d: need at least 1", size)
	}
	cfg := config{tick: 200 * time.Millisecond, heapMB: 64, fastJIT: true, startWait: 60 * time.Second,
		maxSess: 60 * time.Second, containerCheck: 200 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.tick <= 0 || cfg.heapMB < 16 || cfg.maxSess < 2*cfg.tick || cfg.containerCheck < time.Millisecond {
		return nil, fmt.Errorf("zktest: bad options: tick %v, heap %d MiB, max session timeout %v, container check %v",
			cfg.tick, cfg.heapMB, cfg.maxSess, cfg.containerCheck)
	}
	if cfg.port != 0 && (size != 1 || cfg.port < 0 || cfg.port > 65535) {
		return nil, fmt.Errorf("zktest: client port %d: for one standalone server, in 1-65535", cfg.port)
	}
	if cfg.classpath == "" {
		cp, err := Classpath()
		if err != nil {
			return nil, err
		}
		cfg.classpath = cp
	}
	if !cfg.noArchive {
		cfg.jvmFlags = append(archiveFlags(ctx, cfg), cfg.jvmFlags...)
	}
	// A free port is released before ZooKeeper binds it, so another process
	// can take it in between (seen when many servers start at once): a
	// start whose server could not bind is tried again with other ports.
	for attempt := 1; ; attempt++ {
		c, err := startCluster(ctx, size, cfg)
		if err == nil || attempt == 3 || cfg.port != 0 || !errors.Is(err, errPortTaken) {
			return c, err
		}
	}
}

// startCluster is one attempt of StartCluster, with cfg checked.
func startCluster(ctx context.Context, size int, cfg config) (*Cluster, error) {
	c := &Cluster{cfg: cfg}
	if err := c.makeDir(); err != nil {
		return nil, err
	}
	if cfg.tls != nil {
		ts, err := setupTLS(cfg.tls, c.dir)
		if err != nil {
			c.removeDir()
			return nil, err
		}
		c.tls = ts
	}
	pick := freePorts
	if cfg.pickPorts != nil {
		pick = cfg.pickPorts
	}
	ports, claim, err := pick(3 * size)
	if err != nil {
		c.removeDir()
		return nil, err
	}
	c.ports = claim
	if cfg.port != 0 {
		ports[0] = cfg.port
	}
	if err := c.configure(ports); err != nil {
		c.ports.release()
		c.removeDir()
		return nil, err
	}
	c.sp = newSpawner()
	t0 := time.Now()
	for _, n := range c.nodes {
		if err := n.start(c.sp, &c.cfg); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.startWait)
	defer cancel()
	if err := c.waitServing(wctx, true); err != nil {
		tail := c.LogTail(0, 20)
		taken := c.portTaken()
		_ = c.Close()
		if taken {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return nil, fmt.Errorf("%w\nserver 0 log tail:\n%s", err, tail)
	}
	c.started = time.Since(t0)
	return c, nil
}

// configure lays out one node per three ports (client, peer, election)
// and writes each node's config.
func (c *Cluster) configure(ports []int) error {
	for i := range len(ports) / 3 {
		n := &node{
			id:         i + 1,
			clientPort: ports[3*i],
			peerPort:   ports[3*i+1],
			electPort:  ports[3*i+2],
			dir:        filepath.Join(c.dir, fmt.Sprintf("node%d", i)),
		}
		n.logPath = filepath.Join(n.dir, "zookeeper.log")
		c.nodes = append(c.nodes, n)
	}
	if c.cfg.lag && len(c.nodes) > 1 {
		links, err := newPeerLinks(len(c.nodes))
		if err != nil {
			return err
		}
		c.links = links
		links.serve(func(to int) string { return fmt.Sprintf("127.0.0.1:%d", c.nodes[to].peerPort) })
	}
	for _, n := range c.nodes {
		if err := n.writeConfig(&c.cfg, c.nodes, c.tls, c.links); err != nil {
			if c.links != nil {
				c.links.close()
			}
			return fmt.Errorf("zktest: config: %w", err)
		}
	}
	return nil
}

// LagFollower holds back the commits the leader sends server i (which must
// be a follower; see Leader) until release is called: i keeps logging and
// acknowledging proposals, pinging its leader and revalidating its clients'
// sessions, so it stays a follower and serves its clients from state older
// than what the ensemble commits meanwhile (a write committed by the others
// is not seen on i; a sync, and a session created, on i waits, and so do
// that client's later requests, its pings too). release
// sends what was held, in order. The cluster must be started
// WithFollowerLag.
func (c *Cluster) LagFollower(i int) (release func(), err error) {
	if c.links == nil {
		return nil, errors.New("zktest: LagFollower needs an ensemble started WithFollowerLag")
	}
	if i < 0 || i >= len(c.nodes) {
		return nil, fmt.Errorf("zktest: no server %d", i)
	}
	c.links.setLag(i, true)
	var once sync.Once
	return func() { once.Do(func() { c.links.setLag(i, false) }) }, nil
}

// makeDir makes the cluster's directory: WithBaseDir's, or a new one of its
// own (on tmpfs where there is one), removed on Close.
func (c *Cluster) makeDir() error {
	if c.cfg.baseDir != "" {
		c.dir = c.cfg.baseDir
		if err := os.MkdirAll(c.dir, 0o755); err != nil {
			return fmt.Errorf("zktest: %w", err)
		}
		return nil
	}
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && syscall.Access("/dev/shm", 2) == nil {
		base = "/dev/shm"
	}
	d, err := os.MkdirTemp(base, "zktest-")
	if err != nil {
		return fmt.Errorf("zktest: %w", err)
	}
	c.dir, c.ownDir = d, true
	return nil
}

// Size is the number of nodes.
func (c *Cluster) Size() int { return len(c.nodes) }

// StartupTime is how long the cluster took to start serving.
func (c *Cluster) StartupTime() time.Duration { return c.started }

// TickTime is the servers' tickTime.
func (c *Cluster) TickTime() time.Duration { return c.cfg.tick }

// Addr is node i's client address, "127.0.0.1:port".
func (c *Cluster) Addr(i int) string { return c.nodes[i].addr() }

// Servers lists every node's client address.
func (c *Cluster) Servers() []string {
	s := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		s[i] = n.addr()
	}
	return s
}

// ConnectString is the comma-separated list of client addresses.
func (c *Cluster) ConnectString() string { return strings.Join(c.Servers(), ",") }

// Dir is the directory holding the nodes' data, configs and logs.
func (c *Cluster) Dir() string { return c.dir }

// LogPath is the file that captures node i's output.
func (c *Cluster) LogPath(i int) string { return c.nodes[i].logPath }

// LogTail returns the last lines of node i's output.
func (c *Cluster) LogTail(i, lines int) string {
	b, err := os.ReadFile(c.nodes[i].logPath)
	if err != nil {
		return err.Error()
	}
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

func (c *Cluster) node(i int) (*node, error) {
	if i < 0 || i >= len(c.nodes) {
		return nil, fmt.Errorf("zktest: no node %d in a cluster of %d", i, len(c.nodes))
	}
	if c.closed {
		return nil, errors.New("zktest: cluster closed")
	}
	return c.nodes[i], nil
}

// Kill ends node i with SIGKILL (a crash) and waits until it is gone.
func (c *Cluster) Kill(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.node(i)
	if err != nil {
		return err
	}
	n.signal(syscall.SIGKILL, 10*time.Second)
	return nil
}

// Stop ends node i with SIGTERM, then SIGKILL after 5s, and waits until it is
// gone.
func (c *Cluster) Stop(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.node(i)
	if err != nil {
		return err
	}
	n.signal(syscall.SIGTERM, 5*time.Second)
	return nil
}

// Running reports whether node i's process is running.
func (c *Cluster) Running(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return i >= 0 && i < len(c.nodes) && c.nodes[i].running()
}

// Restart starts node i again with its data (stopping it first if it runs) and
// waits until it serves.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	c.mu.Lock()
	n, err := c.node(i)
	if err == nil {
		n.signal(syscall.SIGTERM, 5*time.Second)
		err = n.start(c.sp, &c.cfg)
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.waitNode(ctx, i)
}

// RestartAll stops every node, then starts them all again and waits until the
// ensemble serves: a whole-ensemble restart. Sessions survive it if it is done
// within their timeout.
func (c *Cluster) RestartAll(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errors.New("zktest: cluster closed")
	}
	for _, n := range c.nodes {
		n.signal(syscall.SIGKILL, 5*time.Second)
	}
	var err error
	for _, n := range c.nodes {
		if err = n.start(c.sp, &c.cfg); err != nil {
			break
		}
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.waitServing(ctx, true)
}

func (c *Cluster) tlsClient() *tls.Config {
	if c.tls == nil {
		return nil
	}
	return c.tls.client
}

// Close kills every node, removes the data it created, and is idempotent.
func (c *Cluster) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	for _, n := range c.nodes {
		n.signal(syscall.SIGKILL, 10*time.Second)
	}
	if c.sp != nil {
		c.sp.stop()
	}
	if c.links != nil {
		c.links.close()
	}
	c.ports.release()
	return c.removeDir()
}

func (c *Cluster) removeDir() error {
	if !c.ownDir {
		return nil
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("zktest: %w", err)
	}
	return nil
}
