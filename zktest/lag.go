package zktest

// A follower whose updates lag behind its leader (WithFollowerLag,
// Cluster.LagFollower): the quorum links between the servers pass through
// proxies of zktest's, which can hold back the commits a leader sends one
// follower while the rest (proposals, pings, session revalidations) flows.
// The follower then serves reads (and accepts reconnecting sessions) from
// state older than what the ensemble has committed: the stale read that
// ZooKeeper allows a follower, made to last as long as a test needs.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// WithFollowerLag routes each server's connection to its leader through a
// proxy of the cluster's, so that Cluster.LagFollower can hold back a
// follower's updates. Ensembles only; it changes nothing else.
func WithFollowerLag() Option { return func(c *config) { c.lag = true } }

// Quorum packet types (org.apache.zookeeper.server.quorum.Leader) held
// back while a follower lags: what makes it apply a transaction (COMMIT,
// and INFORM for an observer) and what answers its clients' syncs (SYNC,
// ordered behind the commits before it). Everything else flows: proposals
// (the follower logs and acknowledges them, else its leader drops it after
// syncLimit), pings, session revalidations (a reconnecting client is
// accepted).
var heldTypes = map[int32]bool{
	4:  true, // COMMIT
	7:  true, // SYNC
	8:  true, // INFORM
	9:  true, // COMMITANDACTIVATE
	19: true, // INFORMANDACTIVATE
}

// upToDate is the packet a leader sends a follower once it is in sync
// (QuorumPacket UPTODATE: type 12, zxid -1, no data, no auth): from then on
// the leader sends only quorum packets. Before it, a snapshot may be sent
// raw, so the stream is passed on unread until this pattern.
var upToDate = append([]byte{0, 0, 0, 12}, bytes.Repeat([]byte{0xff}, 16)...)

// peerLinks are the proxies of the quorum links: one per (follower,
// leader) pair, listed in the follower's config as the leader's peer port.
type peerLinks struct {
	mu     sync.Mutex
	links  map[[2]int]*peerLink // by (from, to) node index
	closed bool
	wg     sync.WaitGroup
}

// peerLink proxies one server's connections to another's peer port.
type peerLink struct {
	ln     net.Listener
	target string
	from   int // the node index that dials (the follower)
	mu     sync.Mutex
	lag    bool
	conns  map[*lagConn]struct{}
}

// newPeerLinks listens for every ordered pair of nodes.
func newPeerLinks(n int) (*peerLinks, error) {
	p := &peerLinks{links: map[[2]int]*peerLink{}}
	for from := range n {
		for to := range n {
			if from == to {
				continue
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				p.close()
				return nil, fmt.Errorf("zktest: peer link: %w", err)
			}
			p.links[[2]int{from, to}] = &peerLink{ln: ln, from: from, conns: map[*lagConn]struct{}{}}
		}
	}
	return p, nil
}

// port is the port node from dials to reach node to's peer port.
func (p *peerLinks) port(from, to int) int {
	return p.links[[2]int{from, to}].ln.Addr().(*net.TCPAddr).Port
}

// serve starts forwarding each link to its target's peer port.
func (p *peerLinks) serve(target func(to int) string) {
	for k, l := range p.links {
		l.target = target(k[1])
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			l.accept(&p.wg)
		}()
	}
}

// setLag holds back (on) or lets through (off, flushing what was held) what
// node i's leaders send it.
func (p *peerLinks) setLag(i int, on bool) {
	for k, l := range p.links {
		if k[0] == i {
			l.setLag(on)
		}
	}
}

func (p *peerLinks) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	for _, l := range p.links {
		_ = l.ln.Close()
		l.closeConns()
	}
	p.wg.Wait()
}

func (l *peerLink) accept(wg *sync.WaitGroup) {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", l.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		lc := &lagConn{link: l, down: c, up: up}
		l.mu.Lock()
		lc.lag = l.lag
		l.conns[lc] = struct{}{}
		l.mu.Unlock()
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(up, c) // follower to leader: as is
			lc.close()
		}()
		go func() {
			defer wg.Done()
			lc.fromLeader()
			lc.close()
		}()
	}
}

func (l *peerLink) setLag(on bool) {
	l.mu.Lock()
	l.lag = on
	conns := make([]*lagConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.setLag(on)
	}
}

