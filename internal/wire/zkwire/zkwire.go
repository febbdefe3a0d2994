// Package zkwire is the part of ZooKeeper's wire format (jute, big-endian)
// that shepherd reads and writes itself, below go-zookeeper: frame splitting,
// a request's header and the path it names, and the connect handshake. The
// session's write tap and connection tracking use it, and so does zktest to
// attach to and end sessions.
//
// Every frame on a ZooKeeper connection is an int32 length followed by that
// many bytes. Functions named for a frame take it with its length prefix;
// those named for a body take it without.
package zkwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// Opcodes (a request header's type) that shepherd looks for. Untyped, so
// they compare with an int32 opcode and encode as a uint32 alike.
const (
	OpCreate          = 1
	OpExists          = 3
	OpGetData         = 4
	OpSetData         = 5
	OpGetChildren     = 8
	OpGetChildren2    = 12
	OpMulti           = 14
	OpCreate2         = 15
	OpCreateContainer = 19
	OpCreateTTL       = 21
	// OpCloseSession is negative: it compares with an int32 opcode, and
	// encodes as a uint32 only through an int32 variable.
	OpCloseSession = -11
)

// RequestOp returns the opcode of the request in frame (length prefix
// included: int32 length, int32 xid, int32 opcode); ok is false for a frame
// too short for a request header.
func RequestOp(frame []byte) (op int32, ok bool) {
	if len(frame) < 12 {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(frame[8:12])), true
}

// Bounds of a ConnectResponse body.
const (
	// MinConnectResponse is the body of a ConnectResponse with an empty
	// password: protocolVersion, timeOut, sessionId, password length.
	MinConnectResponse = 4 + 4 + 8 + 4
	// MaxConnectResponse bounds what is accepted as a ConnectResponse body.
	// A real one is 37 bytes (a 16-byte password); the bound keeps a stream
	// that is not ZooKeeper's from making a reader buffer much.
	MaxConnectResponse = 1024
	// ConnectHeadLen is how many bytes of a connection's first server frame,
	// length prefix included, hold the ConnectResponse's fixed fields before
	// the password: int32 length, int32 protocolVersion, int32 timeOut, int64
	// sessionId. See ParseConnectHead.
	ConnectHeadLen = 4 + 4 + 4 + 8
)

// errShortFrame is the error of a decode that ran past the end of a frame.
var errShortFrame = errors.New("frame too short")

// Frame prepends body's length.
func Frame(body []byte) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), uint32(len(body)))
	return append(b, body...)
}

// ReadFrame reads one length-prefixed frame of at most limit bytes from r and
// returns its body. A stream that ends inside the frame is
// io.ErrUnexpectedEOF; one that ends before it, io.EOF.
func ReadFrame(r io.Reader, limit int) ([]byte, error) {
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

// buffer reads a jute buffer: an int32 length (-1 for null, read as nil) and
// the bytes, which alias the body.
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

// RequestPath returns the path of the request in frame (length prefix
// included), as go-zookeeper writes one per Write: int32 length, int32 xid,
// int32 opcode, then for a create (any of its four opcodes), a setData or a
// getData the path as int32 length + bytes; for a multi, its first op's
// header (int32 type, one byte done, int32 error) and then that op, when it
// is a create or a setData. op is the frame's opcode (OpMulti for a multi);
// ok is false for any other request, a multi led by another op, or a frame
// too short for what its header announces. path aliases frame.
func RequestPath(frame []byte) (op int32, path []byte, ok bool) {
	if len(frame) < 16 {
		return 0, nil, false
	}
	at := 12 // where the path's length is
	op, _ = RequestOp(frame)
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL, OpSetData, OpGetData:
	case OpMulti:
		if len(frame) < 25 || frame[16] != 0 {
			return 0, nil, false
		}
		switch binary.BigEndian.Uint32(frame[12:16]) {
		case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL, OpSetData:
		default:
			return 0, nil, false
		}
		at = 21
	default:
		return 0, nil, false
	}
	if path, ok = pathAt(frame, at); !ok {
		return 0, nil, false
	}
	return op, path, true
}

// pathAt returns the path written at frame[at:] as int32 length + bytes;
// ok is false for an empty one or one that runs past the frame.
func pathAt(frame []byte, at int) (path []byte, ok bool) {
	if at+4 > len(frame) {
		return nil, false
	}
	n := int(int32(binary.BigEndian.Uint32(frame[at : at+4])))
	if n <= 0 || at+4+n > len(frame) {
		return nil, false
	}
	return frame[at+4 : at+4+n], true
}

// ChildrenPath returns the path of the listing in frame (length prefix
// included): a getChildren or getChildren2 request (go-zookeeper's Children
// and ChildrenW), whose body is int32 xid, int32 opcode, the path as int32
// length + bytes, then the watch flag. ok is false for any other request
// or a torn frame. path aliases frame.
func ChildrenPath(frame []byte) (path []byte, ok bool) {
	if op, ok := RequestOp(frame); !ok || (op != OpGetChildren && op != OpGetChildren2) {
		return nil, false
	}
	return pathAt(frame, 12)
}

// ConnectRequest is the first frame a client sends on a connection. A
// SessionID of 0 asks for a new session; otherwise the connection reattaches
// to that session, given its password.
type ConnectRequest struct {
	LastZxidSeen int64
	Timeout      time.Duration // the session timeout asked for, sent in whole milliseconds
	SessionID    int64
	Password     []byte
	ReadOnly     bool
}

