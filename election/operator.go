package election

// An operator's handover (issue 38): `shepherd handover PATH [ID]` asks
// the leader, through the record, to hand over to a candidate.

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/construct"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/session"
)

// RequestHandOver asks the leader of the election at path to hand
// leadership over to the candidate with id (the best one for "": the
// highest priority, then the first in line; never the leader itself), as
// `shepherd handover` does. It makes the request (an ephemeral node of
// sess, "handover" under path), waits until that candidate leads or ctx
// ends, then removes the request, and returns the new leader.
//
// The leader carries the request out as Leadership.HandOver does: only a
// shepherd leader of this version or later does (another waits for ever:
// bound ctx). It returns ErrNoLeader when no one leads, ErrNoCandidate when
// the candidate is not in line, ErrHandOverRefused when another library's
// candidate stands between the leader and it (or a handover is pending),
// and ctx's error when it did not happen in time (the request is removed:
// nothing changes).
func RequestHandOver(ctx context.Context, sess *session.Session, path, id string) (Leader, error) {
	if err := construct.Check("election", sess, path); err != nil {
		return Leader{}, err
	}
	full := sess.Path(path)
	// An Election of no candidate: what the leader's side reads, read the
	// same way; the layout is the one found there.
	e := &Election{sess: sess, path: full, id: byOperator, log: sess.Logger()}
	e.ho = newHandovers(e)
	cur, err := leaderAt(ctx, sess, full)
	if err != nil {
		return Leader{}, err
	}
	e.fair = cur.Node != full+"/"+leaderChild
	succ, err := e.operatorTarget(ctx, cur, id)
	if err != nil {
		return Leader{}, err
	}
	rp := recordPath(full)
	data := encodeRecord(recordJSON{To: succ.name, ID: succ.ID, By: byOperator, Reason: reasonOperator})
	var made *zk.Stat
	err = sess.Do(ctx, func(ep *session.Epoch) error {
		_, err := ep.Conn().Create(rp, data, zk.FlagEphemeral, sess.ACL())
		if errors.Is(err, zk.ErrNodeExists) {
			if _, st, err := ep.Conn().Exists(rp); err == nil && st != nil && st.EphemeralOwner == ep.SessionID() {
				made = st // our create, its answer lost
				return nil
			}
			return fmt.Errorf("%w: a handover is pending at %s", ErrHandOverRefused, path)
		}
		if err == nil {
			_, made, err = ep.Conn().Exists(rp)
		}
		return err
	})
	if err != nil {
		return Leader{}, err
	}
	defer e.removeRequest(made)
	return e.awaitLeader(ctx, succ)
}

// operatorTarget is the candidate a request names: by id, or the best one;
// refused when another library's candidate stands between the leader and
// it.
func (e *Election) operatorTarget(ctx context.Context, cur Leader, id string) (cand, error) {
	var cs []cand
	var err error
	if e.fair {
		cs, err = e.lineCands(ctx)
	} else {
		cs, err = e.registeredCands(ctx)
	}
	if err != nil {
		return cand{}, err
	}
	var others []cand
	for _, c := range cs {
		lead := c.Node == cur.Node || (!e.fair && c.SessionID == cur.SessionID && c.ID == cur.ID)
		if !lead {
			others = append(others, c)
		}
	}
	t := target{id: id}
	j := e.pick(others, t)
	if j < 0 {
		return cand{}, noCandidate(t)
	}
	for _, c := range others[:j] {
		if e.fair && !c.shepherd {
			n, _ := line.ParseName(c.name)
			return cand{}, fmt.Errorf("%w: %s (%q, %s) stands in line between the leader and %q and cannot be asked to step aside",
				ErrHandOverRefused, c.name, c.ID, line.Library(n.Kind), others[j].ID)
		}
	}
	return others[j], nil
}

// awaitLeader waits until succ leads (its node heads the line, or the
// non-fair leader is its session's with its id), watching the leader.
func (e *Election) awaitLeader(ctx context.Context, succ cand) (Leader, error) {
	for {
		ep, err := e.sess.Wait(ctx)
		if err != nil {
			return Leader{}, err
		}
		w, lw, l, err := watchLeader(ctx, ep, e.path)
		if err != nil && !errors.Is(err, ErrNoLeader) {
			if ctx.Err() != nil {
				return Leader{}, ctx.Err()
			}
			var pace line.Pacer
			if err := pace.Wait(ctx, ep); err != nil {
				return Leader{}, err
			}
			continue
		}
		if err == nil && (l.Node == succ.Node || !e.fair && l.SessionID == succ.SessionID && l.ID == succ.ID) {
			return l, nil
		}
		select {
		case <-w:
		case <-lw:
		case <-ep.Done():
		case <-ctx.Done():
			return Leader{}, ctx.Err()
		}
	}
}

// removeRequest removes the request made (its Stat), if it is still there
// (taken by a non-fair successor's grant, it is not).
func (e *Election) removeRequest(made *zk.Stat) {
	ctx, cancel := context.WithTimeout(context.Background(), e.sess.Timeout())
	defer cancel()
	_ = e.sess.Do(ctx, func(ep *session.Epoch) error {
		ok, st, err := ep.Conn().Exists(recordPath(e.path))
		if err != nil || !ok || st.Czxid != made.Czxid {
			return err
		}
		err = ep.Conn().Delete(recordPath(e.path), st.Version)
		if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
			return nil
		}
		return err
	})
}
