package mutex

import (
	"context"
	"errors"
	"time"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// acquireFair waits in the line through the contender loop (see
// line.Contend). An exclusive holder that waited marks its node in its
// release (line.AwaitOptions.MarkOnRelease; a reader never: readers before
// it may still hold). TryLock's "not now" is a nil hold.
func (m *Mutex) acquireFair(ctx context.Context, wait bool) (*hold.Hold, error) {
	h, err := line.Contend(ctx, &m.line, line.Entry{
		Kind:    m.kind,
		Data:    m.data,
		Options: line.AwaitOptions{NoWait: !wait, MarkOnRelease: m.kind != recipe.KindRead},
	}, &locker{m: m, turn: m.turnFor(), start: time.Now()})
	if errors.Is(err, recipe.ErrWouldWait) {
		return nil, nil // our node is removed
	}
	return h, err
}

// locker is one acquireFair's Driver of the contender loop: m's turn rule,
// and a hold of the granted node.
type locker struct {
	m     *Mutex
	turn  line.Turn
	start time.Time
}

func (k *locker) Turn(names []line.Name, i int) (bool, int, bool) { return k.turn(names, i) }

// Grant makes own the hold; a hold lost at once (its session's epoch
// ended) is released and the contender enters again.
func (k *locker) Grant(ctx context.Context, ep *session.Epoch, own *line.Node) (*hold.Hold, error) {
	h := k.m.line.HoldOf(ep, own)
	if h.Context().Err() != nil {
		_ = h.Release(ctx) // lost at once: it returns without waiting
		return nil, recipe.ErrNodeGone
	}
	h.Observe(k.m.line.Recipe, k.m.path, time.Since(k.start), max(own.Position, 0))
	return h, nil
}

// turnFor is the rule of m's kind: who may hold, whom to watch.
func (m *Mutex) turnFor() line.Turn {
	switch m.kind {
	case recipe.KindRead:
		own := ""
		if m.writer != nil {
			own = m.writer.Node()
		}
		if own == "" {
			return readTurn
		}
		own = own[len(m.path)+1:]
		return func(names []line.Name, i int) (bool, int, bool) {
			rest := make([]line.Name, 0, len(names))
			j := i
			for k, n := range names {
				if n.Name == own {
					if k < i {
						j--
					}
					continue
				}
				rest = append(rest, n)
			}
			ok, w, grants := readTurn(rest, j)
			if !ok {
				w = line.Index(names, rest[w].Name)
			}
			return ok, w, grants
		}
	default:
		return line.HeadTurn
	}
}

// isReader reports whether a node is a reader's (readers share).
func isReader(n line.Name) bool { return n.Kind == recipe.KindRead || n.Kind == recipe.KindKazooRead }

// readTurn: granted when no writer is ahead; else watch the nearest writer
// ahead, whose deletion grants us if it is the only writer ahead.
func readTurn(names []line.Name, i int) (bool, int, bool) {
	w, writers := -1, 0
	for j := 0; j < i; j++ {
		if !isReader(names[j]) {
			w = j
			writers++
		}
	}
	if w < 0 {
		return true, 0, false
	}
	return false, w, writers == 1
}
