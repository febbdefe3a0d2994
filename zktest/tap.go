package zktest

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/wire/zkwire"
)

// Tap records the Credentials of the ZooKeeper sessions whose connections it
// sees, so that a test can end or steal a session (ExpireSession,
// DisconnectSession). Give a client its Dialer:
//
//	tap := zktest.NewTap()
//	conn, _, err := zk.Connect(servers, timeout, zk.WithDialer(tap.Dialer(nil)))
//
// A Tap is safe for concurrent use; one Tap may serve many clients.
type Tap struct {
	mu       sync.Mutex
	sessions map[int64]Credentials
	last     Credentials
	hasLast  bool
}

// NewTap returns a Tap that has recorded nothing.
func NewTap() *Tap {
	return &Tap{sessions: make(map[int64]Credentials)}
}

// Dialer returns a zk.Dialer that dials with next (net.DialTimeout if nil) and
// returns connections that pass every byte through unchanged. On each
// connection it decodes the server's first frame, the ConnectResponse, and
// records its Credentials before the client reads them, so they are recorded
// by the time the client reports StateHasSession. A first frame that is not a
// ConnectResponse, or one that refuses the session (ID 0), records nothing.
func (t *Tap) Dialer(next zk.Dialer) zk.Dialer {
	if next == nil {
		next = net.DialTimeout
	}
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := next(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &tapConn{Conn: c, sn: sniffer{record: t.record}}, nil
	}
}

// Credentials returns the latest Credentials recorded for sessionID, and
// whether there are any.
func (t *Tap) Credentials(sessionID int64) (Credentials, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.sessions[sessionID]
	return c.clone(), ok
}

// Last returns the most recently recorded Credentials of any session, and
// whether there are any.
func (t *Tap) Last() (Credentials, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last.clone(), t.hasLast
}

func (t *Tap) record(c Credentials) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sessions[c.SessionID] = c
	t.last, t.hasLast = c, true
}

// tapConn is a net.Conn whose incoming bytes go past a sniffer.
type tapConn struct {
	net.Conn
	sn sniffer
}

func (c *tapConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.sn.observe(p[:n])
	}
	return n, err
}

// sniffer decodes the first server-to-client frame of a connection, which may
// arrive split across any number of reads, and records the Credentials in it.
// After that frame (or as soon as the stream cannot be a ConnectResponse) it
// costs one atomic load per read.
type sniffer struct {
	record func(Credentials)
	done   atomic.Bool
	mu     sync.Mutex
	buf    []byte
}

func (s *sniffer) observe(p []byte) {
	if s.done.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done.Load() {
		return
	}
	need := 4
	if len(s.buf) >= 4 {
		need += int(int32(binary.BigEndian.Uint32(s.buf)))
	}
	for len(p) > 0 && len(s.buf) < need {
		k := min(need-len(s.buf), len(p))
		s.buf = append(s.buf, p[:k]...)
		p = p[k:]
		if len(s.buf) == 4 {
			n := int32(binary.BigEndian.Uint32(s.buf))
			if n < zkwire.MinConnectResponse || n > zkwire.MaxConnectResponse {
				s.finish()
				return
			}
			need += int(n)
		}
	}
	if len(s.buf) < need {
		return
	}
	if c, err := parseConnectResponse(s.buf[4:need]); err == nil && c.SessionID != 0 {
		s.record(c)
	}
	s.finish()
}

func (s *sniffer) finish() {
	s.buf = nil
	s.done.Store(true)
}
