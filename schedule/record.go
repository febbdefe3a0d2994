package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/session"
)

// Record is the schedule's state as its node holds it (JSON): the last
// tick started, and whether its end was recorded.
type Record struct {
	Every   string `json:"every"`             // the interval (time.Duration's String); "" for a cron schedule
	Cron    string `json:"cron,omitempty"`    // a cron schedule's expression
	Epoch   int64  `json:"epoch_ms"`          // tick 0's due time (server clock, ms): the node's first ctime, see epochOf
	N       int64  `json:"tick"`              // the last tick started; -1: none yet
	Attempt int    `json:"attempt,omitempty"` // its attempt
	State   string `json:"state"`             // "started" or "finished"
	Leader  string `json:"leader,omitempty"`  // the candidate id that started it
	Term    int64  `json:"term,omitempty"`    // that leadership's term
	Due     int64  `json:"due_ms,omitempty"`  // when tick N was due (server clock, ms)
	Started int64  `json:"started_ms,omitempty"`
	LastOK  int64  `json:"last_ok_ms,omitempty"` // Started of the last tick that ended ok (0: none yet)
	// Outcome of a finished tick: ok, timeout: ..., cancelled: ...,
	// error: ...; of a started tick interrupted by a graceful stop past
	// its drain (WithDrain): interrupted: ... (the next leader's misfire
	// policy applies, as to any tick left started).
	Outcome string `json:"outcome,omitempty"`
}

const (
	stateStarted  = "started"
	stateFinished = "finished"
)

// Record reads the schedule's record as it is now (no sync: a read of the
// server this session talks to). A schedule that never had a leader has
// none: the error then matches ErrNoRecord. Epoch is the node's ctime.
func (s *Schedule) Record(ctx context.Context) (Record, error) {
	r, st, err := s.read(ctx)
	if errors.Is(err, zk.ErrNoNode) {
		return Record{}, fmt.Errorf("%w: %s", ErrNoRecord, s.state)
	}
	if err != nil {
		return Record{}, err
	}
	r.Epoch = epochOf(r, st)
	return r, nil
}

// epochOf is the schedule's epoch in ms: the epoch the record holds, which
// is its node's ctime when the first leader created it (its first probe
// writes it), or the ctime itself before that. A record a leader wrote back
// after it was deleted under it (see leader.load) keeps the epoch it had,
// though its node is younger.
func epochOf(r Record, st *zk.Stat) int64 {
	if r.Epoch != 0 {
		return r.Epoch
	}
	return st.Ctime
}

// read reads the record and its node's Stat.
func (s *Schedule) read(ctx context.Context) (Record, *zk.Stat, error) {
	var data []byte
	var st *zk.Stat
	err := s.sess.Do(ctx, func(ep *session.Epoch) error {
		d, stat, err := ep.Conn().Get(s.sess.Path(s.state))
		data, st = d, stat
		return err
	})
	if err != nil {
		return Record{}, nil, err
	}
	r, err := s.decode(data)
	return r, st, err
}

func (s *Schedule) decode(data []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil || (r.Every == "") == (r.Cron == "") {
		return Record{}, fmt.Errorf("%w: %s: %q", ErrBadRecord, s.state, truncate(string(data), 200))
	}
	if want := s.newRecord(); r.Every != want.Every || r.Cron != want.Cron {
		return Record{}, fmt.Errorf("%w: %s records %s, this candidate has %s", ErrIntervalMismatch, s.state, r.times(), want.times())
	}
	return r, nil
}

// newRecord is a record of this schedule's times (Every or Cron).
func (s *Schedule) newRecord() Record {
	if s.cron != nil {
		return Record{Cron: s.cron.spec}
	}
	return Record{Every: s.every.String()}
}

// times says when a record's ticks come.
func (r Record) times() string {
	if r.Cron != "" {
		return fmt.Sprintf("cron %q", r.Cron)
	}
	return "every " + r.Every
}
