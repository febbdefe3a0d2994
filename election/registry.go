package election

// The non-fair layout's registry of candidates (issue 38): a racer has no
// node of its own while it waits, so each registers one, ephemeral, under
// "candidates", to be seen (Participants, status) and named (HandOver).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/race"
	"github.com/shepherdzk/shepherd/session"
)

// candidatesDir is the non-fair registry, under the election's path.
const candidatesDir = layout.ElectionCandidates

// registration is a non-fair candidate's node in the registry.
type registration struct {
	name string // relative to the election's path: "candidates/c-<guid>"
	sid  int64  // the session it belongs to
}

// register makes this candidate's registration in the session's current
// epoch, unless it has one in that session: an ephemeral node holding its
// data, so that it can be seen (Participants, status) and named (HandOver).
func (e *Election) register(ctx context.Context) error {
	ep, err := e.sess.Wait(ctx)
	if err != nil {
		return err
	}
	e.ho.mu.Lock()
	reg := e.ho.reg
	e.ho.mu.Unlock()
	if reg != nil && reg.sid == ep.SessionID() {
		return nil
	}
	// Before the first write to the path: refuse another kind's (the
	// race checks it too, but the registration comes first).
	if err := e.nfLayout.Check(ctx, ep, e.path); err != nil {
		return err
	}
	name := candidatesDir + "/c-" + line.NewGUID()
	p := e.path + "/" + name
	err = line.Exec(ctx, ep, func(c *zk.Conn) error {
		for range 3 { // the path may be removed meanwhile (containers)
			_, err := c.Create(p, e.nodeData(), zk.FlagEphemeral, e.sess.ACL())
			switch {
			case errors.Is(err, zk.ErrNoNode):
				// The path is the race's, whose version fences the holds:
				// persistent, whoever makes it first (a container made
				// here would be removed when idle and count versions
				// from 0 again). Its registry is a container.
				if err := race.EnsureVersionedPath(e.sess, ep, e.path); err != nil {
					return err
				}
				if err := line.EnsurePath(e.sess, ep, e.path+"/"+candidatesDir); err != nil {
					return err
				}
				continue
			case errors.Is(err, zk.ErrNodeExists):
				// A create whose answer was lost: ours if our session's.
				if ok, st, err := c.Exists(p); err == nil && ok && st.EphemeralOwner == ep.SessionID() {
					return nil
				}
			}
			return err
		}
		return fmt.Errorf("election: %s: its path keeps being removed", p)
	})
	if err != nil {
		return err
	}
	e.ho.mu.Lock()
	e.ho.reg = &registration{name: name, sid: ep.SessionID()}
	e.ho.mu.Unlock()
	return nil
}

// unregister removes this candidate's registration (it leaves the
// election), waiting for it at most until ctx ends.
func (e *Election) unregister(ctx context.Context) {
	e.ho.mu.Lock()
	reg := e.ho.reg
	e.ho.reg = nil
	e.ho.mu.Unlock()
	if reg == nil {
		return
	}
	ep, ok := e.sess.Current()
	if !ok || ep.SessionID() != reg.sid {
		return // gone with its session
	}
	// A guaranteed delete (in the background if it takes more than a
	// moment), as a waiter's node leaves the line.
	select {
	case <-e.line().Leave(ep, e.path+"/"+reg.name):
	case <-ctx.Done():
	}
}

// registered lists the registered candidates in ep, oldest first (skip:
// a registration to leave out, "" none).
func (e *Election) registered(ep *session.Epoch, skip string) ([]cand, error) {
	dir := e.path + "/" + candidatesDir
	names, _, err := ep.Conn().Children(dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []cand
	czxid := map[string]int64{}
	for _, n := range names {
		name := candidatesDir + "/" + n
		if name == skip {
			continue
		}
		data, st, err := ep.Conn().Get(dir + "/" + n)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		czxid[name] = st.Czxid
		out = append(out, cand{Participant: participantOf(dir+"/"+n, 0, st, data), name: name, shepherd: true})
	}
	slices.SortFunc(out, func(a, b cand) int { return cmp.Compare(czxid[a.name], czxid[b.name]) })
	return out, nil
}

// registeredCands lists the other registered candidates, oldest first.
func (e *Election) registeredCands(ctx context.Context) ([]cand, error) {
	e.ho.mu.Lock()
	own := ""
	if e.ho.reg != nil {
		own = e.ho.reg.name
	}
	e.ho.mu.Unlock()
	var out []cand
	err := e.sess.Do(ctx, func(ep *session.Epoch) error {
		var err error
		out, err = e.registered(ep, own)
		return err
	})
	if err != nil {
		return nil, err // op may still run: do not read out
	}
	return out, nil
}

// keepRegistered registers the candidate in each new session until ctx
// ends (the race's sessions: the race goes on in the next one after a
// session is lost).
func (e *Election) keepRegistered(ctx context.Context) {
	var pace line.Pacer
	for {
		ep, err := e.sess.Wait(ctx)
		if err != nil {
			return
		}
		if err := e.register(ctx); err != nil {
			if ctx.Err() != nil || pace.Wait(ctx, ep) != nil {
				return
			}
			continue
		}
		pace = line.Pacer{}
		select {
		case <-ep.SessionDone():
		case <-ctx.Done():
			return
		}
	}
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
	cs, err := e.registered(ep, "")
	if err != nil {
		return nil, err
	}
	skipped := false
	for _, c := range cs {
		if !skipped && len(out) > 0 && c.SessionID == l.SessionID && c.ID == l.ID {
			skipped = true
			out[0].Joined = c.Joined // its registration's
			continue
		}
		out = append(out, c.Participant)
	}
	return out, nil
}
