package chaos_test

import (
	"fmt"
	"sync"
	"time"
)

// checker proves a recipe's invariant on one clock: at each grant, it counts
// the holds still live (not released, loss signal not fired) and checks that
// the new one is allowed beside them. It also records the gap between a
// hold's loss signal and the next grant to someone else, and fencing order.
type checker struct {
	mu         sync.Mutex
	max        int  // holders allowed at once (1: exclusive)
	rw         bool // read-write: writers exclusive, readers share
	live       map[*grant]struct{}
	grants     int
	perClient  map[string]int
	lastLoss   time.Time
	lastLossBy string
	minGap     time.Duration
	gaps       int
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

// granted registers a new hold and checks it against the live ones.
func (c *checker) granted(client string, writer bool, lost <-chan struct{}) *grant {
	now := time.Now()
	g := &grant{client: client, writer: writer, lost: lost, at: now}
	c.mu.Lock()
	defer c.mu.Unlock()
	others, writers := 0, 0
	for h := range c.live {
		select {
		case <-h.lost:
			delete(c.live, h)
			continue
		default:
		}
		others++
		if h.writer {
			writers++
		}
	}
	switch {
	case c.rw && writer && others > 0:
		c.violations = append(c.violations, fmt.Sprintf("writer %s granted beside %d live holds", client, others))
	case c.rw && !writer && writers > 0:
		c.violations = append(c.violations, fmt.Sprintf("reader %s granted beside a live writer", client))
	case !c.rw && others+1 > c.max:
		c.violations = append(c.violations, fmt.Sprintf("%s granted: %d live holds, limit %d", client, others+1, c.max))
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

// released ends a hold given up by its holder.
func (c *checker) released(g *grant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.live, g)
}

// lost records that a hold's loss signal fired (at time t).
func (c *checker) lost(g *grant, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
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
