package chaos_test

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// checker proves a recipe's invariant on one clock. A client *acts* on a
// hold from its grant (or resume) until it pauses, loses or releases it: at
// each grant and each resume it counts the other holds acting then (not
// released, not paused, loss signal not fired) and checks that the new one
// is allowed beside them. A paused hold does not act, and a grant beside it
// is no violation by itself (its session may be gone: the hold is lost
// later); but a hold that resumes must have kept its place the whole pause:
// a resume is also checked against every acting interval of the others
// during its pause, and a hold whose loss signal fired never resumes. It
// also records the gap between a hold's loss signal and the next grant to
// someone else, and fencing order.
type checker struct {
	mu         sync.Mutex
	max        int  // holders allowed at once (1: exclusive)
	rw         bool // read-write: writers exclusive, readers share
	live       map[*grant]struct{}
	grants     int
	resumes    int
	pauses     int
	perClient  map[string]int
	lastLoss   time.Time
	lastLossBy string
	minGap     time.Duration
	gaps       int
	// besidePaused counts grants made while another client's hold was
	// paused and its loss signal had not fired (allowed: that hold must
	// then never resume), unless toldPaused: then a paused hold must be
	// told of its loss before anyone else is granted, as an acting one (a
	// session lost on the local clock, before the server can expire it).
	besidePaused int
	toldPaused   bool
	// done are the acting intervals that have ended, kept while a paused
	// hold may need them (see resumed).
	done       []interval
	violations []string
	// fencing: the highest token a fenced write was accepted with.
	fenceTop    int64
	fenceWrites int
}

type grant struct {
	client string
	writer bool
	lost   <-chan struct{}
	at     time.Time
	// acting is when the current acting interval began (zero while
	// paused); pausedAt when the current pause began (zero while acting);
	// ended when the hold was found lost or released.
	acting   time.Time
	pausedAt time.Time
	ended    bool
}

// interval is one acting interval of a hold: [from, to).
type interval struct {
	client   string
	writer   bool
	from, to time.Time
}

func newChecker(max int, rw bool) *checker {
	return &checker{max: max, rw: rw, live: map[*grant]struct{}{}, perClient: map[string]int{}, minGap: -1}
}

// violate records a violation found outside the holds.
func (c *checker) violate(v string) {
	c.mu.Lock()
	c.violations = append(c.violations, v)
	c.mu.Unlock()
}

func fired(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// endLocked ends g's acting interval (if it acts) at t.
func (c *checker) endLocked(g *grant, t time.Time) {
	if !g.acting.IsZero() {
		if t.Before(g.acting) {
			t = g.acting
		}
		c.done = append(c.done, interval{client: g.client, writer: g.writer, from: g.acting, to: t})
		g.acting = time.Time{}
	}
}

// settleLocked drops the live holds whose loss signal has fired, ending
// their acting intervals at now (no later than the grant or resume being
// checked), and returns the others acting now and, of those, the writers;
// and the paused holds not known lost.
func (c *checker) settleLocked(now time.Time, self *grant) (acting, writers, pausedN int) {
	for h := range c.live {
		if h == self {
			continue
		}
		if fired(h.lost) {
			c.endLocked(h, now)
			h.ended = true
			delete(c.live, h)
			continue
		}
		if h.acting.IsZero() {
			pausedN++
			continue
		}
		acting++
		if h.writer {
			writers++
		}
	}
	return acting, writers, pausedN
}

// allowedLocked checks a hold (writer or not) starting to act beside others
// acting holds, of which writers are writers.
func (c *checker) allowedLocked(what, client string, writer bool, others, writers int) {
	switch {
	case c.rw && writer && others > 0:
		c.violations = append(c.violations, fmt.Sprintf("writer %s %s beside %d live holds", client, what, others))
	case c.rw && !writer && writers > 0:
		c.violations = append(c.violations, fmt.Sprintf("reader %s %s beside a live writer", client, what))
	case !c.rw && others+1 > c.max:
		c.violations = append(c.violations, fmt.Sprintf("%s %s: %d live holds, limit %d", client, what, others+1, c.max))
	}
}

// granted registers a new hold and checks it against the live ones.
func (c *checker) granted(client string, writer bool, lost <-chan struct{}) *grant {
	now := time.Now()
	g := &grant{client: client, writer: writer, lost: lost, at: now, acting: now}
	c.mu.Lock()
	defer c.mu.Unlock()
	others, writers, pausedN := c.settleLocked(now, nil)
	c.allowedLocked("granted", client, writer, others, writers)
	if !c.rw && others+1 > c.max {
		c.violations[len(c.violations)-1] += " (acting: " + c.actingLocked(nil) + ")"
	}
	if pausedN > 0 {
		c.besidePaused++
		if c.toldPaused {
			c.violations = append(c.violations, fmt.Sprintf("%s granted beside %d paused holds not told of their loss", client, pausedN))
		}
	}
	if !c.lastLoss.IsZero() && c.lastLossBy != client {
		gap := now.Sub(c.lastLoss)
		if c.minGap < 0 || gap < c.minGap {
			c.minGap = gap
		}
		c.gaps++
		c.lastLoss = time.Time{}
	}
	c.live[g] = struct{}{}
	c.grants++
	c.perClient[client]++
	return g
}

// paused records that g's pause signal fired: g stops acting.
func (c *checker) paused(g *grant) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if g.ended || !g.pausedAt.IsZero() {
		return
	}
	c.endLocked(g, now)
	g.pausedAt = now
	c.pauses++
}

