package mutex

import (
	"fmt"

	"github.com/shepherdzk/shepherd/internal/construct"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// Option configures a Mutex or an RWMutex. An invalid value makes New (or
// NewRW) fail with an error matching ErrInvalidArgument.
type Option func(*config)

type config struct {
	fair   bool
	data   []byte
	names  recipe.Naming
	policy session.DisconnectPolicy
	err    error // the first invalid option
}

// newConfig applies opts to the defaults.
func newConfig(opts []Option) (config, error) {
	c := config{fair: true}
	construct.Apply("mutex", &c, opts, c.setErr)
	return c, c.err
}

func (c *config) setErr(err error) {
	if c.err == nil {
		c.err = err
	}
}

// NonFair makes the lock a race for one ephemeral node: lowest latency for few
// contenders; every waiter watches that node (a herd on release, by design)
// and re-attempts with jittered backoff. No FIFO order.
func NonFair() Option { return func(c *config) { c.fair = false } }

// WithData stores data (for example the holder's id or host) in the lock's
// node, for `shepherd status` and operators. At most recipe.MaxDataLen bytes.
func WithData(data []byte) Option {
	return func(c *config) {
		if err := line.CheckData(data); err != nil {
			c.setErr(fmt.Errorf("mutex: %w", err))
			return
		}
		c.data = append([]byte(nil), data...)
	}
}

// WithDisconnectPolicy sets what a lost connection does to this lock's
// holds (default: the session's, see session.WithDisconnectPolicy): end
// them (session.StopOnDisconnect), or pause them until the same session is
// back (session.PauseOnDisconnect; see hold.Hold, Paused and Gate).
func WithDisconnectPolicy(p session.DisconnectPolicy) Option {
	return func(c *config) {
		if !p.Valid() {
			c.setErr(fmt.Errorf("mutex: %w: disconnect policy %v", ErrInvalidArgument, p))
			return
		}
		c.policy = p
	}
}

// WithNaming names the lock's nodes as names says (recipe.CuratorNaming, the
// default, or recipe.KazooNaming). With recipe.KazooNaming a mutex's and a
// writer's nodes are <guid>__lock__<seq> and a reader's <guid>__rlock__<seq>,
// as Kazoo's Lock, WriteLock and ReadLock name theirs: a Kazoo Lock built
// with the default constructor sees them and shares the path. A path is
// named one way only: a lock finding nodes named the other way fails with
// ErrForeignRecipe (and grants no one). The non-fair lock has one node and
// no naming; it ignores this option.
func WithNaming(names recipe.Naming) Option {
	return func(c *config) {
		if !names.Valid() {
			c.setErr(fmt.Errorf("mutex: %w: names %v", ErrInvalidArgument, names))
			return
		}
		c.names = names
	}
}
