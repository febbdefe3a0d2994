package testutil

import (
	"net"
	"sync/atomic"
	"time"
)

// SlowReads is a dialer (session.WithDialer(d.Dial)) whose connections,
// while Slow is set, hand each read to go-zookeeper Delay after it came:
// every answer arrives after a short ctx has ended, so that a call gives
// up while its request runs on.
type SlowReads struct {
	Slow    atomic.Bool
	Delay   time.Duration
	delayed atomic.Int64
}

// Dial dials TCP and wraps the connection.
func (d *SlowReads) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	return WrapDial(func(c net.Conn) net.Conn { return &slowConn{Conn: c, d: d} })(network, address, timeout)
}

// WrapDial is a dialer (session.WithDialer) that dials TCP and hands each
// connection to wrap: a test's faults on the bytes go-zookeeper writes or
// reads.
func WrapDial(wrap func(net.Conn) net.Conn) func(network, address string, timeout time.Duration) (net.Conn, error) {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return wrap(c), nil
	}
}

// Delayed is the number of reads delayed so far.
func (d *SlowReads) Delayed() int64 { return d.delayed.Load() }

type slowConn struct {
	net.Conn
	d *SlowReads
}

func (c *slowConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.d.Slow.Load() {
		time.Sleep(c.d.Delay)
		c.d.delayed.Add(1)
	}
	return n, err
}
