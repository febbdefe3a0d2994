package handover

// The preferred-leader policy (WithPreferredLeader, issue 38): a leader
// yields to a better candidate, at a bounded rate; and HandOverOnStop's
// wait for one. Both watch the other candidates.

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/epcall"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// candWatch watches the other candidates: the line's children (fair) or
// the registry's (non-fair), with each one's data read once.
type candWatch struct {
	h    *Handovers
	own  string // this candidate's name (left out)
	data map[string]Cand
}

// list returns the other candidates, in order, and a channel that fires
// when they change.
func (w *candWatch) list(ctx context.Context) ([]Cand, <-chan zk.Event, error) {
	ep, err := w.h.cfg().Sess.Wait(ctx)
	if err != nil {
		return nil, nil, err
	}
	dir := w.h.cfg().Path
	if !w.h.cfg().Fair {
		dir += "/" + candidatesDir
	}
	type listed struct {
		out []Cand
		ch  <-chan zk.Event
	}
	r, err := epcall.Call(ctx, ep, func(c *zk.Conn) (listed, error) {
		names, _, ch, err := c.ChildrenW(dir)
		if errors.Is(err, zk.ErrNoNode) {
			_, _, ch, err = c.ExistsW(dir)
			return listed{nil, ch}, err
		}
		if err != nil {
			return listed{}, err
		}
		return listed{w.read(ep, dir, names), ch}, nil
	}, nil)
	return r.out, r.ch, err
}

// read returns the candidates among names (dir's children), in order,
// reading the data of those it has not seen.
func (w *candWatch) read(ep *session.Epoch, dir string, names []string) []Cand {
	var out []Cand
	add := func(name, node string, seq int64, shepherd bool) {
		if name == w.own {
			return
		}
		c, ok := w.data[name]
		if !ok {
			data, st, err := ep.Conn().Get(node)
			if err != nil {
				return // gone meanwhile (or unreadable: not a candidate to pick)
			}
			c = w.h.cand(name, node, seq, shepherd, st, data)
			w.data[name] = c
		}
		out = append(out, c)
	}
	if w.h.cfg().Fair {
		for _, n := range line.Sort(names, w.h.cfg().Names.Kind(recipe.KindLatch)) {
			add(n.Name, dir+"/"+n.Name, n.Seq, n.Shepherd())
		}
		return out
	}
	cs, err := w.h.Registered(ep, w.own)
	if err != nil {
		return nil
	}
	for _, c := range cs {
		add(c.Name, c.Node, 0, true)
	}
	return out
}

// yieldLoop is l's preferred-leader policy: it hands over to the best
// other candidate once its priority is above this leader's, it has been in
// line (as seen here) for the window, and l has led for the window. A
// yield that fails waits for the candidates to change.
func (h *Handovers) yieldLoop(l *Leadership) {
	window := h.cfg().Policy.YieldWindow
	granted := time.Now()
	w := &candWatch{h: h, own: h.ownName(l), data: map[string]Cand{}}
	seen := map[string]time.Time{} // when this leader first listed each
	failed := false
	var pace line.Pacer
	for {
		cs, ch, err := w.list(l.Ctx)
		if err != nil {
			if l.Ctx.Err() != nil {
				return
			}
			if ep, ok := h.cfg().Sess.Current(); !ok || pace.Wait(l.Ctx, ep) != nil {
				return
			}
			continue
		}
		// Only those listed now are kept: a long leadership sees
		// candidates come and go, each registration under a new name.
		now, listed := time.Now(), make(map[string]time.Time, len(cs))
		for _, c := range cs {
			listed[c.Name] = now
			if t, ok := seen[c.Name]; ok {
				listed[c.Name] = t
			}
		}
		seen = listed
		var due <-chan time.Time
		var timer *time.Timer
		best := h.pick(cs, target{above: true})
		if best >= 0 && !failed {
			timer = time.NewTimer(time.Until(later(granted.Add(window), seen[cs[best].Name].Add(window))))
			due = timer.C
		}
		select {
		case <-ch:
			failed = false
			if timer != nil {
				timer.Stop()
			}
		case <-due:
			ctx, cancel := context.WithTimeout(context.Background(), 2*h.timeout())
			err := h.handOver(ctx, l, target{node: cs[best].Name, above: true}, reasonYield)
			cancel()
			if err == nil || l.Ctx.Err() != nil {
				return
			}
			failed = true // until the candidates change (ch fires)
		case <-l.Ctx.Done():
			return
		}
	}
}

// awaitBetter waits until a candidate of higher priority than this one is
// in line (HandOverOnStop's wait), for at most wait, or until ctx ends.
func (h *Handovers) awaitBetter(ctx context.Context, l *Leadership, wait time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	w := &candWatch{h: h, own: h.ownName(l), data: map[string]Cand{}}
	for ctx.Err() == nil {
		cs, ch, err := w.list(ctx)
		if err != nil {
			return
		}
		if h.pick(cs, target{above: true}) >= 0 {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
}
