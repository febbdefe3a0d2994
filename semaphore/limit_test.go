package semaphore_test

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
)

// TestSetMaxLeasesLostAnswer: SetMaxLeases whose answer is lost (the change
// was applied) reports success and takes the new limit, instead of
// mistaking its own change for someone else's.
func TestSetMaxLeasesLostAnswer(t *testing.T) {
	path := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	var d replyDropper
	s := open(t, zk.Servers(), session.WithSessionTimeout(4*time.Second), session.WithDialer(d.dial))
	sem, err := semaphore.New(s, path, 2)
	require.NoError(t, err)
	l, err := sem.Acquire(ctx) // records the limit
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))

	// SetMaxLeases reads the limit, then writes it: the read's answer
	// arrives, the write's is lost with the connection.
	sid := s.SessionID()
	d.dropAfter(1)
	require.NoError(t, sem.SetMaxLeases(ctx, 3))
	require.True(t, d.dropped(), "no answer was lost")
	require.Equal(t, sid, s.SessionID(), "the session survives")
	require.Equal(t, 3, sem.MaxLeases())
	l, err = sem.AcquireN(ctx, 3)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
}

// replyDropper is a dialer whose connections, once armed, pass n more
// answers to requests and then lose the next one: the connection is closed
// before the client reads it (the server applied the request).
type replyDropper struct {
	mu    sync.Mutex
	armed bool
	pass  int
	lost  bool
}

func (d *replyDropper) dropAfter(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.armed, d.pass = true, n
}

func (d *replyDropper) dropped() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lost
}

func (d *replyDropper) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &dropConn{Conn: c, d: d}, nil
}

// dropConn hands the client whole frames: the first (the ConnectResponse)
// as is, then each answer (xid > 0) unless the dropper loses it.
type dropConn struct {
	net.Conn
	d       *replyDropper
	hello   bool
	pending []byte
}

func (c *dropConn) Read(p []byte) (int, error) {
	for len(c.pending) == 0 {
		var hdr [4]byte
		if _, err := io.ReadFull(c.Conn, hdr[:]); err != nil {
			return 0, err
		}
		body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(c.Conn, body); err != nil {
			return 0, err
		}
		if c.hello && len(body) >= 4 && int32(binary.BigEndian.Uint32(body)) > 0 {
			c.d.mu.Lock()
			drop := c.d.armed && c.d.pass == 0
			if c.d.armed && c.d.pass > 0 {
				c.d.pass--
			}
			if drop {
				c.d.armed, c.d.lost = false, true
			}
			c.d.mu.Unlock()
			if drop {
				c.Conn.Close()
				return 0, io.ErrUnexpectedEOF
			}
		}
		c.hello = true
		c.pending = append(hdr[:], body...)
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}
