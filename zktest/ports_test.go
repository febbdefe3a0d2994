package zktest

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"
)

// TestFreePortsOutsideTheEphemeralRange: the ports drawn for servers are
// distinct, free, and outside the range the kernel gives outgoing
// connections and listeners on port 0, which a suite uses thousands of;
// and claimed, so that no other cluster draws them while this one lives.
func TestFreePortsOutsideTheEphemeralRange(t *testing.T) {
	lo, hi := portWindow()
	inWindow := hi-lo >= 16*30 // else freePorts falls back to port 0's
	ports, claim, err := freePorts(30)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.release()
	seen := map[int]bool{}
	for _, p := range ports {
		if inWindow && (p < lo || p >= hi) {
			t.Errorf("port %d outside [%d, %d)", p, lo, hi)
		}
		if seen[p] {
			t.Errorf("port %d drawn twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d not free after the draw: %v", p, err)
			continue
		}
		l.Close()
	}
	// Another cluster (here: another claim) skips them while they are
	// claimed, and may have them once they are released.
	if claim.dir == "" {
		t.Fatal("no lock directory for the ports' claims")
	}
	other := &portClaim{dir: claim.dir}
	if other.take(ports[0]) {
		t.Errorf("port %d claimed twice", ports[0])
	}
	claim.release()
	if !other.take(ports[0]) {
		t.Errorf("port %d not claimable after its release", ports[0])
	}
	other.release()
}

// TestReservePort: a reserved port is drawn as the servers' are (outside
// the ephemeral range, free) and claimed until the test ends.
func TestReservePort(t *testing.T) {
	lo, hi := portWindow()
	if hi-lo < 16 {
		t.Skip("no window outside the ephemeral range here: ReservePort falls back to port 0's, unclaimed")
	}
	var p int
	t.Run("reserve", func(t *testing.T) {
		p = ReservePort(t)
		if p < lo || p >= hi {
			t.Errorf("port %d outside [%d, %d)", p, lo, hi)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d not free: %v", p, err)
		}
		l.Close()
		if claim := (&portClaim{dir: portClaimDir()}); claim.take(p) {
			claim.release()
			t.Errorf("port %d not claimed while the test runs", p)
		}
	})
	claim := &portClaim{dir: portClaimDir()}
	if !claim.take(p) {
		t.Errorf("port %d still claimed after its test ended", p)
	}
	claim.release()
}

// TestStartRefusesAServerThatCouldNotBind: an ensemble one of whose servers
// finds its client port taken does not start (and says the port was
// taken, so StartCluster tries other ports). The start used to wait only for
// the servers still running: the one that exited was skipped, the other two
// formed a quorum, and the cluster's Servers listed an address where another
// process listened (seen in make test: a client reconnecting there was told
// its session had expired).
func TestStartRefusesAServerThatCouldNotBind(t *testing.T) {
	cp, err := Classpath()
	if err != nil {
		t.Fatalf("no ZooKeeper (make test installs it): %v", err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := config{tick: 200 * time.Millisecond, heapMB: 64, fastJIT: true, startWait: 60 * time.Second,
		maxSess: 60 * time.Second, containerCheck: 200 * time.Millisecond, classpath: cp,
		pickPorts: func(n int) ([]int, *portClaim, error) {
			ports, claim, err := freePorts(n)
			if err == nil {
				ports[3] = taken.Addr().(*net.TCPAddr).Port // server 1's client port
			}
			return ports, claim, err
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := startCluster(ctx, 3, cfg)
	if err == nil {
		c.Close()
		t.Fatal("the cluster started without server 1, whose client port was taken")
	}
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("the start failed, but not as a taken port: %v", err)
	}
}
