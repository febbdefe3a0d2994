// Package handover is an election's handover: leadership moved, while the
// leader still leads, to a chosen successor that leads next, no other
// candidate in between (issue 38; the design: docs/handover.md).
//
// It holds the handover's whole course and nothing else of the election:
// the record that announces a handover (the ephemeral node "handover"
// under the election's path, and each candidate's watch of it); the
// successor chosen (pick); the way to it cleared (in the fair layout the
// candidates between step aside, in the non-fair one the race is reserved
// for the successor and every candidate registers to be named); and what
// starts one: the leader's own call (HandOver), an operator's request, a
// yield to a candidate of higher priority (WithPreferredLeader), Run's
// stop (HandOverOnStop).
//
// Package election imports it, never the other way: what a handover needs
// of the candidate, it asks the candidate given at New (Candidate: its
// values, Config, and what it does), and of a held leadership, it is given
// at each grant (Leadership). Those are the seam; the
// election's public API (Leadership.HandOver, RequestHandOver, the options
// and the errors) stays in package election and calls in.
package handover
