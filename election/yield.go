package election

// The preferred-leader policy (WithPreferredLeader, issue 38): a leader
// yields to a better candidate, at a bounded rate; and HandOverOnStop's
// wait for one. Both watch the other candidates.

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// candWatch watches the other candidates: the line's children (fair) or
// the registry's (non-fair), with each one's data read once.
type candWatch struct {
	e    *Election
	own  string // this candidate's name (left out)
	data map[string]cand
}

// list returns the other candidates, in order, and a channel that fires
// when they change.
func (w *candWatch) list(ctx context.Context) ([]cand, <-chan zk.Event, error) {
	ep, err := w.e.sess.Wait(ctx)
	if err != nil {
		return nil, nil, err
	}
	dir := w.e.path
	if !w.e.fair {
		dir += "/" + candidatesDir
	}
	type listed struct {
		out []cand
		ch  <-chan zk.Event
	}
	r, err := line.Call(ctx, ep, func(c *zk.Conn) (listed, error) {
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
func (w *candWatch) read(ep *session.Epoch, dir string, names []string) []cand {
	var out []cand
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
			c = cand{Participant: participantOf(node, seq, st, data), name: name, shepherd: shepherd}
			w.data[name] = c
		}
		out = append(out, c)
	}
	if w.e.fair {
		for _, n := range line.Sort(names, w.e.names.Kind(recipe.KindLatch)) {
			add(n.Name, dir+"/"+n.Name, n.Seq, n.Shepherd())
		}
		return out
	}
	cs, err := w.e.registered(ep, w.own)
	if err != nil {
		return nil
	}
	for _, c := range cs {
		add(c.name, c.Node, 0, true)
	}
	return out
}

// yieldLoop is l's preferred-leader policy: it hands over to the best
// other candidate once its priority is above this leader's, it has been in
// line (as seen here) for the window, and l has led for the window. A
// yield that fails waits for the candidates to change.
func (e *Election) yieldLoop(l *Leadership) {
	window := e.ext.yieldWindow
	granted := time.Now()
	w := &candWatch{e: e, own: e.ownName(l), data: map[string]cand{}}
	seen := map[string]time.Time{} // when this leader first listed each
	failed := false
	var pace line.Pacer
	for {
		cs, ch, err := w.list(l.ctx)
		if err != nil {
			if l.ctx.Err() != nil {
				return
			}
			if ep, ok := e.sess.Current(); !ok || pace.Wait(l.ctx, ep) != nil {
				return
			}
			continue
		}
		now := time.Now()
		for _, c := range cs {
			if _, ok := seen[c.name]; !ok {
				seen[c.name] = now
			}
		}
		var due <-chan time.Time
		var timer *time.Timer
		best := e.pick(cs, target{above: true})
		if best >= 0 && !failed {
			timer = time.NewTimer(time.Until(later(granted.Add(window), seen[cs[best].name].Add(window))))
			due = timer.C
		}
		select {
		case <-ch:
			failed = false
			if timer != nil {
				timer.Stop()
			}
		case <-due:
			ctx, cancel := context.WithTimeout(context.Background(), 2*e.handOverTimeout())
			err := e.handOver(ctx, l, target{node: cs[best].name, above: true}, reasonYield)
			cancel()
			if err == nil || l.ctx.Err() != nil {
				return
			}
			failed = true // until the candidates change (ch fires)
		case <-l.ctx.Done():
			return
		}
	}
}

// awaitBetter waits until a candidate of higher priority than this one is
// in line (HandOverOnStop's wait), for at most wait, or until ctx ends.
func (e *Election) awaitBetter(ctx context.Context, l *Leadership, wait time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	w := &candWatch{e: e, own: e.ownName(l), data: map[string]cand{}}
	for ctx.Err() == nil {
		cs, ch, err := w.list(ctx)
		if err != nil {
			return
		}
		if e.pick(cs, target{above: true}) >= 0 {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
}
