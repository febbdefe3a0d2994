package zktest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// freePorts reserves n distinct free loopback ports for servers to bind.
// They are released before ZooKeeper binds them (a JVM's start, about half
// a second later), so another socket can take one in between. They are
// drawn at random from below the kernel's ephemeral range, where no
// outgoing connection's local port and no listener on port 0 can land (a
// test suite makes thousands of both); only a process choosing that very
// port can, which a start notices (the server exits) and retries.
func freePorts(n int) ([]int, error) {
	lo, hi := portWindow()
	if hi-lo < 16*n {
		return ephemeralPorts(n)
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
			return nil, fmt.Errorf("zktest: free port: none of %d tried in [%d, %d) was free", tries, lo, hi)
		}
		p := lo + rand.IntN(hi-lo)
		if seen[p] {
			continue
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		ls = append(ls, l)
		ports = append(ports, p)
	}
	return ports, nil
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
