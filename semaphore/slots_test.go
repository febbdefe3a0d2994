package semaphore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// claims are the slot claims under path, sorted.
func claims(t *testing.T, s *session.Session, p string) []string {
	t.Helper()
	c := children(t, s, p+"/slots")
	slices.Sort(c)
	return c
}

// claimData reads a claim: its data and owner.
func claimData(t *testing.T, s *session.Session, p string, slot int) (string, int64) {
	t.Helper()
	ep, err := s.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	data, st, err := ep.Conn().Get(p + "/slots/" + strconv.Itoa(slot))
	require.NoError(t, err)
	return string(data), st.EphemeralOwner
}

// TestSlots: with maxLeases 3, three holders get slots 0, 1 and 2; a release
// frees its slot and the next holder takes it; AcquireN(2) gets two
// distinct slots; without WithSlots a lease has slot -1. Each claim's data
// names its lease node and its release leaves no claim behind.
func TestSlots(t *testing.T) {
	p := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	obs := open(t, zk.Servers())
	var leases []*semaphore.Lease
	var sems []*semaphore.Semaphore
	for range 4 {
		sem, err := semaphore.New(open(t, zk.Servers()), p, 3, semaphore.WithSlots())
		require.NoError(t, err)
		sems = append(sems, sem)
	}
	for i := range 3 {
		l, err := sems[i].Acquire(ctx)
		require.NoError(t, err)
		require.Equal(t, i, l.Slot())
		require.Equal(t, []int{i}, l.Slots())
		data, _ := claimData(t, obs, sems[i].Path(), i)
		require.Equal(t, path.Base(l.Nodes()[0]), data, "a claim names its lease node")
		leases = append(leases, l)
	}
	require.Equal(t, []string{"0", "1", "2"}, claims(t, obs, sems[0].Path()))
	_, err := sems[3].TryAcquire(ctx)
	require.ErrorIs(t, err, semaphore.ErrNoLease)

	require.NoError(t, leases[1].Release(ctx))
	require.Equal(t, []string{"0", "2"}, claims(t, obs, sems[0].Path()), "the release took its claim")
	l, err := sems[3].Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, l.Slot(), "the freed slot is taken again")
	for _, x := range []*semaphore.Lease{leases[0], leases[2], l} {
		require.NoError(t, x.Release(ctx))
	}
	require.Empty(t, claims(t, obs, sems[0].Path()))

	// AcquireN: a slot per lease, distinct.
	n, err := semaphore.New(open(t, zk.Servers()), uniquePath(t), 3, semaphore.WithSlots())
	require.NoError(t, err)
	one, err := n.Acquire(ctx)
	require.NoError(t, err)
	two, err := n.AcquireN(ctx, 2)
	require.NoError(t, err)
	require.Equal(t, 0, one.Slot())
	require.Equal(t, []int{1, 2}, two.Slots())
	require.Equal(t, 1, two.Slot())
	require.Equal(t, []string{"0", "1", "2"}, claims(t, obs, n.Path()))
	require.NoError(t, two.Release(ctx))
	require.Equal(t, []string{"0"}, claims(t, obs, n.Path()), "a release of 2 takes both claims")
	require.NoError(t, one.Release(ctx))

	// Without WithSlots: no slot, no claim.
	plain, err := semaphore.New(obs, uniquePath(t), 3)
	require.NoError(t, err)
	pl, err := plain.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, -1, pl.Slot())
	require.Nil(t, pl.Slots())
	require.False(t, exists(t, obs, plain.Path()+"/slots"))
	require.NoError(t, pl.Release(ctx))
}

// TestSlotsOneSession: two Semaphore values on one session (and a client
// without slots, whose lease counts but takes no slot) hold distinct slots.
func TestSlotsOneSession(t *testing.T) {
	p := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	s := open(t, zk.Servers())
	plain, _ := semaphore.New(s, p, 3)
	a, _ := semaphore.New(s, p, 3, semaphore.WithSlots())
	b, _ := semaphore.New(s, p, 3, semaphore.WithSlots())
	lp, err := plain.Acquire(ctx)
	require.NoError(t, err)
	la, err := a.Acquire(ctx)
	require.NoError(t, err)
	lb, err := b.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, la.Slot())
	require.Equal(t, 1, lb.Slot())
	require.NoError(t, la.Release(ctx))
	la, err = a.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, la.Slot())
	for _, l := range []*semaphore.Lease{lp, la, lb} {
		require.NoError(t, l.Release(ctx))
	}
	require.Empty(t, claims(t, s, a.Path()))
}

