package observe

// The kinds of events of handovers (issue 38), numbered after the kinds
// above.

// HandedOver: an election's leader handed leadership over, or tried to
// (Term: its term; Successor, Reason, Outcome; Took: from the handover's
// start to its end). Reason is "directed" (Leadership.HandOver), "yield" (a
// preferred-leader policy), "stop" (Run ending, HandOverOnStop) or
// "operator" (shepherd handover); Outcome is "handed_over", "refused" (the
// way could not be cleared: leadership kept), "not_taken" (the successor
// did not take it in time: the election went on as after a resign),
// "no_candidate" or "failed" (leadership ended otherwise meanwhile).
const HandedOver = TickCaughtUp + 1

// handoverKindName names the handover kinds (see RecipeEventKind.String).
func handoverKindName(k RecipeEventKind) (string, bool) {
	switch k {
	case HandedOver:
		return "handed_over", true
	}
	return "", false
}
