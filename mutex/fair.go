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
	k := locker{m: m, start: time.Now()}
	var d line.Driver[*hold.Hold] = &k
	if m.kind == recipe.KindRead {
		d = m.reader(k) // the read side's rule (rw.go)
	}
	h, err := line.Contend(ctx, &m.line, line.Entry{
		Kind:    m.kind,
		Data:    m.data,
		Options: line.AwaitOptions{NoWait: !wait, MarkOnRelease: m.kind != recipe.KindRead},
	}, d)
	if errors.Is(err, recipe.ErrWouldWait) {
		return nil, nil // our node is removed
	}
	return h, err
}

// locker is one acquireFair's Driver of the contender loop: the head of
// the line holds, and its grant is a hold of its node.
type locker struct {
	line.Head
	m     *Mutex
	start time.Time
}

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
