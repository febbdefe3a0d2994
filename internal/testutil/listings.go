package testutil

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/shepherdzk/shepherd/internal/wire/zkwire"
)

// Listings counts the listings of one path (getChildren requests, with or
// without a watch) that a client writes on its connections: give the
// client its Dial (session.WithDialer). go-zookeeper writes one request
// frame a Write.
type Listings struct {
	path string
	n    atomic.Int64
}

// NewListings counts the listings of path (full, as written on the wire).
func NewListings(path string) *Listings { return &Listings{path: path} }

// Dial dials as net.DialTimeout, and counts on the connection.
func (l *Listings) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	return WrapDial(func(c net.Conn) net.Conn { return &listingConn{Conn: c, l: l} })(network, address, timeout)
}

// Count is the number of listings written so far.
func (l *Listings) Count() int64 { return l.n.Load() }

type listingConn struct {
	net.Conn
	l *Listings
}

func (c *listingConn) Write(p []byte) (int, error) {
	if path, ok := zkwire.ChildrenPath(p); ok && string(path) == c.l.path {
		c.l.n.Add(1)
	}
	return c.Conn.Write(p)
}
