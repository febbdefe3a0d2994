package hold

import (
	"fmt"
	"log/slog"

	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/zkdelete"
)

// The holder's side of an operator's revocation (the operator's: package
// recipe's Revoke and AskRevoke). The request travels in the hold's own
// node's data (see layout.RevokeSuffix); the hold's own-node watch reads it.

// RevokeRequested is closed when an operator asks the holder to let go
// (AskRevoke, shepherd revoke -ask): release when the work allows. The hold
// stays held until then (an operator may force it later, see Revoke).
func (h *Hold) RevokeRequested() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return chanLocked(&h.revoke)
}

// sawData acts on the data of the hold's node, as its own watch read it.
// It reports whether the hold has ended.
func (h *Hold) sawData(node string, data []byte) bool {
	switch _, mode := layout.RevokeRequest(data); mode {
	case layout.RevokeAsk:
		h.mu.Lock()
		first := !h.asked
		if first {
			h.asked = true
			signalLocked(&h.revoke)
		}
		h.mu.Unlock()
		if first {
			h.log(slog.LevelInfo, "revocation requested by an operator", "revoked_node", node)
		}
	case layout.RevokeForce:
		h.lose(fmt.Errorf("%w: hold on %s", ErrRevoked, node))
		h.mu.Lock()
		ep, recipe, attached := h.ep, h.recipe, h.attached
		h.mu.Unlock()
		// Told first (above, synchronously), then the nodes go: whoever
		// is granted at their deletion is granted after.
		zkdelete.Start(false, h.sess, recipe, ep, h.guard, h.nodes, attached, nil)
		return true
	}
	return false
}