// Encode returns r as a length-prefixed frame: int32 protocolVersion (0),
// int64 lastZxidSeen, int32 timeOut (ms, clamped to [0, MaxInt32]), int64
// sessionId, buffer passwd, bool readOnly.
func (r ConnectRequest) Encode() []byte {
	ms := r.Timeout.Milliseconds()
	ms = max(0, min(ms, math.MaxInt32))
	b := make([]byte, 0, 4+8+4+8+4+len(r.Password)+1)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(r.LastZxidSeen))
	b = binary.BigEndian.AppendUint32(b, uint32(ms))
	b = binary.BigEndian.AppendUint64(b, uint64(r.SessionID))
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.Password)))
	b = append(b, r.Password...)
	ro := byte(0)
	if r.ReadOnly {
		ro = 1
	}
	b = append(b, ro)
	return Frame(b)
}

// ConnectResponse is a server's answer to a ConnectRequest. A SessionID of 0
// is how a server refuses to reattach a session (expired, or a wrong
// password).
type ConnectResponse struct {
	ProtocolVersion int32
	Timeout         time.Duration // the negotiated session timeout
	SessionID       int64
	Password        []byte // aliases the body ParseConnectResponse was given
	ReadOnly        bool
}

// ParseConnectResponse decodes the body of a ConnectResponse frame (without
// its length prefix): int32 protocolVersion, int32 timeOut (ms), int64
// sessionId, buffer passwd, and an optional bool readOnly.
func ParseConnectResponse(body []byte) (ConnectResponse, error) {
	d := decoder{b: body}
	version := d.int32()
	timeout := d.int32()
	id := d.int64()
	passwd := d.buffer()
	if d.err != nil {
		return ConnectResponse{}, fmt.Errorf("ConnectResponse: %w", d.err)
	}
	if len(d.b) > 1 { // at most the readOnly flag may follow
		return ConnectResponse{}, fmt.Errorf("ConnectResponse: %d unexpected trailing bytes", len(d.b))
	}
	if timeout < 0 {
		return ConnectResponse{}, fmt.Errorf("ConnectResponse: negative timeout %d", timeout)
	}
	return ConnectResponse{
		ProtocolVersion: version,
		Timeout:         time.Duration(timeout) * time.Millisecond,
		SessionID:       id,
		Password:        passwd,
		ReadOnly:        len(d.b) == 1 && d.b[0] != 0,
	}, nil
}

// ParseConnectHead reads the negotiated session timeout and the session ID
// from head, the first ConnectHeadLen bytes a server sent on a connection
// (the ConnectResponse's length prefix and fixed fields). It does not check
// them: a caller that needs a checked response reads the whole frame and
// uses ParseConnectResponse.
func ParseConnectHead(head *[ConnectHeadLen]byte) (timeout time.Duration, sessionID int64) {
	timeout = time.Duration(binary.BigEndian.Uint32(head[8:12])) * time.Millisecond
	return timeout, int64(binary.BigEndian.Uint64(head[12:20]))
}

// ReplyHeader is the header of every reply to a request.
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  int32 // ZooKeeper's error code; 0 for success
}

// ParseReplyHeader decodes the header at the start of a reply body.
func ParseReplyHeader(body []byte) (ReplyHeader, error) {
	d := decoder{b: body}
	h := ReplyHeader{Xid: d.int32(), Zxid: d.int64(), Err: d.int32()}
	if d.err != nil {
		return ReplyHeader{}, fmt.Errorf("reply header: %w", d.err)
	}
	return h, nil
}

// CloseSessionRequest returns a length-prefixed closeSession request: a
// request header (xid, type -11) and no body.
func CloseSessionRequest(xid int32) []byte {
	op := int32(OpCloseSession) // a variable: -11 is no uint32 constant
	b := make([]byte, 0, 8)
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	b = binary.BigEndian.AppendUint32(b, uint32(op))
	return Frame(b)
}

// NotificationXid is the xid of a watch notification: the one server frame
// after the ConnectResponse that answers no request.
const NotificationXid = -1

// Answers finds the frames in a client connection's stream from the server,
// fed as it is read (split anywhere), and counts those that answer a
// request: the ConnectResponse, then every reply but a watch notification.
// A server answers a connection's requests in the order they were sent, so
// the n-th answer is the answer to the n-th request written. The zero value
// is ready for a new connection's stream.
type Answers struct {
	head   [8]byte // the frame's length and, after the first, its xid
	headN  int
	remain int // bytes of the current frame still to come
	frames int // frames whose head has been read
}

// Feed reads b, the next bytes of the stream, and returns how many answers
// begin in it (an answer counts once its head, length and xid, is read).
func (a *Answers) Feed(b []byte) (answers int) {
	for len(b) > 0 {
		if a.remain > 0 {
			k := min(a.remain, len(b))
			a.remain -= k
			b = b[k:]
			continue
		}
		need := 8 // length, xid
		if a.frames == 0 {
			need = 4 // the ConnectResponse has no reply header
		}
		k := copy(a.head[a.headN:need], b)
		a.headN += k
		b = b[k:]
		if a.headN < need {
			break
		}
		a.headN = 0
		a.frames++
		// A malformed length is go-zookeeper's to fail; the count stops
		// mattering then.
		a.remain = max(int(int32(binary.BigEndian.Uint32(a.head[:4])))-(need-4), 0)
		if need == 4 || int32(binary.BigEndian.Uint32(a.head[4:8])) != NotificationXid {
			answers++
		}
	}
	return answers
}
