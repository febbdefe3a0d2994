package election

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/zkpath"
	"github.com/shepherdzk/shepherd/session"
)

const (
	latchKind   = "latch-"
	leaderChild = "leader" // the node of the non-fair mode
)

type member struct {
	name string
	seq  int64
	guid string
}

// parseLatch parses "_c_<guid>-latch-<seq>" or "latch-<seq>".
func parseLatch(name string) (member, bool) {
	i := strings.LastIndex(name, latchKind)
	if i < 0 {
		return member{}, false
	}
	seq, err := strconv.ParseInt(name[i+len(latchKind):], 10, 64)
	if err != nil || len(name) <= i+len(latchKind) {
		return member{}, false
	}
	m := member{name: name, seq: seq}
	if rest, ok := strings.CutPrefix(name[:i], "_c_"); ok {
		m.guid = strings.TrimSuffix(rest, "-")
	} else if i != 0 {
		return member{}, false
	}
	return m, true
}

// list returns the candidates in line order.
func (e *Election) list(ep *session.Epoch) ([]member, *zk.Stat, error) {
	names, st, err := ep.Conn().Children(e.path)
	if err != nil {
		return nil, nil, err
	}
	ms := make([]member, 0, len(names))
	for _, n := range names {
		if m, ok := parseLatch(n); ok {
			ms = append(ms, m)
		}
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].seq < ms[j].seq })
	return ms, st, nil
}

// ensureParents creates the election path and its parents.
func (e *Election) ensureParents(ep *session.Epoch) error {
	for _, p := range append(zkpath.Parents(e.path), e.path) {
		_, err := ep.Conn().Create(p, nil, 0, e.sess.ACL())
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// create enters the line in ep's session: a protected EPHEMERAL_SEQUENTIAL
// create whose guid lets a lost answer be recovered without a second node.
func (e *Election) create(ctx context.Context, ep *session.Epoch) (*candidate, error) {
	guid := newGUID()
	prefix := e.path + "/_c_" + guid + "-" + latchKind
	var made string
	err := session.Call(ctx, func() error {
		for attempt := 0; ; attempt++ {
			if ep.Context().Err() != nil {
				return session.ErrLost
			}
			p, err := ep.Conn().Create(prefix, []byte(e.id), zk.FlagEphemeral|zk.FlagSequence, e.sess.ACL())
			switch {
			case err == nil:
				made = p
				return nil
			case errors.Is(err, zk.ErrNoNode) && attempt < 3:
				if err := e.ensureParents(ep); err != nil {
					return err
				}
				continue
			case session.OutcomeUnknown(err):
				// Did it happen? Look for our guid before trying again.
				p, found, ferr := e.findOwn(ep, guid)
				if ferr == nil && found {
					made = p
					return nil
				}
				if ep.Context().Err() != nil || attempt > 20 {
					return err
				}
				continue
			default:
				return err
			}
		}
	})
	if err != nil {
		if made != "" {
			e.deleteNode(made, ep)
		}
		return nil, err
	}
	ok, st, err := ep.Conn().Exists(made)
	if err != nil || !ok || st.EphemeralOwner != ep.SessionID() {
		e.deleteNode(made, ep)
		if err == nil {
			err = session.ErrLost
		}
		return nil, err
	}
	m, _ := parseLatch(made[len(e.path)+1:])
	return &candidate{path: made, name: m.name, seq: m.seq, sid: ep.SessionID(), czxid: st.Czxid}, nil
}

// findOwn looks for a node with our guid, owned by ep's session.
func (e *Election) findOwn(ep *session.Epoch, guid string) (string, bool, error) {
	ms, _, err := e.list(ep)
	if err != nil {
		return "", false, err
	}
	for _, m := range ms {
		if m.guid == guid {
			p := e.path + "/" + m.name
			ok, st, err := ep.Conn().Exists(p)
			if err != nil {
				return "", false, err
			}
			if ok && st.EphemeralOwner == ep.SessionID() {
				return p, true, nil
			}
		}
	}
	return "", false, nil
}

// deleteNode removes one of our nodes: at once if it can, else in the
// background, until it is gone or its session is (the server then removes
// it). It never touches another session's node: the path is one we created.
func (e *Election) deleteNode(path string, ep *session.Epoch) {
	try := func() bool {
		err := ep.Conn().Delete(path, -1)
		return err == nil || errors.Is(err, zk.ErrNoNode) || ep.SessionContext().Err() != nil ||
			!session.OutcomeUnknown(err)
	}
	if ep.Context().Err() == nil && try() {
		return
	}
	go func() {
		for i := 0; i < 600; i++ {
			ctx, cancel := context.WithTimeout(ep.SessionContext(), time.Minute)
			cur, err := e.sess.Wait(ctx)
			cancel()
			if err != nil || cur.SessionID() != ep.SessionID() {
				return // the session is gone: so is the node
			}
			ep = cur
			if try() {
				return
			}
			t := time.NewTimer(100 * time.Millisecond)
			select {
			case <-ep.SessionDone():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
}
