package election

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/construct"
	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/session"
)

// Leader returns the current leader of the election at the candidate's path,
// or ErrNoLeader.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	return leaderAt(ctx, e.sess, e.path)
}

// Participants lists the candidates in line order (the leader first). In
// non-fair mode: the leader, then the registered candidates (see
// docs/handover.md), oldest first.
func (e *Election) Participants(ctx context.Context) ([]Participant, error) {
	var out []Participant
	err := e.sess.Do(ctx, func(ep *session.Epoch) error {
		out = out[:0]
		if !e.fair {
			var err error
			out, err = e.nonFairParticipants(ep)
			return err
		}
		ms, err := e.list(ep)
		if err != nil {
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			return err
		}
		for _, m := range ms {
			data, st, err := ep.Conn().Get(e.path + "/" + m.name)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return err
			}
			p := participantOf(e.path+"/"+m.name, m.seq, st, data)
			p.Leader = len(out) == 0
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, err // op may still run: do not read out
	}
	return out, nil
}

// Validate confirms, after a sync with the leader of the ensemble, that this
// candidate still leads (see Leadership.Validate): its node exists, belongs to
// its current session and heads the line. Call it right before a critical
// step. It returns ErrNotLeader when not leading.
func (e *Election) Validate(ctx context.Context) error {
	e.mu.Lock()
	l := e.leading
	e.mu.Unlock()
	if l == nil {
		return ErrNotLeader
	}
	return l.Validate(ctx)
}

func leaderAt(ctx context.Context, sess *session.Session, path string) (Leader, error) {
	var l Leader
	err := sess.Do(ctx, func(ep *session.Epoch) error {
		var err error
		l, err = readLeader(ep, path)
		return err
	})
	if err != nil {
		return Leader{}, err // op may still run: do not read l
	}
	return l, nil
}

// readLeader reads who leads at path, in either mode.
func readLeader(ep *session.Epoch, path string) (Leader, error) {
	l, _, err := leaderAmong(ep, path, nil, false)
	return l, err
}

// leaderAmong reads who leads at path, in either mode, looking first among
// names when not nil (path's children as just listed), then listing again
// while the head it finds keeps leaving. With watch, the leader's node is
// read with a watch (it fires when the leader proclaims, or goes).
func leaderAmong(ep *session.Epoch, path string, names []string, watch bool) (Leader, <-chan zk.Event, error) {
	for range 10 {
		if names == nil {
			var err error
			names, _, err = ep.Conn().Children(path)
			if errors.Is(err, zk.ErrNoNode) {
				return Leader{}, nil, ErrNoLeader
			}
			if err != nil {
				return Leader{}, nil, err
			}
		}
		head, best := "", int64(0)
		for _, n := range names {
			if n == leaderChild {
				head = n
				break
			}
			if m, ok := parseLatch(n); ok && (head == "" || m.seq < best) {
				head, best = n, m.seq
			}
		}
		if head == "" {
			return Leader{}, nil, ErrNoLeader
		}
		var data []byte
		var st *zk.Stat
		var ch <-chan zk.Event
		var err error
		if watch {
			data, st, ch, err = ep.Conn().GetW(path + "/" + head)
		} else {
			data, st, err = ep.Conn().Get(path + "/" + head)
		}
		if errors.Is(err, zk.ErrNoNode) {
			names = nil
			continue // it just left: look again
		}
		if err != nil {
			return Leader{}, nil, err
		}
		return leaderOf(Leader{Term: Term(st.Czxid), Node: path + "/" + head, SessionID: st.EphemeralOwner}, data), ch, nil
	}
	return Leader{}, nil, fmt.Errorf("election: leader of %s keeps changing", path)
}

// Observe reports the leader of the election at path (in either mode) each
// time it changes, for processes that watch without taking part: first the
// current leader, then every change (Leader{} when there is none). The channel
// is closed when ctx ends or the session is closed. Watches, not polling.
func Observe(ctx context.Context, sess *session.Session, path string) (<-chan Leader, error) {
	if err := construct.Check("election", sess, path); err != nil {
		return nil, err
	}
	full := sess.Path(path)
	out := make(chan Leader)
	go watchLeaders(ctx, sess, full, out)
	return out, nil
}

// watchLeaders is Observe's goroutine: it sends on out the leader of the
// election at full, first and at each change, and closes out when ctx ends
// or the session is closed.
func watchLeaders(ctx context.Context, sess *session.Session, full string, out chan<- Leader) {
	defer close(out)
	last, first := Leader{}, true
	var pace line.Pacer // after failed reads (see line.Pacer)
	for {
		ep, err := sess.Wait(ctx)
		if err != nil {
			return
		}
		w, lw, l, err := watchLeader(ctx, ep, full)
		if ctx.Err() != nil {
			return
		}
		if err != nil && !errors.Is(err, ErrNoLeader) {
			if pace.Wait(ctx, ep) != nil {
				return
			}
			continue
		}
		pace = line.Pacer{}
		if first || l != last {
			select {
			case out <- l:
			case <-ctx.Done():
				return
			}
			first, last = false, l
		}
		select {
		case <-w:
		case <-lw: // the leader proclaimed (or left)
		case <-ep.Done():
		case <-ctx.Done():
			return
		}
	}
}

// watchLeader reads the leader at full (ErrNoLeader when there is none)
// and watches the children: every leader change changes them (while the
// path is missing, it watches for its creation); and the leader's node
// (lw), which a Proclaim changes.
func watchLeader(ctx context.Context, ep *session.Epoch, full string) (w, lw <-chan zk.Event, l Leader, err error) {
	type seen struct {
		w, lw <-chan zk.Event
		l     Leader
	}
	r, err := epcall.Call(ctx, ep, func(c *zk.Conn) (seen, error) {
		names, _, w, err := c.ChildrenW(full)
		if errors.Is(err, zk.ErrNoNode) {
			_, _, w, err = c.ExistsW(full)
			names = nil
		}
		if err != nil {
			return seen{}, err
		}
		l, lw, err := leaderAmong(ep, full, names, true) // the watch's listing: no second one
		return seen{w, lw, l}, err
	}, nil)
	return r.w, r.lw, r.l, err
}

// nonFairParticipants lists a non-fair election's leader, then its other
// registered candidates, oldest first (the leader's registration, the one
// of its session with its id, left out).
func (e *Election) nonFairParticipants(ep *session.Epoch) ([]Participant, error) {
	var out []Participant
	l, err := readLeader(ep, e.path)
	switch {
	case err == nil:
		out = append(out, Participant{ID: l.ID, Node: l.Node, SessionID: l.SessionID, Leader: true, Priority: l.Priority,
			attrs: l.attrs})
	case !errors.Is(err, ErrNoLeader):
		return nil, err
	}
	cs, err := e.handovers().Registered(ep, "")
	if err != nil {
		return nil, err
	}
	skipped := false
	for _, c := range cs {
		p := participantOf(c.Node, c.Seq, c.Stat, c.Data)
		if !skipped && len(out) > 0 && c.SessionID == l.SessionID && c.ID == l.ID {
			skipped = true
			out[0].Joined = p.Joined // its registration's
			continue
		}
		out = append(out, p)
	}
	return out, nil
}
