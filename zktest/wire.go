package zktest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// Credentials are what a client needs to attach to an existing ZooKeeper
// session: its ID and password, as the server sent them in the session's
// ConnectResponse, and the session timeout the server negotiated. A Tap or a
// Proxy records them; ExpireSession and DisconnectSession use them.
//
// The password is a secret of the session: String and GoString never print it.
type Credentials struct {
	SessionID int64         // the session's ID, as go-zookeeper's Conn.SessionID reports it
	Password  []byte        // the session's password (16 bytes from ZooKeeper)
	Timeout   time.Duration // the session timeout the server negotiated
}

// String describes the credentials without the password.
func (c Credentials) String() string {
	return fmt.Sprintf("session 0x%x (timeout %v, password %d bytes)", c.SessionID, c.Timeout, len(c.Password))
}

// GoString is String, so that %#v does not print the password either.
func (c Credentials) GoString() string { return "zktest.Credentials{" + c.String() + "}" }

// clone returns c with a password the caller may keep.
func (c Credentials) clone() Credentials {
	c.Password = append([]byte(nil), c.Password...)
	return c
}

// ZooKeeper wire format (jute, big-endian): every frame is an int32 length
// followed by that many bytes.
const (
	// minConnectResponse is the body of a ConnectResponse with an empty
	// password: protocolVersion, timeOut, sessionId, password length.
	minConnectResponse = 4 + 4 + 8 + 4
	// maxConnectResponse bounds what we accept as a ConnectResponse body. A
	// real one is 37 bytes (a 16-byte password); the bound keeps a stream that
	// is not ZooKeeper's from making us buffer much.
	maxConnectResponse = 1024
	// maxReplyFrame bounds the replies ExpireSession reads.
	maxReplyFrame = 64 << 10

	closeSessionXid int32 = 1
	opCloseSession  int32 = -11
)

var errShortFrame = errors.New("frame too short")

// decoder reads jute fields from a frame body and remembers the first error,
// so a parser can read every field and check once.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) next(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = errShortFrame
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) int32() int32 {
	p := d.next(4)
	if p == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p))
}

func (d *decoder) int64() int64 {
	p := d.next(8)
	if p == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(p))
}

// buffer reads a jute buffer: an int32 length (-1 for null) and the bytes.
func (d *decoder) buffer() []byte {
	n := d.int32()
	if d.err != nil || n == -1 {
		return nil
	}
	if n < 0 {
		d.err = fmt.Errorf("negative buffer length %d", n)
		return nil
	}
	return d.next(int(n))
}

// parseConnectResponse decodes the body of a ConnectResponse frame (without
// its length prefix): int32 protocolVersion, int32 timeOut (ms), int64
// sessionId, buffer passwd, and an optional bool readOnly. A session ID of 0
// is valid: it is how a server refuses to reattach a session (expired, or a
// wrong password).
func parseConnectResponse(body []byte) (Credentials, error) {
	d := decoder{b: body}
	_ = d.int32() // protocolVersion
	timeout := d.int32()
	id := d.int64()
	passwd := d.buffer()
	if d.err != nil {
		return Credentials{}, fmt.Errorf("ConnectResponse: %w", d.err)
	}
	if len(d.b) > 1 { // at most the readOnly flag may follow
		return Credentials{}, fmt.Errorf("ConnectResponse: %d unexpected trailing bytes", len(d.b))
	}
	if timeout < 0 {
		return Credentials{}, fmt.Errorf("ConnectResponse: negative timeout %d", timeout)
	}
	return Credentials{
		SessionID: id,
		Password:  append([]byte(nil), passwd...),
		Timeout:   time.Duration(timeout) * time.Millisecond,
	}, nil
}

// replyHeader is the header of every reply to a request.
type replyHeader struct {
	xid  int32
	zxid int64
	err  int32
}

func parseReplyHeader(body []byte) (replyHeader, error) {
	d := decoder{b: body}
	h := replyHeader{xid: d.int32(), zxid: d.int64(), err: d.int32()}
	if d.err != nil {
		return replyHeader{}, fmt.Errorf("reply header: %w", d.err)
	}
	return h, nil
}

// frame prepends body's length.
func frame(body []byte) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	return append(b, body...)
}

// connectRequest builds a length-prefixed ConnectRequest that attaches to
// cred's session: int32 protocolVersion (0), int64 lastZxidSeen, int32
// timeOut (ms), int64 sessionId, buffer passwd, bool readOnly (false).
func connectRequest(cred Credentials, lastZxidSeen int64) []byte {
	ms := cred.Timeout.Milliseconds()
	ms = max(0, min(ms, math.MaxInt32))
	b := make([]byte, 0, 4+8+4+8+4+len(cred.Password)+1)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(lastZxidSeen))
	b = binary.BigEndian.AppendUint32(b, uint32(ms))
	b = binary.BigEndian.AppendUint64(b, uint64(cred.SessionID))
	b = binary.BigEndian.AppendUint32(b, uint32(len(cred.Password)))
	b = append(b, cred.Password...)
	b = append(b, 0) // readOnly
	return frame(b)
}

// closeSessionRequest builds a length-prefixed closeSession request: a request
// header (xid, type -11) and no body.
func closeSessionRequest() []byte {
	xid, op := closeSessionXid, opCloseSession // variables: -11 is no uint32 constant
	b := make([]byte, 0, 8)
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	b = binary.BigEndian.AppendUint32(b, uint32(op))
	return frame(b)
}

// readFrame reads one length-prefixed frame of at most limit bytes and returns
// its body.
func readFrame(r io.Reader, limit int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(hdr[:]))
	if n < 0 || int(n) > limit {
		return nil, fmt.Errorf("frame length %d out of range [0, %d]", n, limit)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}
