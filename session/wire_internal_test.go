package session

import "github.com/shepherdzk/shepherd/internal/zkwire"

// The opcodes the write tap's tests build frames with (pipeline_internal_test.go).
const (
	opCreate          = zkwire.OpCreate
	opGetData         = zkwire.OpGetData
	opSetData         = zkwire.OpSetData
	opMulti           = zkwire.OpMulti
	opCreate2         = zkwire.OpCreate2
	opCreateContainer = zkwire.OpCreateContainer
)
