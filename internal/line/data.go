package line

import (
	"bytes"
	"fmt"

	"github.com/shepherdzk/shepherd/internal/layout"
)

// A holder's data in its node, and an operator's revocation request after
// it (see layout.RevokeSuffix).

// StripRevoke returns a node's data as its holder wrote it (without an
// operator's revocation request).
func StripRevoke(data []byte) []byte {
	d, _ := layout.RevokeRequest(data)
	return d
}

// CheckData checks a holder's data (WithData of a recipe): at most
// MaxDataLen bytes, and without what marks an operator's revocation request.
func CheckData(data []byte) error {
	if len(data) > MaxDataLen {
		return fmt.Errorf("%w: data of %d bytes (at most %d)", ErrInvalidArgument, len(data), MaxDataLen)
	}
	if bytes.Contains(data, []byte(layout.RevokeSuffix)) {
		return fmt.Errorf("%w: data contains %q, which marks an operator's revocation request", ErrInvalidArgument, layout.RevokeSuffix)
	}
	return nil
}
