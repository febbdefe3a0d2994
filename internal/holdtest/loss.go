package holdtest

// A holder that may have lost its hold is told before anyone else is
// granted it, and the loss is logged.

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// expiredHolderIsToldFirst: the holder's session is ended by the server,
// again and again, while three contenders take the hold in turn; its Lost
// must close before another session is granted.
func (x *contract) expiredHolderIsToldFirst(t *testing.T) {
	path := x.path(t)
	ctx := testutil.Ctx(t, 60*time.Second)
	cds := map[string]Contender{}
	sessions := map[string]*session.Session{}
	proxies := map[string]*zktest.Proxy{}
	// The sessions' own log, shown if the test fails (seen once in make
	// test: a holder's next session not seen within 10 s of its expiry).
	for _, id := range []string{"a", "b", "c"} {
		log := testutil.LogOnFailure(t, "contender", id)
		s, p := x.proxied(t, 2*time.Second, session.WithLogger(log))
		cds[id], sessions[id], proxies[id] = x.r.New(t, s, path, id), s, p
	}
	var ex Exclusion
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var again atomic.Int64 // Acquires that ended with their session, tried again
	// Each contender holds until its hold is lost or a short time passes.
	for id, cd := range cds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holdInTurns(t, id, cd, &ex, stop, &again)
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
		ex.Check(t)
	}()
	expired := 0
	for round := 0; round < 40 && expired < 6; round++ {
		// Find the current holder and end its session from elsewhere.
		var holder string
		var lost <-chan struct{}
		require.Eventually(t, func() bool {
			holder, lost = ex.Current()
			return holder != ""
		}, 10*time.Second, time.Millisecond)
		sid := sessions[holder].SessionID()
		if testutil.IsClosed(lost) || (cds[holder].Held != nil && !cds[holder].Held()) {
			continue
		}
		t.Logf("%s: expiring %s's session 0x%x", time.Now().Format("15:04:05.000"), holder, sid)
		if err := proxies[holder].ExpireSession(ctx, sid); err != nil {
			t.Logf("expire %s: %v", holder, err)
			continue
		}
		expired++
		// Wait for the holder's next session before the next round.
		require.Eventually(t, func() bool {
			id := sessions[holder].SessionID()
			return id != 0 && id != sid
		}, 10*time.Second, 5*time.Millisecond)
	}
	require.GreaterOrEqual(t, expired, 4)
	t.Logf("%d expiries, %d grants; %d Acquires ended with their session and waited again", expired, ex.Grants(), again.Load())
}

// holdInTurns is one contender of expiredHolderIsToldFirst: it takes the
// hold, keeps it until it is lost or 30 ms pass, lets it go, and again,
// until stop closes. An Acquire that ends with its session is counted in
// again and tried again in the next one.
func holdInTurns(t *testing.T, id string, cd Contender, ex *Exclusion, stop <-chan struct{}, again *atomic.Int64) {
	for range 10000 {
		h, cancel, ok := AcquireTurn(t, id, context.Background(), stop, again, cd.Acquire)
		if !ok {
			return
		}
		ex.Granted(id, h.Lost())
		select {
		case <-h.Lost():
		case <-time.After(30 * time.Millisecond):
		case <-stop:
		}
		ex.Released(id)
		_ = h.Release(context.Background())
		cancel()
	}
}

// AcquireTurn is one turn of a contender that takes a hold again and
// again until stop closes: acquire, with a ctx that stop ends. An Acquire
// that ends with its session (ErrLost: an expiry of the test's, or of a
// loaded machine's on short sessions) waits again, in the next one, and
// is counted in again: a contender that gave up instead left none to hold
// once each had been hit. It returns the hold and its ctx's cancel (to
// call once it is released), or ok false once stop has closed or when
// Acquire failed otherwise (an error on t).
func AcquireTurn[H any](t *testing.T, id string, ctx context.Context, stop <-chan struct{}, again *atomic.Int64,
	acquire func(context.Context) (H, error)) (h H, cancel context.CancelFunc, ok bool) {
	for range 10000 {
		actx, cancel := testutil.CtxUntil(ctx, stop)
		h, err := acquire(actx)
		if err == nil {
			return h, cancel, true
		}
		cancel()
		if testutil.IsClosed(stop) {
			return h, nil, false
		}
		if !errors.Is(err, recipe.ErrLost) {
			t.Errorf("%s: Acquire: %v", id, err)
			return h, nil, false
		}
		again.Add(1)
	}
	t.Errorf("%s: Acquire ended with its session 10000 times", id)
	return h, nil, false
}

// stalledHolderIsToldFirst: the holder's network is stalled past the
// session timeout; it is told (Suspended) before the server expires it and
// grants the hold to the waiter.
func (x *contract) stalledHolderIsToldFirst(t *testing.T) {
	path := x.path(t)
	ctx := testutil.Ctx(t, 60*time.Second)
	s, p := x.proxied(t, 1500*time.Millisecond)
	holder := x.r.New(t, s, path, "holder")
	waiter := x.r.New(t, x.open(t), path, "waiter")
	for round := range 3 {
		h := acquire(t, ctx, holder)
		lost := h.Lost()
		var lostAt time.Time
		lostSeen := make(chan struct{})
		go func() { <-lost; lostAt = time.Now(); close(lostSeen) }()
		got := inBackground(ctx, waiter)
		stalled := time.Now()
		p.Stall()
		r := await(t, got, 30*time.Second, "the waiter")
		require.NoError(t, r.err)
		grantedAt := time.Now()
		select {
		case <-lostSeen:
		case <-ctx.Done():
			t.Fatal("the stalled holder was never told")
		}
		require.True(t, lostAt.Before(grantedAt), "the holder must be told before the waiter is granted")
		t.Logf("round %d: holder told %v after the stall, waiter granted %v after it (margin %v)", round,
			lostAt.Sub(stalled).Round(time.Millisecond), grantedAt.Sub(stalled).Round(time.Millisecond),
			grantedAt.Sub(lostAt).Round(time.Millisecond))
		errIs(t, h.Release(ctx), x.r.ReleaseLost, "the hold is over")
		p.Heal()
		require.NoError(t, r.h.Release(ctx))
	}
}

// lossIsLogged: a lost hold is logged at Warn with its path, node and
// session; nothing is logged by default.
func (x *contract) lossIsLogged(t *testing.T) {
	var buf testutil.SyncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, p := x.proxied(t, 2*time.Second, session.WithLogger(log))
	path := x.path(t)
	ctx := testutil.Ctx(t, 30*time.Second)
	h := acquire(t, ctx, x.r.New(t, s, path, "a"))
	require.NoError(t, p.ExpireSession(ctx, s.SessionID()))
	require.Eventually(t, func() bool { return strings.Contains(buf.String(), x.r.Name+": hold lost") }, 10*time.Second,
		5*time.Millisecond, "no loss logged")
	require.Contains(t, buf.String(), "path="+s.Path(path))
	require.Contains(t, buf.String(), "session=0x")
	errIs(t, h.Release(ctx), x.r.ReleaseLost, "releasing a lost hold")
}
