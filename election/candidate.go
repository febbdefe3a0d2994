package election

// What a candidate says of itself (issue 38): its priority and attributes,
// and the value a leader proclaims, kept in its node's data after its id.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"time"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/election/internal/handover"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
)

// candidateSeparator separates a candidate's id from the rest of its data (a
// NUL, which no id has: see ValidateID).
const candidateSeparator = layout.CandidateSeparator

// MaxAttributesLen bounds a candidate's attributes and a proclaimed value,
// as encoded in its node (keys, values and JSON's quoting).
const MaxAttributesLen = 8 << 10

// candidateData is the JSON after candidateSeparator.
type candidateData struct {
	Priority   int               `json:"priority,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
	Value      string            `json:"value,omitempty"`
	// HandOverTo, in a non-fair leader's node, names the candidate the
	// leader is handing over to (its registration node): the racers watch
	// the leader's node, so the successor learns it will be the one let
	// through before the node goes (see handover.Said.HandOverTo).
	HandOverTo string `json:"handover_to,omitempty"`
}

// zero reports whether d says nothing (the node then holds the bare id).
func (d candidateData) zero() bool {
	return d.Priority == 0 && len(d.Attributes) == 0 && d.Value == "" && d.HandOverTo == ""
}

// encodeCandidate is the data of a candidate's node: its id, and d when it
// says anything (a candidate with nothing more writes its bare id, as
// before, so Curator's LeaderLatch shows the id it always showed).
func encodeCandidate(id string, d candidateData) []byte {
	if d.zero() {
		return []byte(id)
	}
	b, _ := json.Marshal(d) // strings and ints only: it cannot fail
	return append([]byte(id+candidateSeparator), b...)
}

// parseCandidate reads a candidate's node data (an operator's revocation
// request stripped): its id and what else it says. Data of another library
// (a Curator participant's id) is all id.
func parseCandidate(data []byte) (string, candidateData) {
	data = line.StripRevoke(data)
	i := bytes.Index(data, []byte(candidateSeparator))
	if i < 0 {
		return string(data), candidateData{}
	}
	var d candidateData
	if json.Unmarshal(data[i+len(candidateSeparator):], &d) != nil {
		return string(data[:i]), candidateData{}
	}
	return string(data[:i]), d
}

// attrsKey is attributes in a comparable form (JSON, its keys sorted), as
// Leader and Participant keep them: "" for none.
func attrsKey(a map[string]string) string {
	if len(a) == 0 {
		return ""
	}
	b, _ := json.Marshal(a)
	return string(b)
}

// attrsOf decodes attrsKey.
func attrsOf(key string) map[string]string {
	if key == "" {
		return nil
	}
	var a map[string]string
	_ = json.Unmarshal([]byte(key), &a)
	return a
}

// leaderOf fills l's ID, Priority, Value and attributes from its node data.
func leaderOf(l Leader, data []byte) Leader {
	id, d := parseCandidate(data)
	l.ID, l.Priority, l.Value, l.attrs = id, d.Priority, d.Value, attrsKey(d.Attributes)
	return l
}

// Attributes are the leader's attributes (WithAttributes), a copy; nil when
// it has none.
func (l Leader) Attributes() map[string]string { return attrsOf(l.attrs) }

// Attributes are the candidate's attributes (WithAttributes), a copy; nil
// when it has none.
func (p Participant) Attributes() map[string]string { return attrsOf(p.attrs) }

// WithPriority sets the candidate's priority (default 0; higher is
// better): HandOver to "" picks the candidate of highest priority, and a
// leader with WithPreferredLeader yields to one of higher priority than its
// own. A deploy that should move leadership to the new version gives newer
// versions higher priorities.
func WithPriority(p int) Option { return func(c *config) { c.ext.priority = p } }

// WithAttributes sets free-form attributes the candidate shows to others
// (Participants, Observe, `shepherd status`), such as its version or zone.
// Keys must be non-empty; keys and values valid UTF-8; all of them at most
// MaxAttributesLen bytes, encoded. The map is copied.
func WithAttributes(attrs map[string]string) Option {
	return func(c *config) {
		for k, v := range attrs {
			if k == "" || !utf8.ValidString(k) || !utf8.ValidString(v) {
				c.setErr(fmt.Errorf("election: %w: attribute %q=%q (keys non-empty, keys and values UTF-8)", ErrInvalidArgument, k, v))
				return
			}
		}
		if n := len(attrsKey(attrs)); n > MaxAttributesLen {
			c.setErr(fmt.Errorf("election: %w: attributes of %d bytes (at most %d)", ErrInvalidArgument, n, MaxAttributesLen))
			return
		}
		c.ext.attrs = maps.Clone(attrs)
	}
}

// nodeData is what the candidate's node holds (see encodeCandidate).
func (e *Election) nodeData() []byte {
	return encodeCandidate(e.id, candidateData{Priority: e.ext.priority, Attributes: e.ext.attrs})
}

// dataWith is what the candidate's node holds, saying also value (a
// proclaimed one) and handOverTo (see candidateData): handover.Config.Data.
func (e *Election) dataWith(value, handOverTo string) []byte {
	return encodeCandidate(e.id, candidateData{Priority: e.ext.priority, Attributes: e.ext.attrs, Value: value,
		HandOverTo: handOverTo})
}

// said is what a candidate's node data says, of what a handover reads
// (handover.Config.Said).
func said(data []byte) handover.Said {
	id, d := parseCandidate(data)
	return handover.Said{ID: id, Priority: d.Priority, HandOverTo: d.HandOverTo}
}

// participantOf is the participant whose node (full path, its Stat st)
// holds data.
func participantOf(node string, seq int64, st *zk.Stat, data []byte) Participant {
	id, d := parseCandidate(data)
	return Participant{ID: id, Node: node, Seq: seq, SessionID: st.EphemeralOwner, Priority: d.Priority,
		attrs: attrsKey(d.Attributes), Joined: time.UnixMilli(st.Ctime)}
}

// ParseCandidate reads what a candidate's node holds (as admin.Inspect's
// Entry.Data shows it): its id, priority and attributes (in the returned
// Participant's ID, Priority and Attributes). ok is false when the data is
// an id alone (a candidate without them, or another library's).
func ParseCandidate(data []byte) (p Participant, ok bool) {
	id, d := parseCandidate(data)
	return Participant{ID: id, Priority: d.Priority, attrs: attrsKey(d.Attributes)}, !d.zero()
}