// resumed records that g's gate opened again after a pause (lostBefore: its
// loss signal had fired before the gate was asked): g acts again. A resume
// is checked like a grant, and against what the others did while g was
// paused: had g's place been kept, none of it was allowed beside g.
func (c *checker) resumed(g *grant, lostBefore bool) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resumes++
	if lostBefore {
		c.violations = append(c.violations, fmt.Sprintf("%s resumed a hold (granted %s) that was lost",
			g.client, g.at.Format("15:04:05.000")))
	}
	others, writers, _ := c.settleLocked(now, g)
	c.allowedLocked("resumed", g.client, g.writer, others, writers)
	if from := g.pausedAt; !from.IsZero() {
		// The others' acting intervals during [from, now]: those that have
		// ended and those still acting.
		var ivs []interval
		for _, iv := range c.done {
			if iv.client != g.client && iv.to.After(from) && iv.from.Before(now) {
				ivs = append(ivs, iv)
			}
		}
		for h := range c.live {
			if h != g && h.client != g.client && !h.acting.IsZero() && h.acting.Before(now) {
				ivs = append(ivs, interval{client: h.client, writer: h.writer, from: h.acting, to: now})
			}
		}
		if v := c.overlapLocked(g, ivs); v != "" {
			c.violations = append(c.violations, fmt.Sprintf("%s resumed after a pause of %v (from %s) during which %s",
				g.client, now.Sub(from).Round(time.Millisecond), from.Format("15:04:05.000"), v))
		}
	}
	g.pausedAt = time.Time{}
	g.acting = now
	c.pruneLocked()
}

// overlapLocked returns what in ivs (the others' acting intervals while g
// was paused) would not have been allowed beside g, or "".
func (c *checker) overlapLocked(g *grant, ivs []interval) string {
	for _, iv := range ivs {
		switch {
		case c.rw && g.writer:
			return fmt.Sprintf("%s held (from %s)", iv.client, iv.from.Format("15:04:05.000"))
		case c.rw && iv.writer:
			return fmt.Sprintf("writer %s held (from %s)", iv.client, iv.from.Format("15:04:05.000"))
		}
	}
	if c.rw {
		return ""
	}
	// At most max-1 others at once: the peak is at some interval's start.
	for _, a := range ivs {
		n := 0
		for _, b := range ivs {
			if !b.from.After(a.from) && b.to.After(a.from) {
				n++
			}
		}
		if n+1 > c.max {
			return fmt.Sprintf("%d others held at once (%s from %s; limit %d)", n, a.client,
				a.from.Format("15:04:05.000"), c.max)
		}
	}
	return ""
}

// pruneLocked drops the ended intervals no paused hold can need.
func (c *checker) pruneLocked() {
	var oldest time.Time
	for h := range c.live {
		if !h.pausedAt.IsZero() && (oldest.IsZero() || h.pausedAt.Before(oldest)) {
			oldest = h.pausedAt
		}
	}
	if oldest.IsZero() {
		c.done = c.done[:0]
		return
	}
	keep := c.done[:0]
	for _, iv := range c.done {
		if iv.to.After(oldest) {
			keep = append(keep, iv)
		}
	}
	c.done = keep
}

// released ends a hold given up by its holder.
func (c *checker) released(g *grant) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endLocked(g, now)
	g.ended = true
	delete(c.live, g)
	c.pruneLocked()
}

// lost records that a hold's loss signal fired (at time t).
func (c *checker) lost(g *grant, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endLocked(g, t)
	if t.After(c.lastLoss) {
		c.lastLoss, c.lastLossBy = t, g.client
	}
}

// fenced records a fenced write ZooKeeper accepted, replacing prev with
// token: a write from a holder that lost its hold to a newer one would
// replace a higher token with a lower one.
func (c *checker) fenced(client string, prev, token int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if token < prev {
		c.violations = append(c.violations, fmt.Sprintf("fenced write by %s: token %d replaced %d", client, token, prev))
	}
	c.fenceTop = max(c.fenceTop, token)
	c.fenceWrites++
}

func (c *checker) count(client string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.perClient[client]
}

func (c *checker) summary() (grants int, minGap time.Duration, gaps int, fences int, violations []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.grants, c.minGap, c.gaps, c.fenceWrites, append([]string(nil), c.violations...)
}

// pauseSummary: pauses, resumes, and grants made beside a paused hold.
func (c *checker) pauseSummary() (pauses, resumes, besidePaused int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pauses, c.resumes, c.besidePaused
}

// actingLocked names the live holds acting now but self, with when each was
// granted: for a violation's message.
func (c *checker) actingLocked(self *grant) string {
	var out []string
	for h := range c.live {
		if h != self && !h.acting.IsZero() {
			out = append(out, fmt.Sprintf("%s since %s", h.client, h.at.Format("15:04:05.000")))
		}
	}
	return strings.Join(out, ", ")
}