// TestSlotsLostClaimAnswer: the claim's create reaches the server and its
// answer is lost. Riding through the disconnect (PauseOnDisconnect), the
// lease finds its claim (its session's, naming its lease node) and adopts
// it: one claim, the lease's slot. Under StopOnDisconnect the lease is lost
// with the connection: it is given back, the claim that landed unseen is
// swept, and the acquire takes a new lease and slot: one claim in the end,
// the new lease's.
func TestSlotsLostClaimAnswer(t *testing.T) {
	for _, policy := range []session.DisconnectPolicy{session.PauseOnDisconnect, session.StopOnDisconnect} {
		t.Run(policy.String(), func(t *testing.T) {
			p := uniquePath(t)
			ctx := ctxT(t, 30*time.Second)
			obs := open(t, zk.Servers())
			px, err := zktest.NewProxy(zk.Servers()...)
			require.NoError(t, err)
			t.Cleanup(func() { px.Close() })
			s := open(t, px.Addrs(), session.WithSessionTimeout(8*time.Second))
			sem, err := semaphore.New(s, p, 3, semaphore.WithSlots(), semaphore.WithDisconnectPolicy(policy))
			require.NoError(t, err)
			// The path and its slots exist, so the claim's create is the
			// request whose answer is lost.
			warm, err := sem.Acquire(ctx)
			require.NoError(t, err)
			require.NoError(t, warm.Release(ctx))
			other, _ := semaphore.New(obs, p, 3, semaphore.WithSlots())
			keep, err := other.Acquire(ctx) // slot 0: pins the path and its slots
			require.NoError(t, err)
			require.Equal(t, 0, keep.Slot())

			var once sync.Once
			muted := make(chan struct{})
			reset := semaphore.SetTestHookBeforeClaim(func() {
				once.Do(func() { px.MuteReplies(); close(muted) })
			})
			t.Cleanup(reset)
			got := make(chan error, 1)
			var l *semaphore.Lease
			go func() {
				var err error
				l, err = sem.Acquire(ctx)
				got <- err
			}()
			<-muted
			require.Eventually(t, func() bool { return len(claims(t, obs, p)) == 2 }, 10*time.Second, 2*time.Millisecond,
				"the claim lands")
			sid := s.SessionID()
			px.Heal()
			require.NoError(t, <-got)
			reset()
			require.Equal(t, sid, s.SessionID(), "the session lived through the disconnect")
			t.Logf("%v: slot %d after the lost answer", policy, l.Slot())
			require.NotEqual(t, 0, l.Slot())
			require.Eventually(t, func() bool {
				return slices.Equal(claims(t, obs, p), []string{"0", strconv.Itoa(l.Slot())})
			}, 10*time.Second, 5*time.Millisecond, "one claim per lease: %v", claims(t, obs, p))
			data, owner := claimData(t, obs, p, l.Slot())
			require.Equal(t, path.Base(l.Nodes()[0]), data)
			require.Equal(t, sid, owner)
			if policy == session.PauseOnDisconnect {
				require.Equal(t, 1, l.Slot(), "the claim that landed is adopted")
			}
			require.NoError(t, l.Release(ctx))
			require.NoError(t, keep.Release(ctx))
			require.Eventually(t, func() bool { return len(claims(t, obs, p)) == 0 }, 10*time.Second, 5*time.Millisecond)
		})
	}
}

// TestSlotsSurvivePause: a lease that rides through a disconnect keeps its
// slot (its claim is an ephemeral node of the same session), and nobody
// else takes it meanwhile.
func TestSlotsSurvivePause(t *testing.T) {
	p := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	px, err := zktest.NewProxy(zk.Servers()...)
	require.NoError(t, err)
	t.Cleanup(func() { px.Close() })
	s := open(t, px.Addrs(), session.WithSessionTimeout(8*time.Second))
	sem, _ := semaphore.New(s, p, 2, semaphore.WithSlots(), semaphore.WithDisconnectPolicy(session.PauseOnDisconnect))
	l, err := sem.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, l.Slot())
	paused := l.Paused()
	px.Sever()
	<-paused
	obs := open(t, zk.Servers())
	other, _ := semaphore.New(obs, p, 2, semaphore.WithSlots())
	lo, err := other.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, lo.Slot(), "the paused lease's slot stays taken")
	require.NoError(t, l.Gate(ctx), "resumed")
	require.Equal(t, 0, l.Slot())
	require.Equal(t, []string{"0", "1"}, claims(t, obs, other.Path()))
	require.NoError(t, l.Release(ctx))
	require.NoError(t, lo.Release(ctx))
	require.Empty(t, claims(t, obs, other.Path()))
}

// slotCheck checks slots on one clock: a lease holds its slots from its
// grant until its holder releases it or its loss signal fires; when a lease
// is granted, no other lease that holds holds one of its slots, and every
// slot is below the limit.
type slotCheck struct {
	mu         sync.Mutex
	max        int
	held       map[*semaphore.Lease][]int
	grants     int
	violations []string
}

