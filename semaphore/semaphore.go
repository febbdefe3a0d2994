package semaphore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/fence"
	"github.com/shepherdzk/shepherd/internal/layout"
	"github.com/shepherdzk/shepherd/internal/zkpath"
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
	ErrNoLease = recipe.NewError("semaphore: no lease free")
	// ErrConflict: SetMaxLeases lost a race with another change of the
	// limit, or the limit kept changing while an acquire read it.
	ErrConflict = recipe.NewError("semaphore: the limit was changed concurrently")
	// ErrNoSlot: with WithSlots, no free slot was found for a granted
	// lease (the lease was given back). Every claim belongs to a held
	// lease, so this takes a claim that outlived its lease: its lease node
	// deleted by hand while its session lives, or claims made by something
	// other than this package.
	ErrNoSlot = recipe.NewError("semaphore: no free slot")
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
// column (and in recipe.Entry.Data), as the CLI's `shepherd semaphore -id`
// stores it. Without it the ID column shows "-". At most recipe.MaxDataLen
// bytes.
func WithData(data []byte) Option {
	return func(c *config) {
		if err := recipe.CheckData(data); err != nil {
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
// recipe.Hold, Lease.Paused and Lease.Gate).
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
	locks  recipe.Line
	leases string
	slots  bool // WithSlots
	log    *slog.Logger

	mu      sync.Mutex
	version int32 // the path's data version when the limit was last read
	known   bool
	// pins are leases granted by this client: while one of them is valid,
	// the path cannot have been removed (see fresh).
	pins []*recipe.Hold
}

// New returns a client of the semaphore at path with the given limit. It
// does no I/O; the limit is checked against the one recorded at the path on
// every acquire. A nil session, an invalid path, a limit out of range or an
// invalid option is an error (ErrInvalidArgument, ErrInvalidPath).
func New(sess *session.Session, path string, maxLeases int, opts ...Option) (*Semaphore, error) {
	var c config
	for _, o := range opts {
		if o == nil {
			c.setErr(fmt.Errorf("semaphore: %w: nil option", ErrInvalidArgument))
			continue
		}
		o(&c)
	}
	if c.err != nil {
		return nil, c.err
	}
	if sess == nil {
		return nil, fmt.Errorf("semaphore: %w: nil session", ErrInvalidArgument)
	}
	if err := zkpath.Validate(path); err != nil {
		return nil, fmt.Errorf("semaphore: %w", err)
	}
	if maxLeases < 1 || maxLeases > MaxLeasesLimit {
		return nil, fmt.Errorf("semaphore: %w: maxLeases %d (want 1..%d)", ErrInvalidArgument, maxLeases, MaxLeasesLimit)
	}
	full := sess.Path(path)
	s := &Semaphore{sess: sess, path: full, max: maxLeases, data: c.data, leases: full + "/" + leasesChild,
		slots: c.slots, log: sess.Logger().With("semaphore", full)}
	s.locks = recipe.Line{Sess: sess, Recipe: "semaphore", Path: full + "/" + locksChild, Ensure: s.ensureLocks,
		OnDisconnect: c.policy}
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

func markerData(max int) []byte { return []byte(layout.SemaphoreMarker + strconv.Itoa(max)) }

// parseMarker returns the limit recorded in data.
func parseMarker(data []byte) (int, bool) {
	rest, ok := strings.CutPrefix(string(data), layout.SemaphoreMarker)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

// The semaphore's path and its locks and leases children are container
// nodes: once no one holds or waits, the server removes the leases and locks
// (each has had children, has none left), then the path. The limit recorded
// in the path's data goes with it; the next client to use the path creates
// it again with its own limit. So a client's knowledge of the limit (the
// version its take checks) is trusted only while the path is pinned: while
// its own node waits in line, or one of its leases is held (see fresh). A
// path removed and created again starts at version 0 again, so a version
// alone cannot tell two of its lives apart.

// ensureLocks creates the locks child when Enter finds it missing, and the
// whole semaphore (parents, the path with this client's limit, locks and
// leases) when the path is missing too.
func (s *Semaphore) ensureLocks(ep *session.Epoch) error {
	// A Kazoo Semaphore's path counts every child as a lease: refuse it
	// before adding one.
	if data, _, err := ep.Conn().Get(s.path); err == nil && isDecimal(data) {
		return kazooSemaphore(s.path, data)
	}
	_, err := ep.Conn().CreateContainer(s.locks.Path, nil, zk.FlagContainer, s.sess.ACL())
	if err == nil || errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	if !errors.Is(err, zk.ErrNoNode) {
		return session.ACLError("create", s.locks.Path, err)
	}
	return s.create(ep)
}

// create creates the semaphore's path with this client's limit recorded,
// and its children, as containers (and the parents, see recipe.EnsurePath).
// A path created meanwhile by another client is left as it is (ensureMeta
// checks its limit).
func (s *Semaphore) create(ep *session.Epoch) error {
	s.mu.Lock()
	s.known = false // a new life of the path: its record is read again
	s.mu.Unlock()
	var err error
	for round := 0; round < 10; round++ {
		if err = recipe.EnsurePath(s.sess, ep, zkpath.Parent(s.path)); err != nil {
			return err
		}
		_, err = ep.Conn().CreateContainer(s.path, markerData(s.MaxLeases()), zk.FlagContainer, s.sess.ACL())
		if errors.Is(err, zk.ErrNoNode) {
			continue // a parent was removed meanwhile
		}
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		if err != nil {
			return session.ACLError("create", s.path, err)
		}
		// A container just created has had no child: the server does not
		// remove it before its children exist.
		return s.ensureChildren(ep)
	}
	return err
}

// ensureChildren creates the locks and leases children that are missing.
func (s *Semaphore) ensureChildren(ep *session.Epoch) error {
	for _, c := range []string{locksChild, leasesChild} {
		_, err := ep.Conn().CreateContainer(s.path+"/"+c, nil, zk.FlagContainer, s.sess.ACL())
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return session.ACLError("create", s.path+"/"+c, err)
		}
	}
	return nil
}

// fresh reports whether the limit read last is still the path's: it was
// read, and a lease of this client has been held since, so the path has not
// been removed and created again.
func (s *Semaphore) fresh() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	live := s.pins[:0]
	for _, h := range s.pins {
		if h.Valid() {
			live = append(live, h)
		}
	}
	clear(s.pins[len(live):])
	s.pins = live
	return s.known && len(live) > 0
}

// pin records a lease granted in the life of the path whose limit was read.
func (s *Semaphore) pin(h *recipe.Hold) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pins = append(s.pins, h)
}

// ensureMeta reads (or records) the limit at the path and checks it against
// ours. One round trip once the path exists.
func (s *Semaphore) ensureMeta(ep *session.Epoch) error {
	for attempt := 0; attempt < 5; attempt++ {
		data, st, err := ep.Conn().Get(s.path)
		if errors.Is(err, zk.ErrNoNode) {
			if err := s.create(ep); err != nil {
				return err
			}
			continue
		} else if err != nil {
			return session.ACLError("getData", s.path, err)
		}
		if len(data) == 0 {
			// An empty node: adopt it, unless it is another recipe's.
			names, _, err := ep.Conn().Children(s.path)
			if err != nil {
				return session.ACLError("getChildren", s.path, err)
			}
			for _, n := range names {
				if _, ok := recipe.ParseName(n); ok || n == "nonfair-lock" {
					return fmt.Errorf("semaphore: %w: %s holds %s", ErrWrongKind, s.path, n)
				}
			}
			_, err = ep.Conn().Multi(
				&zk.SetDataRequest{Path: s.path, Data: markerData(s.MaxLeases()), Version: st.Version})
			if err != nil && !errors.Is(err, zk.ErrBadVersion) {
				return session.ACLError("setData", s.path, err)
			}
			if err := s.ensureChildren(ep); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			continue
		}
		recorded, ok := parseMarker(data)
		if !ok && isDecimal(data) {
			return kazooSemaphore(s.path, data)
		}
		if !ok {
			return fmt.Errorf("semaphore: %w: %s is not a semaphore's path (data %q)", ErrWrongKind, s.path, truncate(data))
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if recorded != s.max {
			s.known = false
			return fmt.Errorf("semaphore %s: %w: recorded %d, this client %d", s.path, ErrMaxLeasesMismatch, recorded, s.max)
		}
		s.version, s.known = st.Version, true
		return nil
	}
	return fmt.Errorf("semaphore %s: %w: the limit kept changing while it was read or recorded", s.path, ErrConflict)
}

func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

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

// claimSlots takes the slots of l, a lease just granted with the limit read
// (see claim), and attaches the claims to its hold: its release deletes them
// with its lease nodes. On failure the lease is given back (its release goes
// on in the background) and a claim that may have landed unseen is swept.
func (s *Semaphore) claimSlots(ctx context.Context, ep *session.Epoch, l *Lease) error {
	r, err := s.claim(ctx, ep, l.hold, s.MaxLeases())
	if err == nil {
		err = l.hold.Attach(r.claims...)
	}
	if err != nil {
		// Given back at once: nothing waits for the server.
		rctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = l.hold.Release(rctx)
		go s.sweepClaims(r.ep, l.hold.Nodes(), nil)
		return err
	}
	if r.unknown {
		go s.sweepClaims(r.ep, l.hold.Nodes(), r.claims)
	}
	l.slots = r.slots
	return nil
}

func (s *Semaphore) grant(ep *session.Epoch, paths []string) *Lease {
	return &Lease{s: s, hold: s.locks.NewHold(ep, 0, paths...)}
}

// SetMaxLeases changes the limit recorded at the path, from this client's
// limit to max: a versioned change that fails with ErrConflict if the limit
// changed meanwhile, and ErrMaxLeasesMismatch if this client's limit is not
// the recorded one. Other clients then get ErrMaxLeasesMismatch until they
// use the new limit. Leases held beyond a lowered limit are not revoked; no
// new lease is granted until the count is below it. A change whose answer is
// lost with the connection is recognised once the connection is back: if
// the path records max, the change is done.
func (s *Semaphore) SetMaxLeases(ctx context.Context, max int) error {
	if max < 1 || max > MaxLeasesLimit {
		return fmt.Errorf("semaphore: %w: maxLeases %d (want 1..%d)", ErrInvalidArgument, max, MaxLeasesLimit)
	}
	sent := false // a change was sent whose answer was lost
	return s.sess.Do(ctx, func(ep *session.Epoch) error {
		// The path is a container: the server removes it once nobody uses
		// it, and ensureMeta creates it again. A change that finds it gone
		// goes round again (a few times: it cannot vanish while in use).
		for gone := 0; ; gone++ {
			if sent {
				// Did it land? The path records max: ours, or the same
				// change by someone else; either way the limit is max now.
				// Gone: nobody uses the path, so the change is made anew.
				data, _, err := ep.Conn().Get(s.path)
				if err != nil && !errors.Is(err, zk.ErrNoNode) {
					return err
				}
				if recorded, ok := parseMarker(data); err == nil && ok && recorded == max {
					s.mu.Lock()
					s.max, s.known = max, false
					s.mu.Unlock()
					return nil
				}
			}
			if err := s.ensureMeta(ep); err != nil {
				return err
			}
			s.mu.Lock()
			version := s.version
			s.mu.Unlock()
			_, err := ep.Conn().Set(s.path, markerData(max), version)
			sent = sent || session.OutcomeUnknown(err)
			if errors.Is(err, zk.ErrNoNode) && gone < 5 {
				continue
			}
			if errors.Is(err, zk.ErrBadVersion) {
				return fmt.Errorf("semaphore %s: %w", s.path, ErrConflict)
			}
			if err != nil {
				return session.ACLError("setData", s.path, err)
			}
			s.mu.Lock()
			s.max, s.known = max, false
			s.mu.Unlock()
			return nil
		}
	})
}

// Lease is one or more held leases.
type Lease struct {
	s     *Semaphore
	hold  *recipe.Hold
	slots []int // WithSlots: one per lease node, in order
	once  sync.Once
	err   error
}

// Slot is the lease's slot (WithSlots): a number in 0..maxLeases−1 that no
// other live lease with a slot on this path holds, the same for the lease's
// whole life (through a pause too: its claim is an ephemeral node of the
// same session), free for others once the lease is released or lost. For a
// lease of several (AcquireN), it is the first of Slots. Without
// WithSlots it is -1.
//
// Uniqueness is among shepherd clients that use WithSlots: a client
// without it (or Curator's InterProcessSemaphoreV2 on the same path) holds
// leases that count toward maxLeases but no slot, which only leaves more
// slots free. After SetMaxLeases lowers the limit, a lease keeps the slot it
// has, even one at or above the new limit; leases granted later get slots
// below the new limit.
func (l *Lease) Slot() int {
	if len(l.slots) == 0 {
		return -1
	}
	return l.slots[0]
}

// Slots are the slots of each of the lease's leases (WithSlots), distinct,
// in the order of Nodes; nil without WithSlots. See Slot.
func (l *Lease) Slots() []int { return append([]int(nil), l.slots...) }

// Release gives the leases back, whatever ctx: Context ends (Lost stays
// open: a release is no loss) and their delete is under way when Release
// returns. ctx only bounds how long Release waits for the server to confirm
// it: if it cannot within ctx, Release returns ctx's error and the delete
// goes on in the background until the leases are gone or their session is.
// It is idempotent: the first call reports ErrLost if the lease had been
// lost before (or ctx's error), later calls return nil.
func (l *Lease) Release(ctx context.Context) error {
	first := false
	l.once.Do(func() {
		first = true
		if err := l.hold.Release(ctx); err != nil {
			l.err = fmt.Errorf("semaphore %s: %w", l.s.path, err)
		}
	})
	if !first {
		return nil
	}
	return l.err
}

// Lost is closed when the lease is, or may be, lost, never by Release (see
// recipe.Hold for the hold contract).
func (l *Lease) Lost() <-chan struct{} { return l.hold.Lost() }

// Paused returns the lease's pause signal (PauseOnDisconnect): a channel
// closed when the lease pauses, renewed at each resume (see recipe.Hold).
func (l *Lease) Paused() <-chan struct{} { return l.hold.Paused() }

// RevokeRequested is closed when an operator asks for the lease (shepherd
// revoke -ask, recipe.AskRevoke, on any of its nodes): release it when the
// work allows (see recipe.Hold.RevokeRequested).
func (l *Lease) RevokeRequested() <-chan struct{} { return l.hold.RevokeRequested() }

// Gate returns nil while the lease is held and not paused; while it is
// paused, it waits until the lease resumes (nil), is lost (ErrLost) or ctx
// ends (see recipe.Hold.Gate).
func (l *Lease) Gate(ctx context.Context) error { return l.hold.Gate(ctx) }

// Context ends when the lease ends for any reason: a loss (as Lost) or
// Release. Pass it to the work the lease bounds.
func (l *Lease) Context() context.Context { return l.hold.Context() }

// Token is the lease's fencing token (the creation zxid of its first node).
// The grant does not reveal it (the multi-op that creates the leases answers
// with their paths only): the lease's watch on its own node reads it right
// after the grant, and Token waits for that read (no request of its own).
func (l *Lease) Token(ctx context.Context) (recipe.Token, error) { return l.hold.Token(ctx) }

// Fenced runs ops as one multi-op that lands only while the lease is held
// (its first node exists: the nodes of one lease are created and deleted
// together); a write after the lease is gone fails with an error matching
// ErrLost. ops are fence.Set, fence.Create and fence.Delete (paths in the
// session's namespace), or fence.Raw's go-zookeeper requests (see
// recipe.Hold.Fenced); it returns one response per op (a Set's Stat.Version is the node's new
// version).
func (l *Lease) Fenced(ctx context.Context, ops ...fence.Op) ([]zk.MultiResponse, error) {
	return l.hold.Fenced(ctx, ops...)
}

// Validate checks with the server (after a sync) that the lease is still
// held: its first node exists and belongs to this session. Use it before a
// critical step; between checks, watch Lost.
func (l *Lease) Validate(ctx context.Context) error { return l.hold.Validate(ctx) }

// Nodes are the lease's nodes.
func (l *Lease) Nodes() []string { return l.hold.Nodes() }

// Count is the number of leases held.
func (l *Lease) Count() int { return len(l.hold.Nodes()) }

// Hold is the underlying hold. A lease's fence checks that its first node
// exists (see recipe.Hold.Fenced).
func (l *Lease) Hold() *recipe.Hold { return l.hold }

// ErrSequenceExhausted: the sequence counter of the semaphore's line has run
// out and the line has no order (see recipe.ErrSequenceExhausted): Acquire
// fails closed.
var ErrSequenceExhausted = recipe.ErrSequenceExhausted

// kazooSemaphore is the refusal of a Kazoo Semaphore's path.
func kazooSemaphore(path string, data []byte) error {
	return fmt.Errorf("semaphore: %w (%w): %s is a Kazoo Semaphore's path (max_leases %s in its data): "+
		"Kazoo counts every child of the path as a lease and sees none of shepherd's", ErrWrongKind,
		recipe.ErrForeignRecipe, path, truncate(data))
}

// isDecimal reports whether data is a decimal number, as a Kazoo
// Semaphore's path holds its max_leases.
func isDecimal(data []byte) bool {
	if len(data) == 0 || len(data) > 10 {
		return false
	}
	for _, c := range data {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
