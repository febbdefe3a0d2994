package testutil

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shepherdzk/shepherd/internal/wire/zkwire"
)

// FrameGate is a dialer (session.WithDialer(g.Dial)) whose connections,
// once the gate is armed, hold the first request frame that Match accepts
// (its opcode and path, see FramePath) until Release: the session paused
// between two of its requests, at the one moment a test needs (an
// operator's write held while the next grant of the same name is made).
// go-zookeeper writes one frame per Write, from one goroutine: every
// later request waits behind the held one.
type FrameGate struct {
	Match   func(op int32, path string) bool
	armed   atomic.Bool
	held    chan struct{}
	release chan struct{}
	once    sync.Once
}

// NewFrameGate returns a gate holding what match accepts, not armed.
func NewFrameGate(match func(op int32, path string) bool) *FrameGate {
	return &FrameGate{Match: match, held: make(chan struct{}), release: make(chan struct{})}
}

// Dial dials TCP and wraps the connection.
func (g *FrameGate) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	return WrapDial(func(c net.Conn) net.Conn { return &gatedConn{Conn: c, g: g} })(network, address, timeout)
}

// Arm makes the gate hold the next frame Match accepts (one, once).
func (g *FrameGate) Arm() { g.armed.Store(true) }

// Held is closed once a frame is held.
func (g *FrameGate) Held() <-chan struct{} { return g.held }

// Release lets the held frame (and any later one) go.
func (g *FrameGate) Release() { g.once.Do(func() { close(g.release) }) }

type gatedConn struct {
	net.Conn
	g *FrameGate
}

func (c *gatedConn) Write(p []byte) (int, error) {
	if c.g.armed.Load() {
		if op, fp := FramePath(p); c.g.Match(op, fp) && c.g.armed.CompareAndSwap(true, false) {
			close(c.g.held)
			<-c.g.release
		}
	}
	return c.Conn.Write(p)
}

// FramePath is the opcode of a request frame as go-zookeeper writes it
// (its length first) and its path: a create's, setData's, getData's or a
// multi's first op's, when that is a create or a setData
// (zkwire.RequestPath), or an exists' ("" for any other).
func FramePath(frame []byte) (int32, string) {
	if op, p, ok := zkwire.RequestPath(frame); ok {
		return op, string(p)
	}
	if len(frame) < 16 {
		return 0, ""
	}
	op := int32(binary.BigEndian.Uint32(frame[8:12]))
	n := int(int32(binary.BigEndian.Uint32(frame[12:16])))
	if op != zkwire.OpExists || n <= 0 || 16+n > len(frame) {
		return op, ""
	}
	return op, string(frame[16 : 16+n])
}
