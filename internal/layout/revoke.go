package layout

import "bytes"

// An operator's revocation request travels in the hold's own node: its
// data, followed by RevokeSuffix and the mode (RevokeAsk, RevokeForce). The
// suffix starts with a NUL, which no id has, so that no holder's own data
// is taken for a request; the holder's data stays readable (status shows
// it, stripped).
const (
	RevokeSuffix = "\x00shepherd:revoke="
	RevokeAsk    = "ask"
	RevokeForce  = "force"
)

// RevokeRequest returns a node's data without a revocation request, and the
// request's mode ("" when none).
func RevokeRequest(data []byte) (holder []byte, mode string) {
	i := bytes.LastIndex(data, []byte(RevokeSuffix))
	if i < 0 {
		return data, ""
	}
	switch m := string(data[i+len(RevokeSuffix):]); m {
	case RevokeAsk, RevokeForce:
		return data[:i], m
	}
	return data, ""
}
