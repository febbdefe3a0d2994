package semaphore

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/shepherdzk/shepherd/internal/construct"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
)

// Errors, matched with errors.Is.
var (
	ErrInvalidPath       = recipe.ErrInvalidPath
	ErrInvalidArgument   = recipe.ErrInvalidArgument
	ErrMaxLeasesMismatch = recipe.ErrMaxLeasesMismatch
	ErrWrongKind         = recipe.ErrWrongKind
	ErrLost              = recipe.ErrLost
	ErrClosed            = recipe.ErrClosed
	// ErrNoLease: TryAcquire found no lease free (or waiters ahead).
	ErrNoLease = line.NewError("semaphore: no lease free")
	// ErrConflict: SetMaxLeases lost a race with another change of the
	// limit, or the limit kept changing while an acquire read it.
	ErrConflict = line.NewError("semaphore: the limit was changed concurrently")
	// ErrNoSlot: with WithSlots, no free slot was found for a granted
	// lease (the lease was given back). Every claim belongs to a held
	// lease, so this takes a claim that outlived its lease: its lease node
	// deleted by hand while its session lives, or claims made by something
	// other than this package.
	ErrNoSlot = line.NewError("semaphore: no free slot")
)

const (
	locksChild  = layout.SemaphoreLocks
	leasesChild = layout.SemaphoreLeases
	// MaxLeasesLimit bounds maxLeases (a multi-op creates up to n nodes).
	MaxLeasesLimit = 10000
)

// Option configures a Semaphore. An invalid value makes New fail with an
// error matching ErrInvalidArgument.
type Option func(*config)

type config struct {
	data   []byte
	policy session.DisconnectPolicy
	slots  bool
	err    error // the first invalid option
}

func (c *config) setErr(err error) {
	if c.err == nil {
		c.err = err
	}
}

// WithData stores data in the lease and waiting nodes, for `shepherd
// status` and operators: it is the holder's id, shown in status's ID
// column (and in admin.Entry.Data), as the CLI's `shepherd semaphore -id`
// stores it. Without it the ID column shows "-". At most recipe.MaxDataLen
// bytes.
func WithData(data []byte) Option {
	return func(c *config) {
		if err := line.CheckData(data); err != nil {
			c.setErr(fmt.Errorf("semaphore: %w", err))
			return
		}
		c.data = append([]byte(nil), data...)
	}
}

// WithDisconnectPolicy sets what a lost connection does to this
// semaphore's leases (default: the session's, see
// session.WithDisconnectPolicy): end them (session.StopOnDisconnect), or
// pause them until the same session is back (session.PauseOnDisconnect; see
// hold.Hold, Lease.Paused and Lease.Gate).
func WithDisconnectPolicy(p session.DisconnectPolicy) Option {
	return func(c *config) {
		if !p.Valid() {
			c.setErr(fmt.Errorf("semaphore: %w: disconnect policy %v", ErrInvalidArgument, p))
			return
		}
		c.policy = p
	}
}

// Semaphore is a client of the semaphore at one path. Its methods are safe
// for concurrent use.
type Semaphore struct {
	sess   *session.Session
	path   string
	max    int
	data   []byte
	locks  line.Line
	leases string
	slots  bool // WithSlots
	log    *slog.Logger

	mu      sync.Mutex
	version int32 // the path's data version when the limit was last read
	known   bool
	// pins are leases granted by this client: while one of them is valid,
	// the path cannot have been removed (see fresh).
	pins []*hold.Hold
}

// New returns a client of the semaphore at path with the given limit. It
// does no I/O; the limit is checked against the one recorded at the path on
// every acquire. A nil session, an invalid path, a limit out of range or an
// invalid option is an error (ErrInvalidArgument, ErrInvalidPath).
func New(sess *session.Session, path string, maxLeases int, opts ...Option) (*Semaphore, error) {
	var c config
	construct.Apply("semaphore", &c, opts, c.setErr)
	if c.err != nil {
		return nil, c.err
	}
	if err := construct.Check("semaphore", sess, path); err != nil {
		return nil, err
	}
	if maxLeases < 1 || maxLeases > MaxLeasesLimit {
		return nil, fmt.Errorf("semaphore: %w: maxLeases %d (want 1..%d)", ErrInvalidArgument, maxLeases, MaxLeasesLimit)
	}
	full := sess.Path(path)
	s := &Semaphore{sess: sess, path: full, max: maxLeases, data: c.data, leases: full + "/" + leasesChild,
		slots: c.slots, log: sess.Logger().With("semaphore", full)}
	// The waiters' line checks the semaphore's path before the first
	// write there (another kind's is refused).
	s.locks = line.Line{Sess: sess, Recipe: "semaphore", Path: full + "/" + locksChild, Ensure: s.ensureLocks,
		Layout: &line.PathCheck{Recipe: layout.Semaphore, Path: full}, OnDisconnect: c.policy}
	return s, nil
}

// MaxLeases is this client's limit.
func (s *Semaphore) MaxLeases() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max
}

// Path is the semaphore's full path (namespace included).
func (s *Semaphore) Path() string { return s.path }

// Acquire takes one lease, waiting in line until one is free or ctx ends.
func (s *Semaphore) Acquire(ctx context.Context) (*Lease, error) { return s.AcquireN(ctx, 1) }

// AcquireN takes n leases at once, all or none, waiting in line until n are
// free or ctx ends. When ctx ends, the waiter's node is removed.
func (s *Semaphore) AcquireN(ctx context.Context, n int) (*Lease, error) {
	return s.acquire(ctx, n, true)
}

// TryAcquire takes a lease if one is free now and no one waits ahead; else it
// returns ErrNoLease.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Lease, error) { return s.acquire(ctx, 1, false) }

// TryAcquireN is TryAcquire for n leases at once.
func (s *Semaphore) TryAcquireN(ctx context.Context, n int) (*Lease, error) {
	return s.acquire(ctx, n, false)
}

// ErrSequenceExhausted: the sequence counter of the semaphore's line has run
// out and the line has no order (see recipe.ErrSequenceExhausted): Acquire
// fails closed.
var ErrSequenceExhausted = recipe.ErrSequenceExhausted
