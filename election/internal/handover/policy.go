package handover

// The policy of handovers, as the election's options set it (issue 38).

import "time"

// Policy is what the election's options of handovers set.
type Policy struct {
	// Timeout bounds each wait of a handover (0: the session timeout).
	Timeout time.Duration
	// OnStop: Run hands over when its ctx ends while leading, first
	// waiting up to StopWait for a candidate of higher priority.
	OnStop   bool
	StopWait time.Duration
	// YieldWindow, when above 0, is WithPreferredLeader's window.
	YieldWindow time.Duration
}

// timeout is the bound of each wait of a handover.
func (h *Handovers) timeout() time.Duration {
	cfg := h.cfg()
	if cfg.Policy.Timeout > 0 {
		return cfg.Policy.Timeout
	}
	return cfg.Sess.Timeout()
}
