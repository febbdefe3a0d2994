package zktest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// connectResponseBody encodes a ConnectResponse body the way ZooKeeper does.
func connectResponseBody(timeoutMs int32, id int64, passwd []byte, readOnly bool) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(timeoutMs))
	b = binary.BigEndian.AppendUint64(b, uint64(id))
	b = binary.BigEndian.AppendUint32(b, uint32(len(passwd)))
	b = append(b, passwd...)
	if readOnly {
		b = append(b, 1)
	}
	return b
}

var testPasswd = []byte("0123456789abcdef")

func TestWireParseConnectResponse(t *testing.T) {
	valid := connectResponseBody(4000, 0x1234, testPasswd, false)
	nullPasswd := binary.BigEndian.AppendUint32(connectResponseBody(4000, 7, nil, false)[:16], 0xffffffff)
	for _, tc := range []struct {
		name string
		body []byte
		want Credentials
		err  string
	}{
		{"valid", valid, Credentials{0x1234, testPasswd, 4 * time.Second}, ""},
		{"valid with readOnly", connectResponseBody(4000, 0x1234, testPasswd, true), Credentials{0x1234, testPasswd, 4 * time.Second}, ""},
		{"refused session", connectResponseBody(0, 0, make([]byte, 16), false), Credentials{0, make([]byte, 16), 0}, ""},
		{"null password", nullPasswd, Credentials{7, []byte{}, 4 * time.Second}, ""},
		{"empty", nil, Credentials{}, "too short"},
		{"truncated header", valid[:10], Credentials{}, "too short"},
		{"truncated password", valid[:len(valid)-1], Credentials{}, "too short"},
		{"password longer than frame", binary.BigEndian.AppendUint32(bytes.Clone(valid[:16]), 1<<30), Credentials{}, "too short"},
		{"negative password length", binary.BigEndian.AppendUint32(bytes.Clone(valid[:16]), uint32(0xfffffff0)), Credentials{}, "negative"},
		{"trailing garbage", append(bytes.Clone(valid), 1, 2), Credentials{}, "trailing"},
		{"negative timeout", connectResponseBody(-1, 1, testPasswd, false), Credentials{}, "negative timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseConnectResponse(tc.body)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want.SessionID, got.SessionID)
			require.Equal(t, tc.want.Timeout, got.Timeout)
			require.Equal(t, len(tc.want.Password), len(got.Password))
			require.True(t, bytes.Equal(tc.want.Password, got.Password))
		})
	}
}

// sniff feeds stream to a sniffer in the given chunks and returns what it
// recorded.
func sniff(stream []byte, chunks []int) []Credentials {
	var got []Credentials
	s := sniffer{record: func(c Credentials) { got = append(got, c) }}
	for _, n := range chunks {
		n = min(n, len(stream))
		s.observe(stream[:n])
		stream = stream[n:]
	}
	if len(stream) > 0 {
		s.observe(stream)
	}
	return got
}

func TestWireSnifferSplitReads(t *testing.T) {
	resp := frame(connectResponseBody(4000, 0x1234, testPasswd, false))
	// What follows the ConnectResponse on a connection: a reply frame.
	stream := append(bytes.Clone(resp), frame(make([]byte, 16))...)

	// Every way to split the stream in two, and byte by byte.
	for cut := 0; cut <= len(stream); cut++ {
		got := sniff(stream, []int{cut})
		require.Len(t, got, 1, "cut at %d", cut)
		require.Equal(t, int64(0x1234), got[0].SessionID)
		require.Equal(t, testPasswd, got[0].Password)
	}
	ones := make([]int, len(stream))
	for i := range ones {
		ones[i] = 1
	}
	require.Len(t, sniff(stream, ones), 1)

	for _, tc := range []struct {
		name   string
		stream []byte
	}{
		{"four-letter answer", []byte("imok")},
		{"huge length", append([]byte{0x7f, 0xff, 0xff, 0xff}, resp...)},
		{"negative length", append([]byte{0xff, 0xff, 0xff, 0xff}, resp...)},
		{"length below minimum", append([]byte{0, 0, 0, 3, 1, 2, 3}, resp...)},
		{"garbage body", frame([]byte("this is not a ConnectResponse!"))},
		{"refused session", frame(connectResponseBody(0, 0, make([]byte, 16), false))},
		{"truncated", resp[:len(resp)-1]},
		// Only the first frame counts: a later ConnectResponse-like frame is data.
		{"second frame", append(frame([]byte("0123456789abcdefghijklmnop")), resp...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Empty(t, sniff(tc.stream, []int{1, 2, 3}))
			require.Empty(t, sniff(tc.stream, nil))
		})
	}
}

