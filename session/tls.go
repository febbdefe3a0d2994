package session

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// tlsHandshake runs a TLS client handshake over raw with server addr before
// deadline. Unless cfg names a server, the certificate is checked against
// addr's host: each server of an ensemble against its own name.
func tlsHandshake(raw net.Conn, addr string, cfg *tls.Config, deadline time.Time) (*tls.Conn, error) {
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	c := tls.Client(raw, cfg)
	_ = raw.SetDeadline(deadline)
	err := c.Handshake()
	_ = raw.SetDeadline(time.Time{})
	if err != nil {
		return nil, tlsError(addr, err)
	}
	return c, nil
}

// tlsError says why a handshake with server addr failed.
func tlsError(addr string, err error) error {
	var rh tls.RecordHeaderError
	switch {
	case errors.As(err, &rh):
		return fmt.Errorf("server %s: TLS handshake failed: %w — a plaintext port?", addr, err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return fmt.Errorf("server %s: TLS handshake failed: the server closed the connection (%w) — a plaintext port?", addr, err)
	case remoteAlert(err):
		return fmt.Errorf("server %s: TLS handshake failed: %w%s", addr, err, refusedHint)
	}
	return fmt.Errorf("server %s: TLS handshake failed: %w", addr, err)
}

// refusedHint follows an alert from the server: with ZooKeeper, most often
// a client certificate it does not accept.
const refusedHint = " (the server refused us: is the client certificate valid, and issued by a CA the server trusts?)"

// remoteAlert reports whether err is a TLS alert sent by the server.
func remoteAlert(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "remote error"
}

// noAnswer says why a connection ended (err) before the server's
// ConnectResponse.
func (c *trackedConn) noAnswer(err error) error {
	switch {
	case c.isTLS && remoteAlert(err):
		// With TLS 1.3 a server checks the client's certificate after the
		// client has finished its handshake: a refusal arrives as an alert
		// on the first read.
		return fmt.Errorf("server %s: TLS connection refused: %w%s", c.addr, err, refusedHint)
	case isTimeout(err):
		return fmt.Errorf("server %s: no ZooKeeper answer within %v: %w", c.addr, c.limit, err)
	case c.isTLS:
		return fmt.Errorf("server %s: no ZooKeeper answer over TLS: %w", c.addr, err)
	}
	return fmt.Errorf("server %s: no ZooKeeper answer (%w); is it a TLS port? (use session.WithTLS), or a server not serving yet?", c.addr, err)
}

// notZooKeeper says what the server sent instead of a ConnectResponse, whose
// first byte is b.
func (c *trackedConn) notZooKeeper(b byte) error {
	if !c.isTLS && (b == 0x15 || b == 0x16) { // a TLS alert or handshake record
		return fmt.Errorf("server %s: answered in TLS, not ZooKeeper's plaintext: a TLS port (use session.WithTLS)", c.addr)
	}
	return fmt.Errorf("server %s: the answer is not ZooKeeper's (first byte 0x%02x)", c.addr, b)
}
