package zkwire_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/wire/zkwire"
)

// reply is a server frame after the ConnectResponse: xid, zxid, err, body.
func reply(xid int32, body int) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(xid))
	b = binary.BigEndian.AppendUint64(b, 7)
	b = binary.BigEndian.AppendUint32(b, 0)
	return zkwire.Frame(append(b, make([]byte, body)...))
}

// The answers in a stream are the ConnectResponse and every reply but a
// notification, however the stream is split into reads.
func TestAnswers(t *testing.T) {
	var stream []byte
	stream = append(stream, zkwire.Frame(make([]byte, 36))...) // ConnectResponse
	stream = append(stream, reply(-2, 0)...)                   // a ping's reply
	stream = append(stream, reply(zkwire.NotificationXid, 40)...)
	stream = append(stream, reply(5, 300)...)
	stream = append(stream, reply(zkwire.NotificationXid, 0)...)
	stream = append(stream, reply(-8, 0)...) // setWatches'
	stream = append(stream, reply(6, 1)...)
	const want = 5
	for size := 1; size <= len(stream); size++ {
		var a zkwire.Answers
		got := 0
		for b := stream; len(b) > 0; {
			k := min(size, len(b))
			got += a.Feed(b[:k])
			b = b[k:]
		}
		require.Equal(t, want, got, "reads of %d bytes", size)
	}
	// Each answer is counted in the read that completes its head.
	var a zkwire.Answers
	first := len(zkwire.Frame(make([]byte, 36)))
	require.Equal(t, 0, a.Feed(stream[:3]))
	require.Equal(t, 1, a.Feed(stream[3:first+7]), "the ConnectResponse's length is read, the ping reply's xid not yet")
	require.Equal(t, 1, a.Feed(stream[first+7:first+8]), "the ping reply's xid")
}
