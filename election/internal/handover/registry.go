package handover

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

	"github.com/shepherdzk/shepherd/internal/epcall"
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
func (h *Handovers) register(ctx context.Context) error {
	cfg := h.cfg()
	ep, err := cfg.Sess.Wait(ctx)
	if err != nil {
		return err
	}
	h.mu.Lock()
	reg := h.reg
	h.mu.Unlock()
	if reg != nil && reg.sid == ep.SessionID() {
		return nil
	}
	// Before the first write to the path: refuse another kind's (the
	// race checks it too, but the registration comes first).
	if err := cfg.Layout.Check(ctx, ep, cfg.Path); err != nil {
		return err
	}
	name := candidatesDir + "/c-" + line.NewGUID()
	p := cfg.Path + "/" + name
	err = epcall.Exec(ctx, ep, func(c *zk.Conn) error {
		for range 3 { // the path may be removed meanwhile (containers)
			_, err := c.Create(p, h.of.Data("", ""), zk.FlagEphemeral, cfg.Sess.ACL())
			switch {
			case errors.Is(err, zk.ErrNoNode):
				// The path is the race's, whose version fences the holds:
				// persistent, whoever makes it first (a container made
				// here would be removed when idle and count versions
				// from 0 again). Its registry is a container.
				if err := race.EnsureVersionedPath(cfg.Sess, ep, cfg.Path); err != nil {
					return err
				}
				if err := line.EnsurePath(cfg.Sess, ep, cfg.Path+"/"+candidatesDir); err != nil {
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
	h.mu.Lock()
	h.reg = &registration{name: name, sid: ep.SessionID()}
	h.mu.Unlock()
	return nil
}

// Unregister removes this candidate's registration (it leaves the
// election), waiting for it at most until ctx ends.
func (h *Handovers) Unregister(ctx context.Context) {
	h.mu.Lock()
	reg := h.reg
	h.reg = nil
	h.mu.Unlock()
	if reg == nil {
		return
	}
	ep, ok := h.cfg().Sess.Current()
	if !ok || ep.SessionID() != reg.sid {
		return // gone with its session
	}
	// A guaranteed delete (in the background if it takes more than a
	// moment), as a waiter's node leaves the line.
	select {
	case <-h.of.Line().Leave(ep, h.cfg().Path+"/"+reg.name):
	case <-ctx.Done():
	}
}

// Registered lists the registered candidates in ep, oldest first (skip:
// a registration to leave out, "" none).
func (h *Handovers) Registered(ep *session.Epoch, skip string) ([]Cand, error) {
	dir := h.cfg().Path + "/" + candidatesDir
	names, _, err := ep.Conn().Children(dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Cand
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
		out = append(out, h.cand(name, dir+"/"+n, 0, true, st, data))
	}
	slices.SortFunc(out, func(a, b Cand) int { return cmp.Compare(czxid[a.Name], czxid[b.Name]) })
	return out, nil
}

// registeredCands lists the other registered candidates, oldest first.
func (h *Handovers) registeredCands(ctx context.Context) ([]Cand, error) {
	h.mu.Lock()
	own := ""
	if h.reg != nil {
		own = h.reg.name
	}
	h.mu.Unlock()
	var out []Cand
	err := h.cfg().Sess.Do(ctx, func(ep *session.Epoch) error {
		var err error
		out, err = h.Registered(ep, own)
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
func (h *Handovers) keepRegistered(ctx context.Context) {
	var pace line.Pacer
	for {
		ep, err := h.cfg().Sess.Wait(ctx)
		if err != nil {
			return
		}
		if err := h.register(ctx); err != nil {
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