func (l *peerLink) closeConns() {
	l.mu.Lock()
	conns := make([]*lagConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// lagConn is one follower's connection to its leader.
type lagConn struct {
	link     *peerLink
	down, up net.Conn
	once     sync.Once
	mu       sync.Mutex // guards lag and held, and orders the writes to down
	lag      bool
	held     [][]byte // packets held back, in order
}

func (c *lagConn) close() {
	c.once.Do(func() {
		_ = c.down.Close()
		_ = c.up.Close()
		c.link.mu.Lock()
		delete(c.link.conns, c)
		c.link.mu.Unlock()
	})
}

// setLag holds back what comes next (on), or sends what was held and
// lets everything through again (off).
func (c *lagConn) setLag(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lag = on
	if on {
		return
	}
	for _, p := range c.held {
		if _, err := c.down.Write(p); err != nil {
			break
		}
	}
	c.held = nil
}

// fromLeader passes on what the leader sends: unread until UPTODATE, then
// packet by packet, holding back commits and syncs (heldTypes) while the
// follower lags.
func (c *lagConn) fromLeader() {
	r := &packetReader{src: c.up}
	if err := r.skipTo(upToDate, c.down); err != nil {
		return
	}
	for {
		p, typ, err := r.packet()
		if err != nil {
			return
		}
		c.mu.Lock()
		if c.lag && heldTypes[typ] {
			c.held = append(c.held, p)
			c.mu.Unlock()
			continue
		}
		_, err = c.down.Write(p)
		c.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// packetReader reads a leader's stream to a follower.
type packetReader struct {
	src io.Reader
	buf []byte
}

// fill reads until buf holds at least n bytes.
func (r *packetReader) fill(n int) error {
	for len(r.buf) < n {
		b := make([]byte, 32<<10)
		k, err := r.src.Read(b)
		r.buf = append(r.buf, b[:k]...)
		if err != nil && len(r.buf) < n {
			return err
		}
	}
	return nil
}

// skipTo copies the stream to w, as it comes, up to and including pattern;
// what follows it stays in r.buf. Nothing is held back before the pattern:
// the two servers take turns in that part of the exchange.
func (r *packetReader) skipTo(pattern []byte, w io.Writer) error {
	var tail []byte // the last bytes passed on, for a pattern split across reads
	chunk := r.buf
	r.buf = nil
	for {
		if len(chunk) > 0 {
			seen := append(append([]byte(nil), tail...), chunk...)
			if i := bytes.Index(seen, pattern); i >= 0 {
				end := i + len(pattern) - len(tail)
				if _, err := w.Write(chunk[:end]); err != nil {
					return err
				}
				r.buf = append([]byte(nil), chunk[end:]...)
				return nil
			}
			if _, err := w.Write(chunk); err != nil {
				return err
			}
			tail = seen[max(0, len(seen)-len(pattern)+1):]
		}
		b := make([]byte, 32<<10)
		k, err := r.src.Read(b)
		chunk = b[:k]
		if err != nil && k == 0 {
			return err
		}
	}
}

// errBadPacket: the stream is not one of quorum packets.
var errBadPacket = errors.New("zktest: peer link: not a quorum packet")

// packet reads one QuorumPacket (jute: int type, long zxid, buffer data,
// vector<Id> authinfo) and returns its bytes and type.
func (r *packetReader) packet() ([]byte, int32, error) {
	n := 12 // type, zxid
	field := func() (int32, error) {
		if err := r.fill(n + 4); err != nil {
			return 0, err
		}
		v := int32(binary.BigEndian.Uint32(r.buf[n:]))
		n += 4
		return v, nil
	}
	skip := func(k int32) error {
		if k < 0 {
			return nil
		}
		if k > 64<<20 {
			return errBadPacket
		}
		n += int(k)
		return r.fill(n)
	}
	data, err := field()
	if err != nil {
		return nil, 0, err
	}
	if err := skip(data); err != nil {
		return nil, 0, err
	}
	ids, err := field()
	if err != nil {
		return nil, 0, err
	}
	for range max(ids, 0) {
		for range 2 { // scheme, id
			k, err := field()
			if err != nil {
				return nil, 0, err
			}
			if err := skip(k); err != nil {
				return nil, 0, err
			}
		}
	}
	p := append([]byte(nil), r.buf[:n]...)
	r.buf = r.buf[n:]
	return p, int32(binary.BigEndian.Uint32(p)), nil
}
