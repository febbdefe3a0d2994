package handover

// An operator's handover (issue 38): `shepherd handover PATH [ID]` asks
// the leader, through the record, to hand over to a candidate (see
// election.RequestHandOver; the leader's side: leadwatch.go).

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/session"
)

// RequestTarget is the candidate an operator's request names: by id, or
// the best one, never the leader (its node, session and id); refused when
// another library's candidate stands between the leader and it.
func (h *Handovers) RequestTarget(ctx context.Context, leaderNode string, leaderSession int64, leaderID, id string) (Cand, error) {
	var cs []Cand
	var err error
	if h.cfg.Fair {
		cs, err = h.lineCands(ctx)
	} else {
		cs, err = h.registeredCands(ctx)
	}
	if err != nil {
		return Cand{}, err
	}
	var others []Cand
	for _, c := range cs {
		lead := c.Node == leaderNode || (!h.cfg.Fair && c.SessionID == leaderSession && c.ID == leaderID)
		if !lead {
			others = append(others, c)
		}
	}
	t := target{id: id}
	j := h.pick(others, t)
	if j < 0 {
		return Cand{}, h.noCandidate(t)
	}
	for _, c := range others[:j] {
		if h.cfg.Fair && !c.Shepherd {
			n, _ := line.ParseName(c.Name)
			return Cand{}, fmt.Errorf("%w: %s (%q, %s) stands in line between the leader and %q and cannot be asked to step aside",
				h.cfg.Errors.Refused, c.Name, c.ID, line.Library(n.Kind), others[j].ID)
		}
	}
	return others[j], nil
}

// MakeRequest makes an operator's request to hand over to succ: the
// record, an ephemeral node of the session (path is the election's path
// as the operator named it). It returns the record's Stat, for
// RemoveRequest.
func (h *Handovers) MakeRequest(ctx context.Context, succ Cand, path string) (*zk.Stat, error) {
	sess := h.cfg.Sess
	rp := recordPath(h.cfg.Path)
	data := encodeRecord(recordJSON{To: succ.Name, ID: succ.ID, By: ByOperator, Reason: reasonOperator})
	var made *zk.Stat
	err := sess.Do(ctx, func(ep *session.Epoch) error {
		_, err := ep.Conn().Create(rp, data, zk.FlagEphemeral, sess.ACL())
		if errors.Is(err, zk.ErrNodeExists) {
			if _, st, err := ep.Conn().Exists(rp); err == nil && st != nil && st.EphemeralOwner == ep.SessionID() {
				made = st // our create, its answer lost
				return nil
			}
			return fmt.Errorf("%w: a handover is pending at %s", h.cfg.Errors.Refused, path)
		}
		if err == nil {
			_, made, err = ep.Conn().Exists(rp)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return made, nil
}

// RemoveRequest removes the request made (its Stat), if it is still there
// (taken by a non-fair successor's grant, it is not).
func (h *Handovers) RemoveRequest(made *zk.Stat) {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Sess.Timeout())
	defer cancel()
	_ = h.cfg.Sess.Do(ctx, func(ep *session.Epoch) error {
		ok, st, err := ep.Conn().Exists(recordPath(h.cfg.Path))
		if err != nil || !ok || st.Czxid != made.Czxid {
			return err
		}
		err = ep.Conn().Delete(recordPath(h.cfg.Path), st.Version)
		if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
			return nil
		}
		return err
	})
}
