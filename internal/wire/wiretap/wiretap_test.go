package wiretap

import (
	"encoding/binary"
	"testing"

	"github.com/shepherdzk/shepherd/internal/wire/zkwire"
)

// The opcodes the tap's tests build frames with.
const (
	opCreate          = zkwire.OpCreate
	opSetData         = zkwire.OpSetData
	opMulti           = zkwire.OpMulti
	opCreate2         = zkwire.OpCreate2
	opCreateContainer = zkwire.OpCreateContainer
)

// frame is a request as go-zookeeper writes it: int32 length, int32 xid,
// int32 opcode, then (for a create) the path as int32 length + bytes.
func frame(op int32, path string) []byte {
	b := make([]byte, 16+len(path)+8)
	binary.BigEndian.PutUint32(b[0:4], uint32(len(b)-4))
	binary.BigEndian.PutUint32(b[4:8], 7)
	binary.BigEndian.PutUint32(b[8:12], uint32(op))
	binary.BigEndian.PutUint32(b[12:16], uint32(len(path)))
	copy(b[16:], path)
	return b
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// The tap fires for a create of exactly the expected path, of any create
// opcode, once; never for other requests, other paths, or torn frames.
func TestWriteTapSeesOnlyTheExpectedCreate(t *testing.T) {
	var tap Tap
	a, doneA := tap.expect("/l/_c_a-lock-")
	b, doneB := tap.expect("/l/_c_b-lock-")
	defer doneA()
	defer doneB()

	for _, f := range [][]byte{
		frame(4, "/l/_c_a-lock-"),             // a getData of the same path
		frame(opCreate, "/l/_c_a-lock"),       // a prefix of it
		frame(opCreate, "/l/_c_a-lock-x"),     // longer
		frame(opCreate, "/l/_c_a-lock-")[:20], // torn
		{0, 0, 0, 8, 0, 0, 0, 1},              // short
		frame(opCreate2, "/l/_c_c-lock-"),     // someone else's
	} {
		tap.saw(f)
	}
	if closed(a) || closed(b) {
		t.Fatal("the tap fired for a frame that is not the expected create")
	}
	tap.saw(frame(opCreate, "/l/_c_a-lock-"))
	if !closed(a) || closed(b) {
		t.Fatalf("after a's create: a fired %v (want true), b fired %v (want false)", closed(a), closed(b))
	}
	tap.saw(frame(opCreateContainer, "/l/_c_b-lock-"))
	if !closed(b) {
		t.Fatal("b's create was not seen")
	}
	tap.saw(frame(opCreate, "/l/_c_a-lock-")) // a second one: no double close
	if n := tap.waiting.Load(); n != 0 {
		t.Fatalf("%d paths still expected", n)
	}
}

// multiFrame is a multi whose first op is op on path: int32 length, int32
// xid, int32 opMulti, then the op's header (int32 type, one byte done, int32
// error) and body (the path as int32 length + bytes, then the rest).
func multiFrame(op int32, done byte, path string) []byte {
	b := make([]byte, 25+len(path)+8)
	binary.BigEndian.PutUint32(b[0:4], uint32(len(b)-4))
	binary.BigEndian.PutUint32(b[4:8], 9)
	binary.BigEndian.PutUint32(b[8:12], opMulti)
	binary.BigEndian.PutUint32(b[12:16], uint32(op))
	b[16] = done
	binary.BigEndian.PutUint32(b[17:21], 0xffffffff)
	binary.BigEndian.PutUint32(b[21:25], uint32(len(path)))
	copy(b[25:], path)
	return b
}

// A multi is seen by its first op, when that is a set or a create of the
// expected path; not when it is a check, another path, torn, or the end
// header.
func TestWriteTapSeesAMultiByItsFirstOp(t *testing.T) {
	var tap Tap
	a, doneA := tap.expect("/l/_c_a-latch-0000000001")
	defer doneA()
	for _, f := range [][]byte{
		multiFrame(13, 0, "/l/_c_a-latch-0000000001"),             // a check first
		multiFrame(opSetData, 1, "/l/_c_a-latch-0000000001"),      // the done header
		multiFrame(opSetData, 0, "/l/_c_b-latch-0000000002"),      // another path
		multiFrame(opSetData, 0, "/l/_c_a-latch-0000000001")[:24], // torn
		frame(opMulti, "/l/_c_a-latch-0000000001"),                // no op header
	} {
		tap.saw(f)
	}
	if closed(a) {
		t.Fatal("the tap fired for a frame that is not a multi setting the expected path first")
	}
	tap.saw(multiFrame(opSetData, 0, "/l/_c_a-latch-0000000001"))
	if !closed(a) {
		t.Fatal("the multi setting the path was not seen")
	}
}