func (c *slotCheck) granted(id string, l *semaphore.Lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.grants++
	mine := l.Slots()
	if len(mine) != l.Count() {
		c.violations = append(c.violations, fmt.Sprintf("%s: %d leases, slots %v", id, l.Count(), mine))
	}
	for _, k := range mine {
		if k < 0 || k >= c.max {
			c.violations = append(c.violations, fmt.Sprintf("%s: slot %d out of 0..%d", id, k, c.max-1))
		}
	}
	for h, slots := range c.held {
		select {
		case <-h.Lost():
			delete(c.held, h)
			continue
		default:
		}
		for _, k := range mine {
			if slices.Contains(slots, k) && len(c.violations) < 20 {
				c.violations = append(c.violations, fmt.Sprintf("%s granted slot %d, held by a live lease (%v)", id, k, slots))
			}
		}
	}
	c.held[l] = mine
}

func (c *slotCheck) released(l *semaphore.Lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.held, l)
}

// TestSlotsUnderSessionKills: 4 clients take at least 200 leases (some two
// at once) of a semaphore of 3 while the sessions of holders are ended by the
// server, at least 3 times: the clients go on until both counts are reached
// (bounded), so a fast machine cannot finish the grants before the kills. At
// any moment no two live holders share a slot, every slot is below 3, and no
// claim is left after the run.
func TestSlotsUnderSessionKills(t *testing.T) {
	p := uniquePath(t)
	ctx := ctxT(t, 60*time.Second)
	const max, clients, total = 3, 4, 200
	check := &slotCheck{max: max, held: map[*semaphore.Lease][]int{}}
	obs := open(t, zk.Servers())
	type client struct {
		sess  *session.Session
		proxy *zktest.Proxy
		mu    sync.Mutex
		lease *semaphore.Lease
	}
	cs := make([]*client, clients)
	var mu sync.Mutex
	grants := 0
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range cs {
		px, err := zktest.NewProxy(zk.Servers()...)
		require.NoError(t, err)
		t.Cleanup(func() { px.Close() })
		s := open(t, px.Addrs(), session.WithSessionTimeout(2*time.Second))
		sem, err := semaphore.New(s, p, max, semaphore.WithSlots())
		require.NoError(t, err)
		c := &client{sess: s, proxy: px}
		cs[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 20*total; n++ { // bounded; the kill loop ends the run
				select {
				case <-stop:
					return
				default:
				}
				actx, cancel := testutil.CtxUntil(ctx, stop)
				k := 1
				if n%5 == 4 {
					k = 2
				}
				l, err := sem.AcquireN(actx, k)
				if err != nil {
					cancel()
					select {
					case <-stop:
					default:
						errs <- fmt.Errorf("client %d: %w", i, err)
					}
					return
				}
				check.granted(fmt.Sprint("c", i), l)
				mu.Lock()
				grants++
				mu.Unlock()
				c.mu.Lock()
				c.lease = l
				c.mu.Unlock()
				select {
				case <-l.Lost():
				case <-time.After(time.Duration(5+rand.IntN(20)) * time.Millisecond):
				case <-stop:
				}
				check.released(l)
				c.mu.Lock()
				c.lease = nil
				c.mu.Unlock()
				_ = l.Release(context.Background())
				cancel()
			}
		}()
	}
	// Kill a holder's session every 100ms or so, until 200 grants and 3
	// kills (bounded).
	const minKills = 3
	kills := 0
	deadline := time.Now().Add(40 * time.Second)
	for round := 0; round < 400 && time.Now().Before(deadline); round++ {
		mu.Lock()
		done := grants >= total && kills >= minKills
		mu.Unlock()
		if done {
			break
		}
		time.Sleep(100 * time.Millisecond) // pacing of the fault, not synchronisation
		c := cs[rand.IntN(clients)]
		c.mu.Lock()
		held := c.lease != nil
		c.mu.Unlock()
		if !held {
			continue
		}
		if c.proxy.ExpireSession(ctx, c.sess.SessionID()) == nil {
			kills++
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	check.mu.Lock()
	violations, n := check.violations, check.grants
	check.mu.Unlock()
	t.Logf("%d grants, %d session kills", n, kills)
	require.Empty(t, violations)
	require.GreaterOrEqual(t, n, total)
	require.GreaterOrEqual(t, kills, minKills)
	require.Eventually(t, func() bool { return len(claims(t, obs, p)) == 0 },
		10*time.Second, 5*time.Millisecond, "no claim is left")
}

// TestSlotsRequests: a slot costs two requests per grant (a listing of the
// slots and the claim's create); the release is still one multi-op.
func TestSlotsRequests(t *testing.T) {
	p := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	a := open(t, zk.Servers())
	other, _ := semaphore.New(open(t, zk.Servers()), p, 3, semaphore.WithSlots())
	keep, err := other.Acquire(ctx) // pins the path and its slots
	require.NoError(t, err)
	sa, _ := semaphore.New(a, p, 3, semaphore.WithSlots())
	pinContainers(t, a, p)
	ra := requests(t, a)
	l, err := sa.Acquire(ctx)
	require.NoError(t, err)
	// The value's first Acquire checks its path once (5: its parent's
	// data, its data and children, and the children of its locks and
	// leases: line.PathCheck), enters (2: the create and the listing sent
	// with it), reads the limit (1), counts the leases (1), takes one (1),
	// and claims a slot (2: the slots' listing and the claim). The
	// lease's own-node watch starts 10 ms after the grant: not counted.
	require.Equal(t, int64(5+2+1+1+1+2), testutil.Settled(t, ra, 5+2+1+1+1+2),
		"a value's first Acquire with a slot, no lease held")
	require.Equal(t, 1, l.Slot())
	require.NoError(t, l.Release(ctx))
	require.Equal(t, int64(1), ra(), "Release")
	require.NoError(t, keep.Release(ctx))
}

// TestSlotsLimitLowered: after SetMaxLeases lowers the limit, a lease keeps
// its slot, even one at or above the new limit; leases granted later get
// slots below it.
func TestSlotsLimitLowered(t *testing.T) {
	p := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	s := open(t, zk.Servers())
	sem, _ := semaphore.New(s, p, 3, semaphore.WithSlots())
	var ls []*semaphore.Lease
	for i := range 3 {
		l, err := sem.Acquire(ctx)
		require.NoError(t, err)
		require.Equal(t, i, l.Slot())
		ls = append(ls, l)
	}
	require.NoError(t, sem.SetMaxLeases(ctx, 2))
	require.NoError(t, ls[0].Release(ctx))
	require.NoError(t, ls[1].Release(ctx))
	l, err := sem.Acquire(ctx) // 1 held (slot 2): one more fits under 2
	require.NoError(t, err)
	require.Equal(t, 0, l.Slot(), "below the new limit")
	require.Equal(t, 2, ls[2].Slot(), "kept")
	require.NoError(t, ls[2].Release(ctx))
	l2, err := sem.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, l2.Slot())
	require.NoError(t, l.Release(ctx))
	require.NoError(t, l2.Release(ctx))
}

// TestSlotsPassListsAgain: a pass that finds every slot it saw free taken
// meanwhile lists the slots again and tries those freed since. Slot 0 is a
// lease's, slot 1 a claim no lease holds (something else's: see ErrNoSlot);
// as the acquire creates the claim of slot 2, the only one it saw free,
// that one is taken and slot 1 freed. The next pass must take slot 1 (on
// b63d206 every later pass skipped each slot any pass had seen taken, and
// the acquire failed with ErrNoSlot: a make test did, once, in
// TestSlotsUnderSessionKills).
func TestSlotsPassListsAgain(t *testing.T) {
	p := uniquePath(t)
	ctx := ctxT(t, 30*time.Second)
	s := open(t, zk.Servers())
	obs := open(t, zk.Servers())
	sem, err := semaphore.New(s, p, 3, semaphore.WithSlots())
	require.NoError(t, err)
	other, err := semaphore.New(obs, p, 3, semaphore.WithSlots())
	require.NoError(t, err)
	keep, err := other.Acquire(ctx) // slot 0: pins the path and its slots
	require.NoError(t, err)
	require.Equal(t, 0, keep.Slot())
	oep, err := obs.Wait(ctx)
	require.NoError(t, err)
	slot := func(k string) string { return sem.Path() + "/slots/" + k }
	_, err = oep.Conn().Create(slot("1"), []byte("not a lease's"), gozk.FlagEphemeral, obs.ACL())
	require.NoError(t, err)

	var once sync.Once
	reset := semaphore.SetTestHookBeforeClaim(func() {
		once.Do(func() {
			_, err := oep.Conn().Create(slot("2"), []byte("not a lease's"), gozk.FlagEphemeral, obs.ACL())
			require.NoError(t, err)
			require.NoError(t, oep.Conn().Delete(slot("1"), -1))
		})
	})
	t.Cleanup(reset)
	l, err := sem.Acquire(ctx)
	require.NoError(t, err)
	reset()
	require.Equal(t, 1, l.Slot())
	require.Equal(t, []string{"0", "1", "2"}, claims(t, obs, p))
	require.NoError(t, l.Release(ctx))
	require.NoError(t, keep.Release(ctx))
	require.NoError(t, oep.Conn().Delete(slot("2"), -1))
	require.Empty(t, claims(t, obs, p))
}
