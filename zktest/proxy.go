package zktest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy is a TCP proxy in front of ZooKeeper servers that injects network
// faults between a client and the servers: it severs connections, refuses new
// ones, and stalls traffic like a network partition. Give the client Addrs
// instead of the servers' addresses. Like a Tap, it records the Credentials of
// the sessions whose ConnectResponses it forwards.
//
// A Proxy never drops or alters a byte of a connection it keeps open: a
// stalled connection holds its bytes, and Heal closes it rather than resume it,
// as TCP connections break after a real partition. (Dropping bytes and then
// resuming a ZooKeeper connection corrupts its stream: requests hang and watch
// events are lost.)
//
// Its methods are safe for concurrent use. It listens on loopback only.
type Proxy struct {
	tap     *Tap
	targets []string
	lns     []net.Listener
	ctx     context.Context // cancelled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu      sync.Mutex
	conns   map[*proxyConn]struct{}
	refuse  bool
	stalled bool
	muted   bool // replies held, requests forwarded
	deaf    bool // requests held, replies forwarded
	closed  bool
}

// proxyConn is one client connection and, once dialled, its server connection.
type proxyConn struct {
	ctx    context.Context // cancelled when the pair is closed
	cancel context.CancelFunc
	client net.Conn
	server net.Conn // guarded by Proxy.mu
}

// ExpirePartition is how long Proxy.ExpireSession keeps a client cut off
// before it closes the client's session.
const ExpirePartition = 20 * time.Millisecond

// dialTimeout bounds the proxy's connection to a server.
const dialTimeout = 5 * time.Second

// NewProxy starts a proxy with one listener on 127.0.0.1 (a free port) per
// target, each forwarding to its target ZooKeeper server ("host:port"). The
// caller must Close it.
//
// A target may be repeated: several front doors to one standalone server spare
// a go-zookeeper client the 1 s pause it takes after each pass over its server
// list, so it reconnects (or learns that its session expired) at once.
func NewProxy(targets ...string) (*Proxy, error) {
	if len(targets) == 0 {
		return nil, errors.New("zktest: proxy: no targets")
	}
	for _, t := range targets {
		if _, _, err := net.SplitHostPort(t); err != nil {
			return nil, fmt.Errorf("zktest: proxy target %q: %w", t, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		tap:     NewTap(),
		targets: append([]string(nil), targets...),
		ctx:     ctx,
		cancel:  cancel,
		conns:   make(map[*proxyConn]struct{}),
	}
	for range targets {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, l := range p.lns {
				l.Close()
			}
			cancel()
			return nil, fmt.Errorf("zktest: proxy: %w", err)
		}
		p.lns = append(p.lns, ln)
	}
	for i, ln := range p.lns {
		p.wg.Add(1)
		go p.accept(ln, p.targets[i])
	}
	return p, nil
}

// Addrs returns the proxy's addresses, one per target and in the targets'
// order.
func (p *Proxy) Addrs() []string {
	a := make([]string, len(p.lns))
	for i, ln := range p.lns {
		a[i] = ln.Addr().String()
	}
	return a
}

// Sever closes every current connection, on both sides, at once. The proxy
// keeps accepting new connections (unless it refuses them).
func (p *Proxy) Sever() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeAllLocked()
}

// Refuse sets whether new connections are refused: while on, each new
// connection is accepted and closed at once, like a server that is down but
// whose port is open. Existing connections are unaffected.
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = on
}

// Stall starts a partition: no byte is forwarded in either direction, on
// existing connections and on connections accepted while it lasts, and every
// byte is kept. Clients see silence, not a closed connection, until their own
// timeouts fire. A chunk that was already being written when Stall was called
// may still be delivered.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = true
}

// MuteReplies starts a one-way partition: requests still reach the server
// and are applied, but no reply or event comes back (held, like Stall). The
// client's requests succeed on the server while it hears nothing: the fault
// of a create whose answer is lost. Heal ends it, closing the connections.
func (p *Proxy) MuteReplies() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.muted = true
}

// MuteRequests starts the other one-way partition: nothing the client sends
// reaches the server (held, like Stall), while what the server sends still
// comes through (answers to requests already forwarded, watch
// notifications). The server stops hearing from the client, which may go on
// receiving for as long as notifications flow. Heal ends it, closing the
// connections.
func (p *Proxy) MuteRequests() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deaf = true
}

// Heal ends a partition and stops refusing. The connections that were
// stalled are closed, on both sides, never resumed; clients reconnect through
// the proxy. Heal without a Stall closes nothing.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled || p.muted || p.deaf {
		// Every connection open now existed during the stall.
		p.closeAllLocked()
	}
	p.stalled, p.muted, p.deaf, p.refuse = false, false, false, false
}

// Conns returns the number of open client connections.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Credentials returns the latest Credentials the proxy forwarded for
// sessionID, and whether there are any. See Tap.
func (p *Proxy) Credentials(sessionID int64) (Credentials, bool) {
	return p.tap.Credentials(sessionID)
}

