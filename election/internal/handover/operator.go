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
	cfg := h.cfg()
	var cs []Cand
	var err error
	if cfg.Fair {
		cs, err = h.lineCands(ctx)
	} else {
		cs, err = h.registeredCands(ctx)
	}
	if err != nil {
		return Cand{}, err
	}
	var others []Cand
	for _, c := range cs {
		lead := c.Node == leaderNode || (!cfg.Fair && c.SessionID == leaderSession && c.ID == leaderID)
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
		if cfg.Fair && !c.Shepherd {
			n, _ := line.ParseName(c.Name)
			return Cand{}, fmt.Errorf("%w: %s (%q, %s) stands in line between the leader and %q and cannot be asked to step aside",
				cfg.Errors.Refused, c.Name, c.ID, line.Library(n.Kind), others[j].ID)
		}
	}
	return others[j], nil
}

// ErrLeaderMoved is MakeRequest's error when the leadership it was told
// of has ended, or the leader's node kept changing, while the request was
// made: find the leader again.
var ErrLeaderMoved = line.NewError("election: the leader changed while the handover request was made")

// MakeRequest makes an operator's request to hand over to succ: the
// record, an ephemeral node of the session (path is the election's path
// as the operator named it), in one multi-op with a write of the leader's
// node (leaderNode, created at term: its data as it is, at the version
// read): the leader watches its own node, not the record (see
// CheckRecord), and reads the record when its node changes. It returns the record's Stat,
// for RemoveRequest; ErrLeaderMoved when that leadership has ended.
func (h *Handovers) MakeRequest(ctx context.Context, succ Cand, path, leaderNode string, term int64) (*zk.Stat, error) {
	data := encodeRecord(recordJSON{To: succ.Name, ID: succ.ID, By: ByOperator, Reason: reasonOperator})
	var made *zk.Stat
	err := h.cfg().Sess.Do(ctx, func(ep *session.Epoch) error {
		st, err := h.makeRequest(ep, data, path, leaderNode, term)
		made = st
		return err
	})
	if err != nil {
		return nil, err // op may still run: do not read made
	}
	return made, nil
}

// makeRequest is MakeRequest's one try in ep. The multi-op also checks the
// election path's version, read before the leader's node: a non-fair
// leader's node has a fixed name, and each grant of it writes the path, so
// a later leader's node (made again between the read and the write, at the
// same version) is never written with this one's data. A leader's node
// written between the read and the multi-op (its own mark, a Proclaim) is
// read again, three times at most.
func (h *Handovers) makeRequest(ep *session.Epoch, data []byte, path, leaderNode string, term int64) (*zk.Stat, error) {
	cfg := h.cfg()
	c, rp := ep.Conn(), recordPath(cfg.Path)
	for range 3 {
		ok, pst, err := c.Exists(cfg.Path)
		if err != nil {
			return nil, err
		} else if !ok {
			return nil, ErrLeaderMoved
		}
		ldata, lst, err := c.Get(leaderNode)
		if errors.Is(err, zk.ErrNoNode) || (err == nil && lst.Czxid != term) {
			return nil, ErrLeaderMoved
		} else if err != nil {
			return nil, err
		}
		_, err = c.Multi(&zk.CheckVersionRequest{Path: cfg.Path, Version: pst.Version},
			&zk.CreateRequest{Path: rp, Data: data, Acl: cfg.Sess.ACL(), Flags: zk.FlagEphemeral},
			&zk.SetDataRequest{Path: leaderNode, Data: ldata, Version: lst.Version})
		switch {
		case err == nil:
			_, st, err := c.Exists(rp)
			return st, err
		case errors.Is(err, zk.ErrNodeExists):
			_, st, err := c.Exists(rp)
			if err != nil || st == nil || st.EphemeralOwner != ep.SessionID() {
				return nil, fmt.Errorf("%w: a handover is pending at %s", cfg.Errors.Refused, path)
			}
			// Ours: an earlier try's, its answer lost (the leader's node
			// was written with it).
			return st, nil
		case errors.Is(err, zk.ErrBadVersion):
			continue // the path or the leader's node written meanwhile: read them again
		case errors.Is(err, zk.ErrNoNode):
			return nil, ErrLeaderMoved
		default:
			return nil, err
		}
	}
	return nil, ErrLeaderMoved
}

// RemoveRequest removes the request made (its Stat), if it is still there
// (taken by a non-fair successor's grant, it is not); with made nil, the
// record if this session made it (a request whose multi-op landed, its
// answer lost, before the leader moved). Best effort.
func (h *Handovers) RemoveRequest(made *zk.Stat) {
	cfg := h.cfg()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Sess.Timeout())
	defer cancel()
	_ = cfg.Sess.Do(ctx, func(ep *session.Epoch) error {
		ok, st, err := ep.Conn().Exists(recordPath(cfg.Path))
		if err != nil || !ok || (made != nil && st.Czxid != made.Czxid) || (made == nil && st.EphemeralOwner != ep.SessionID()) {
			return err
		}
		err = ep.Conn().Delete(recordPath(cfg.Path), st.Version)
		if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
			return nil
		}
		return err
	})
}
