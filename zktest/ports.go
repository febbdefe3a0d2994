package zktest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// ReservePort returns a free loopback port for a server the test starts
// itself (a process zktest does not run: `shepherd dev -port`, say), drawn
// as zktest's own servers' ports are: from outside the kernel's ephemeral
// range, where no outgoing connection's local port and no listener on port
// 0 lands, and claimed against every other zktest user (its clusters and
// ReservePort, in this process or another) until the test ends. Nothing
// holds it against a process that is not zktest.
func ReservePort(tb testing.TB) int {
	tb.Helper()
	ports, claim, err := freePorts(1)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(claim.release)
	return ports[0]
}

// freePorts reserves n distinct free loopback ports for servers to bind,
// each claimed for as long as the cluster lives (release it on Close).
// A port is released before ZooKeeper binds it (a JVM's start, about half a
// second later) and is free again while its server is down between a Kill
// and a Restart, so another socket could take it meanwhile. Ports are
// therefore drawn at random from below the kernel's ephemeral range, where no
// outgoing connection's local port and no listener on port 0 lands (a test
// suite makes thousands of both), and each is claimed with a lock on a file
// named after it (flock, in TMPDIR/zktest-ports), which other zktest
// clusters, in this process or any other, skip: the package tests of a
// suite start theirs at the same time. A port taken all the same (by a
// process that is not zktest) makes its server exit, which a start notices
// and retries.
func freePorts(n int) ([]int, *portClaim, error) {
	lo, hi := portWindow()
	if hi-lo < 16*n {
		ports, err := ephemeralPorts(n)
		return ports, &portClaim{}, err
	}
	claim := &portClaim{dir: portClaimDir()}
	if os.MkdirAll(claim.dir, 0o755) != nil {
		claim.dir = "" // unclaimed: the listen check alone
	}
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	seen := make(map[int]bool, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries == 100*n {
			claim.release()
			return nil, nil, fmt.Errorf("zktest: free port: none of %d tried in [%d, %d) was free", tries, lo, hi)
		}
		p := lo + rand.IntN(hi-lo)
		if seen[p] {
			continue
		}
		seen[p] = true
		if !claim.take(p) {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			claim.drop()
			continue
		}
		ls = append(ls, l)
		ports = append(ports, p)
	}
	return ports, claim, nil
}

// portClaimDir is where the ports' lock files are.
func portClaimDir() string { return filepath.Join(os.TempDir(), "zktest-ports") }

// portClaim holds the locks on a cluster's ports' files.
type portClaim struct {
	dir   string // "": nothing is claimed
	files []*os.File
}

// take claims port p, reporting false if another cluster holds it.
func (c *portClaim) take(p int) bool {
	if c.dir == "" {
		return true
	}
	f, err := os.OpenFile(filepath.Join(c.dir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return true // an unwritable lock file: the listen check alone
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		f.Close()
		return false
	}
	c.files = append(c.files, f)
	return true
}

// drop gives up the last port taken.
func (c *portClaim) drop() {
	if k := len(c.files); k > 0 {
		c.files[k-1].Close()
		c.files = c.files[:k-1]
	}
}

// release gives up every port (closing a file drops its lock).
func (c *portClaim) release() {
	if c == nil {
		return
	}
	for _, f := range c.files {
		f.Close()
	}
	c.files = nil
}

// portWindow is where freePorts draws from: [lo, hi), from 10000 up to the
// first ephemeral port (net.ipv4.ip_local_port_range), or above the last
// one if that leaves more room. Where the range cannot be read it is
// Linux's default, 32768-60999.
func portWindow() (lo, hi int) {
	first, last := 32768, 60999
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			a, errA := strconv.Atoi(f[0])
			z, errZ := strconv.Atoi(f[1])
			if errA == nil && errZ == nil && 0 < a && a <= z && z <= 65535 {
				first, last = a, z
			}
		}
	}
	below, above := first-10000, 65536-(last+1)
	if above > below {
		return last + 1, 65536
	}
	return 10000, max(first, 10000)
}

// ephemeralPorts reserves n distinct ports the kernel picks (port 0): the
// fallback when no window outside the ephemeral range is wide enough.
func ephemeralPorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("zktest: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// errPortTaken: a server of a starting cluster found its port taken.
var errPortTaken = errors.New("zktest: a port was taken before the server bound it")

// portTaken reports whether a server's log says its port was in use.
func (c *Cluster) portTaken() bool {
	for _, n := range c.nodes {
		if b, err := os.ReadFile(n.logPath); err == nil && strings.Contains(string(b), "Address already in use") {
			return true
		}
	}
	return false
}
