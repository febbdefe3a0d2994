package zkwire

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var testPasswd = []byte("0123456789abcdef")

// Moved from zktest's TestWireRequests: the requests zktest sends and the
// reply header it reads.
func TestRequests(t *testing.T) {
	req := ConnectRequest{LastZxidSeen: 42, Timeout: 1500 * time.Millisecond, SessionID: -2, Password: testPasswd}.Encode()
	body, err := ReadFrame(bytes.NewReader(req), 1024)
	require.NoError(t, err)
	d := decoder{b: body}
	require.Equal(t, int32(0), d.int32())
	require.Equal(t, int64(42), d.int64())
	require.Equal(t, int32(1500), d.int32())
	require.Equal(t, int64(-2), d.int64())
	require.Equal(t, testPasswd, d.buffer())
	require.Equal(t, []byte{0}, d.next(1)) // readOnly false
	require.NoError(t, d.err)
	require.Empty(t, d.b)

	// A timeout beyond int32 milliseconds is clamped, not wrapped negative.
	body, err = ReadFrame(bytes.NewReader(ConnectRequest{Timeout: 1e6 * time.Hour}.Encode()), 1024)
	require.NoError(t, err)
	require.Equal(t, uint32(1<<31-1), binary.BigEndian.Uint32(body[12:]))

	require.Equal(t, []byte{0, 0, 0, 8, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xf5}, CloseSessionRequest(1))

	h, err := ParseReplyHeader([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0xff, 0xff, 0xff, 0x8f})
	require.NoError(t, err)
	require.Equal(t, ReplyHeader{Xid: 1, Zxid: 9, Err: -113}, h)
	_, err = ParseReplyHeader([]byte{0, 0, 0, 1})
	require.Error(t, err)
}

// A ConnectRequest encoded is a ConnectResponse's layout but for
// lastZxidSeen: parse what a server would send back, and its head.
func TestConnectResponse(t *testing.T) {
	body := binary.BigEndian.AppendUint32(nil, 0)
	body = binary.BigEndian.AppendUint32(body, 4000)
	body = binary.BigEndian.AppendUint64(body, 0x1234)
	body = binary.BigEndian.AppendUint32(body, uint32(len(testPasswd)))
	body = append(body, testPasswd...)
	r, err := ParseConnectResponse(body)
	require.NoError(t, err)
	require.Equal(t, ConnectResponse{Timeout: 4 * time.Second, SessionID: 0x1234, Password: testPasswd}, r)
	r, err = ParseConnectResponse(append(bytes.Clone(body), 1))
	require.NoError(t, err)
	require.True(t, r.ReadOnly)

	var head [ConnectHeadLen]byte
	copy(head[:], Frame(body))
	timeout, sid := ParseConnectHead(&head)
	require.Equal(t, 4*time.Second, timeout)
	require.Equal(t, int64(0x1234), sid)
}

// request is a frame of op whose body starts with pre and then path as
// int32 length + bytes, and some more.
func request(op int32, pre []byte, path string) []byte {
	b := binary.BigEndian.AppendUint32(nil, 7) // xid
	b = binary.BigEndian.AppendUint32(b, uint32(op))
	b = append(b, pre...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
	b = append(b, path...)
	return Frame(append(b, 0, 0, 0, 0, 0, 0, 0, 0))
}

// multiHeader is a multi's op header: int32 type, one byte done, int32 error.
func multiHeader(op int32, done byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(op))
	b = append(b, done)
	return binary.BigEndian.AppendUint32(b, 0xffffffff)
}

func TestRequestPath(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame []byte
		op    int32
		ok    bool
	}{
		{"create", request(OpCreate, nil, "/a"), OpCreate, true},
		{"create2", request(OpCreate2, nil, "/a"), OpCreate2, true},
		{"createContainer", request(OpCreateContainer, nil, "/a"), OpCreateContainer, true},
		{"createTTL", request(OpCreateTTL, nil, "/a"), OpCreateTTL, true},
		{"setData", request(OpSetData, nil, "/a"), OpSetData, true},
		{"getData", request(OpGetData, nil, "/a"), OpGetData, true},
		{"delete", request(2, nil, "/a"), 0, false},
		{"multi of a set", request(OpMulti, multiHeader(OpSetData, 0), "/a"), OpMulti, true},
		{"multi of a create", request(OpMulti, multiHeader(OpCreate, 0), "/a"), OpMulti, true},
		{"multi of a check", request(OpMulti, multiHeader(13, 0), "/a"), 0, false},
		{"multi of a getData", request(OpMulti, multiHeader(OpGetData, 0), "/a"), 0, false},
		{"multi's done header", request(OpMulti, multiHeader(OpSetData, 1), "/a"), 0, false},
		{"multi without op header", request(OpMulti, nil, "/a"), 0, false},
		{"torn", request(OpCreate, nil, "/abc")[:18], 0, false},
		{"short", []byte{0, 0, 0, 8, 0, 0, 0, 1}, 0, false},
		{"empty path", request(OpCreate, nil, ""), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op, path, ok := RequestPath(tc.frame)
			require.Equal(t, tc.ok, ok)
			if ok {
				require.Equal(t, tc.op, op)
				require.Equal(t, "/a", string(path))
			}
		})
	}
}

func TestChildrenPath(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame []byte
		ok    bool
	}{
		{"getChildren", request(OpGetChildren, nil, "/a"), true},
		{"getChildren2", request(OpGetChildren2, nil, "/a"), true},
		{"getData", request(OpGetData, nil, "/a"), false},
		{"create", request(OpCreate, nil, "/a"), false},
		{"torn", request(OpGetChildren2, nil, "/abc")[:18], false},
		{"short", []byte{0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 12}, false},
		{"empty path", request(OpGetChildren2, nil, ""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, ok := ChildrenPath(tc.frame)
			require.Equal(t, tc.ok, ok)
			if ok {
				require.Equal(t, "/a", string(path))
			}
		})
	}
}

func FuzzRequestPath(f *testing.F) {
	f.Add(request(OpCreate, nil, "/a"))
	f.Add(request(OpMulti, multiHeader(OpSetData, 0), "/a"))
	f.Add([]byte{0, 0, 0, 8, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, frame []byte) {
		if _, path, ok := RequestPath(frame); ok && len(path) == 0 {
			t.Fatal("an empty path reported")
		}
		if path, ok := ChildrenPath(frame); ok && len(path) == 0 {
			t.Fatal("an empty listing path reported")
		}
		_, _ = ParseConnectResponse(frame)
		_, _ = ParseReplyHeader(frame)
		_, _ = ReadFrame(bytes.NewReader(frame), MaxConnectResponse)
	})
}
