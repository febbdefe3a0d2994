package main

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// Connection refused by every server: when ZooKeeper is not running at all,
// shepherd says so within seconds instead of waiting out -connect-timeout.
// A server that is only starting refuses too, for a moment: the refusals
// must last refusedFor and span refusedPasses full passes over the servers
// (go-zookeeper pauses a second between passes) before shepherd gives up.
const (
	refusedFor    = 2 * time.Second
	refusedPasses = 2
)

// errAllRefused ends the connect wait when every server refuses.
var errAllRefused = errors.New("connection refused by every server")

// refusals is the dialer of the session while connect waits for it: it
// counts the dials in a row that were refused (ECONNREFUSED, or a host name
// that does not resolve) and calls
// giveUp once they span refusedPasses passes and refusedFor. Any other
// outcome (a connection, a timeout, another error) starts the count again.
// After stop it only dials.
type refusals struct {
	servers int
	giveUp  func()
	mu      sync.Mutex
	n       int       // refused dials in a row
	first   time.Time // when the first of them was refused
	stopped bool
	// notFound is the last error of a host name that does not resolve
	// (counted as a refusal).
	notFound string
}

func (r *refusals) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return c, err
	}
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		r.notFound = dns.Error() // a host that does not resolve counts as refusing
	} else if err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
		r.n = 0
		return c, err
	}
	if r.n == 0 {
		r.first = time.Now()
	}
	r.n++
	if r.n >= refusedPasses*r.servers && time.Since(r.first) >= refusedFor {
		r.giveUp()
	}
	return c, err
}

// stop ends the counting: the session is open, or connect has given up.
func (r *refusals) stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
}

// span is how long the refusals have lasted, how many there were, and the
// last host-not-found error among them.
func (r *refusals) span() (time.Duration, int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Since(r.first).Round(100 * time.Millisecond), r.n, r.notFound
}