func TestWireReadFrame(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		err  error
		msg  string
	}{
		{"empty", nil, io.EOF, ""},
		{"short prefix", []byte{0, 0}, io.ErrUnexpectedEOF, ""},
		{"short body", []byte{0, 0, 0, 5, 1, 2}, io.ErrUnexpectedEOF, ""},
		{"missing body", []byte{0, 0, 0, 5}, io.ErrUnexpectedEOF, ""},
		{"too long", []byte{0, 0, 4, 1}, nil, "out of range"},
		{"negative", []byte{0x80, 0, 0, 0}, nil, "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readFrame(bytes.NewReader(tc.in), 1024)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
			} else {
				require.ErrorContains(t, err, tc.msg)
			}
		})
	}
	body, err := readFrame(bytes.NewReader([]byte{0, 0, 0, 0}), 1024)
	require.NoError(t, err)
	require.Empty(t, body)
}

func TestWireCredentialsHidePassword(t *testing.T) {
	c := Credentials{SessionID: 0xabc, Password: []byte("s3cr3t-passw0rd!"), Timeout: time.Second}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(verb, c)
		require.NotContains(t, out, "s3cr3t", verb)
		require.NotContains(t, out, fmt.Sprint(c.Password), verb)
		require.NotContains(t, out, fmt.Sprintf("%x", c.Password), verb)
		require.Contains(t, out, "0xabc", verb)
	}
}

func TestWireConsHasSession(t *testing.T) {
	cons := " /127.0.0.1:47840[1](queued=0,recved=1,sent=1,sid=0x100009821130000,lop=SESS,est=1,to=4000)\n" +
		" /127.0.0.1:47846[0](queued=0,recved=1,sent=0)\n"
	require.True(t, consHasSession(cons, 0x100009821130000))
	require.False(t, consHasSession(cons, 0x10000982113000))   // a prefix of the listed ID
	require.False(t, consHasSession(cons, 0x1000098211300001)) // the listed ID is a prefix
	require.True(t, consHasSession("(sid=0x5)", 5))
	require.False(t, consHasSession("", 5))
}

func FuzzParseConnectResponse(f *testing.F) {
	f.Add(connectResponseBody(4000, 0x1234, testPasswd, false), uint8(3))
	f.Add(connectResponseBody(4000, 0x1234, testPasswd, true), uint8(0))
	f.Add(connectResponseBody(0, 0, nil, false), uint8(1))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint8(2))
	f.Add([]byte("imok"), uint8(7))
	f.Fuzz(func(t *testing.T, body []byte, chunk uint8) {
		c, err := parseConnectResponse(body)
		// The sniffer, fed the framed body in chunks, agrees with the parser.
		stream := frame(body)
		var chunks []int
		for range len(stream) {
			chunks = append(chunks, int(chunk)%7+1)
		}
		got := sniff(stream, chunks)
		if err != nil || c.SessionID == 0 || len(body) > maxConnectResponse {
			require.Empty(t, got)
		} else {
			require.Len(t, got, 1)
			require.Equal(t, c.SessionID, got[0].SessionID)
			require.Equal(t, c.Password, got[0].Password)
		}
		// readFrame copes with anything.
		_, _ = readFrame(bytes.NewReader(body), maxConnectResponse)
		_, _ = parseReplyHeader(body)
	})
}