// Last returns the Credentials the proxy forwarded most recently, and whether
// there are any. See Tap.
func (p *Proxy) Last() (Credentials, bool) { return p.tap.Last() }

// Close stops the proxy: it closes the listeners and every connection and
// returns once all of the proxy's goroutines have ended. Close is idempotent;
// the other methods do nothing after it. Credentials stay readable.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	p.cancel()
	p.closeAllLocked()
	p.mu.Unlock()
	var errs []error
	for _, ln := range p.lns {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	p.wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("zktest: proxy close: %w", err)
	}
	return nil
}

func (p *Proxy) closeAllLocked() {
	for pc := range p.conns {
		p.closeLocked(pc)
	}
}

// closeLocked closes both sides of pc and forgets it; it is idempotent.
func (p *Proxy) closeLocked(pc *proxyConn) {
	pc.cancel()
	pc.client.Close()
	if pc.server != nil {
		pc.server.Close()
	}
	delete(p.conns, pc)
}

func (p *Proxy) close(pc *proxyConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeLocked(pc)
}

func (p *Proxy) accept(ln net.Listener, target string) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || p.ctx.Err() != nil {
				return
			}
			// Out of file descriptors or the like: back off, then try again.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		p.mu.Lock()
		if p.closed || p.refuse {
			p.mu.Unlock()
			c.Close()
			continue
		}
		ctx, cancel := context.WithCancel(p.ctx)
		pc := &proxyConn{ctx: ctx, cancel: cancel, client: c}
		p.conns[pc] = struct{}{}
		p.wg.Add(1) // under mu, before Close can start waiting
		p.mu.Unlock()
		go p.serve(pc, target)
	}
}

// serve dials pc's server and forwards bytes both ways until both directions
// end or pc is closed.
func (p *Proxy) serve(pc *proxyConn, target string) {
	defer p.wg.Done()
	defer p.close(pc)
	// A connection accepted during a stall stays silent and is never dialled
	// through: the partition cuts it off from the server.
	if !p.pass(pc, false) {
		return
	}
	d := net.Dialer{Timeout: dialTimeout}
	server, err := d.DialContext(pc.ctx, "tcp", target)
	if err != nil {
		return // the client sees its connection closed, as if the server were down
	}
	p.mu.Lock()
	if pc.ctx.Err() != nil { // severed while dialling
		p.mu.Unlock()
		server.Close()
		return
	}
	pc.server = server
	p.mu.Unlock()

	sn := &sniffer{record: p.tap.record}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.pump(pc, server, pc.client, nil, false)
	}()
	p.pump(pc, pc.client, server, sn, true)
	<-done
}

// pump copies src to dst. At the end of src it half-closes dst, so that bytes
// in flight the other way still arrive; on any other error it closes the pair.
// sn, if not nil, sees each chunk just before it is forwarded.
func (p *Proxy) pump(pc *proxyConn, dst, src net.Conn, sn *sniffer, toClient bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.pass(pc, toClient) {
				return
			}
			if sn != nil {
				sn.observe(buf[:n])
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				p.close(pc)
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
					return
				}
			}
			p.close(pc)
			return
		}
	}
}

// pass reports whether pc may forward bytes now. While the proxy is stalled
// it holds them: it waits until pc is closed (by Heal, Sever or Close — a
// stalled connection is never resumed) and returns false.
func (p *Proxy) pass(pc *proxyConn, toClient bool) bool {
	p.mu.Lock()
	stalled := p.stalled || (toClient && p.muted) || (!toClient && p.deaf)
	p.mu.Unlock()
	if !stalled {
		return pc.ctx.Err() == nil
	}
	<-pc.ctx.Done()
	return false
}

// ExpireSession ends the session of a client connected through the proxy,
// the way a server expires a partitioned client, only without waiting for the
// session timeout: the client's connections are cut and new ones refused (a
// partition), and after a short moment (ExpirePartition) the session is closed
// on the server, which deletes its ephemeral nodes; then the proxy lets
// connections through again and the client learns its session is gone. The
// client is thus told it is disconnected before its nodes go, as with a real
// expiry (where the margin is a third of the session timeout).
//
// To end a session while its client is still attached — the race no client
// can win by more than a network round trip — use ExpireSession (the package
// function) directly.
func (p *Proxy) ExpireSession(ctx context.Context, sessionID int64) error {
	cred, ok := p.Credentials(sessionID)
	if !ok {
		return fmt.Errorf("zktest: session 0x%x has not connected through this proxy", sessionID)
	}
	p.mu.Lock()
	was := p.refuse
	p.refuse = true
	p.closeAllLocked()
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.refuse = was
		p.mu.Unlock()
	}()
	t := time.NewTimer(ExpirePartition)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
	return ExpireSession(ctx, p.targets, cred)
}
