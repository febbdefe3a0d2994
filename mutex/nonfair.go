package mutex

import (
	"context"
	"time"

	"github.com/shepherdzk/shepherd/internal/race"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
)

// NonFairNode is the name of the single node of a non-fair lock.
const NonFairNode = layout.NonFairLockNode

// nonFairStamp is the data a non-fair lock writes to its path with each
// grant, followed by the grant attempt's guid (see race.Race).
const nonFairStamp = layout.NonFairLockStamp

func (m *Mutex) acquireNonFair(ctx context.Context, wait bool) (*hold.Hold, error) {
	start := time.Now()
	// One guid for the whole call: a create whose answer was lost is
	// recognised on any later attempt of this call, never left behind.
	h, err := m.single.Run(ctx, race.Attempt{GUID: line.NewGUID(), Data: m.data, Wait: wait})
	if err != nil || h == nil {
		return nil, err
	}
	h.Observe(m.single.Recipe, m.path, time.Since(start), 0)
	return h, nil
}
