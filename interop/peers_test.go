package interop_test

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// The harness every mixed pair shares, Curator's and Kazoo's alike: a peer
// process and its line protocol (READY, then GO on stdin; G, R, L, E and
// DONE lines), the timeline that checks holders on one clock, the shepherd
// clients' loop, the faults, and peerPair, which runs them together.

// interopDuration is how long each mixed pair runs under faults. CI runs the
// default; `make interop` runs the 30 s.
var interopDuration = flag.Duration("interop.duration", 25*time.Second, "how long each mixed pair (Curator, Kazoo) runs under faults")

// peerTimeout is every peer's session timeout (Kazoo and shepherd alike).
const peerTimeout = 4 * time.Second

// mono reads CLOCK_MONOTONIC, the clock Python's time.monotonic_ns reads.
func mono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err) // Linux always has it
	}
	return ts.Nano()
}

// timeline collects every holder's grants and ends on one clock and checks
// that no two holds overlap.
type timeline struct {
	limit int // holders allowed at once (a semaphore's maxLeases); 0 or 1: one
	mu    sync.Mutex
	evs   []event
	held  map[string]chan struct{} // closed at who's next grant (see heldNow)
}

type event struct {
	who  string // "go-0", "A:py-1", ...
	kind byte   // G granted, R releasing, L loss signalled, X session expired by the test, K process killed (either cuts the holder off)
	at   int64  // CLOCK_MONOTONIC ns
	read bool   // a grant of a read lock (readers share)
}

func (tl *timeline) add(who string, kind byte, at int64) {
	tl.addEvent(event{who: who, kind: kind, at: at})
}

// remove takes back an event added for a fault that did not happen (its
// session was already ended by the server): a mark of a fault cuts its
// holder's interval (see check), which must end at the holder's own loss
// signal instead.
func (tl *timeline) remove(e event) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for i := len(tl.evs) - 1; i >= 0; i-- {
		if tl.evs[i] == e {
			tl.evs = append(tl.evs[:i], tl.evs[i+1:]...)
			return
		}
	}
}

func (tl *timeline) addEvent(e event) {
	who, kind := e.who, e.kind
	tl.mu.Lock()
	tl.evs = append(tl.evs, e)
	if ch, ok := tl.held[who]; ok && kind == 'G' {
		close(ch)
		delete(tl.held, who)
	}
	tl.mu.Unlock()
}

// grantOf returns a channel closed at who's next grant.
func (tl *timeline) grantOf(who string) <-chan struct{} {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.held == nil {
		tl.held = map[string]chan struct{}{}
	}
	ch, ok := tl.held[who]
	if !ok {
		ch = make(chan struct{})
		tl.held[who] = ch
	}
	return ch
}

// holding reports whether who holds now (its last event is a grant).
func (tl *timeline) holding(who string) bool {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for i := len(tl.evs) - 1; i >= 0; i-- {
		if tl.evs[i].who == who {
			return tl.evs[i].kind == 'G'
		}
	}
	return false
}

// losses counts the loss signals of the shepherd side and of the peers.
func (tl *timeline) losses() (goLosses, peerLosses int) {
	return tl.count(func(e event) bool { return e.kind == 'L' })
}

// count counts the events that match, of the shepherd side and of the peers.
func (tl *timeline) count(match func(event) bool) (goN, peerN int) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, e := range tl.evs {
		switch {
		case !match(e):
		case strings.HasPrefix(e.who, "go-"):
			goN++
		default:
			peerN++
		}
	}
	return goN, peerN
}

// peerLossLags returns, for every peer session the test expired (an X
// event), how long after it the peer signalled the loss (its next L), if it
// did before its next grant: the time a peer holder that learns late (a
// Curator holder: its Java client tells a disconnect ~100 ms late) goes on
// believing it holds. The checker ends its hold at the X, as the test knows
// better: the server may grant its lock from the X on. blind counts the
// grants to others in that window while the peer held at the X: on a lock,
// each would be a double grant if the peer's hold ended at its own signal.
func (tl *timeline) peerLossLags() (lags []time.Duration, blind int) {
	tl.mu.Lock()
	evs := append([]event(nil), tl.evs...)
	tl.mu.Unlock()
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	x := map[string]int64{}
	held := map[string]bool{}     // who's last G is not ended by R or L
	inWindow := map[string]bool{} // who held when its session was expired, and has not signalled yet
	for _, e := range evs {
		if e.kind == 'G' {
			for w := range inWindow {
				if w != e.who {
					blind++
				}
			}
		}
		if strings.HasPrefix(e.who, "go-") {
			continue
		}
		switch e.kind {
		case 'X':
			x[e.who] = e.at
			if held[e.who] {
				inWindow[e.who] = true
			}
		case 'L':
			if at, ok := x[e.who]; ok {
				lags = append(lags, time.Duration(e.at-at))
				delete(x, e.who)
			}
			delete(inWindow, e.who)
			held[e.who] = false
		case 'R':
			held[e.who] = false
		case 'G':
			delete(x, e.who)
			delete(inWindow, e.who)
			held[e.who] = true
		}
	}
	return lags, blind
}

type interval struct {
	who        string
	start, end int64
	read       bool
}

// check builds each holder's intervals (a grant to the first release, loss
// signal or fault imposed on it: a holder whose session the test expires,
// or whose process it kills, holds no more from that instant, and a grant
// after it is the fault's effect, not a double grant) and returns the
// overlaps, and grants per side ("go" and the rest).
func (tl *timeline) check(t *testing.T, errorf func(format string, args ...any)) (violations int, goGrants, peerGrants int) {
	tl.mu.Lock()
	evs := append([]event(nil), tl.evs...)
	tl.mu.Unlock()
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	open := map[string]event{}
	var ivs []interval
	for _, e := range evs {
		switch e.kind {
		case 'G':
			if _, ok := open[e.who]; ok {
				errorf("%s granted twice without an end", e.who)
			}
			open[e.who] = e
			if strings.HasPrefix(e.who, "go-") {
				goGrants++
			} else {
				peerGrants++
			}
		default:
			if g, ok := open[e.who]; ok {
				ivs = append(ivs, interval{e.who, g.at, e.at, g.read})
				delete(open, e.who)
			}
		}
	}
	for who, g := range open {
		ivs = append(ivs, interval{who, g.at, 1<<63 - 1, g.read})
	}
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].start < ivs[j].start })
	var active []interval // holds not ended at the current start
	for _, iv := range ivs {
		kept := active[:0]
		for _, a := range active {
			if a.end > iv.start {
				kept = append(kept, a)
			}
		}
		if tl.limit > 1 {
			// A semaphore: at most limit leases, whoever holds them.
			if len(kept) >= tl.limit {
				violations++
				if violations <= 5 {
					errorf("over the limit: %s granted at %d while %d of %d leases were held", iv.who, iv.start, len(kept), tl.limit)
				}
			}
			active = append(kept, iv)
			continue
		}
		for _, a := range kept {
			if a.read && iv.read {
				continue // readers share
			}
			violations++
			if violations <= 5 {
				errorf("double grant: %s (read %v) granted at %d while %s (read %v) held until %d (%.3f ms overlap)",
					iv.who, iv.read, iv.start, a.who, a.read, a.end, float64(a.end-iv.start)/1e6)
			}
		}
		active = append(kept, iv)
	}
	return violations, goGrants, peerGrants
}

// peer launches one library's peer process: it returns the command for
// mode on path with one client per connect string, each contending for d
// and holding hold (see python/kazoo_peer.py for the protocol every peer
// speaks), and the prefix of its clients' ids ("py" makes py-0, py-1, ...).
type peer struct {
	name   string // "Kazoo", "Curator"
	prefix string
	cmd    func(t *testing.T, ctx context.Context, mode, path string, connects []string, d, hold time.Duration) *exec.Cmd
}

// peerProc is a running peer process.
type peerProc struct {
	cmd    *exec.Cmd
	label  string
	ids    []string
	stdin  io.WriteCloser // GO starts its run
	done   chan struct{}  // its output has ended
	grants atomic.Int64
	errs   atomic.Int64
	total  int // from its DONE line
}

// startPeer starts pr's peer process with one client per connect string
// (ids label:prefix-i), waits until every client is connected and starts
// its run of d.
func startPeer(t *testing.T, pr peer, tl *timeline, label, mode, path string, connects []string, d, hold time.Duration) *peerProc {
	t.Helper()
	p := launchPeer(t, pr, tl, label, mode, path, connects, d, hold)
	p.begin(t)
	return p
}

// begin starts the peer's run: its d counts from here.
func (p *peerProc) begin(t *testing.T) {
	t.Helper()
	_, err := io.WriteString(p.stdin, "GO\n")
	require.NoError(t, err, "starting peer %s", p.label)
}

// launchPeer starts pr's peer process with one client per connect string
// (ids label:prefix-i) and waits until every client is connected; its run
// starts at begin.
func launchPeer(t *testing.T, pr peer, tl *timeline, label, mode, path string, connects []string, d, hold time.Duration) *peerProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+2*time.Minute)
	cmd := pr.cmd(t, ctx, mode, path, connects, d, hold)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &peerProc{cmd: cmd, label: label, stdin: stdin, done: make(chan struct{})}
	for i := range connects {
		p.ids = append(p.ids, fmt.Sprintf("%s:%s-%d", label, pr.prefix, i))
	}
	ready := make(chan struct{})
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 1 && f[0] == "READY":
				close(ready)
			case (len(f) == 3 || len(f) == 4) && len(f[0]) == 1 && strings.Contains("GRL", f[0]):
				at, err := strconv.ParseInt(f[2], 10, 64)
				if err != nil {
					t.Errorf("%s %s: bad line %q", pr.name, label, sc.Text())
					continue
				}
				tl.addEvent(event{who: label + ":" + f[1], kind: f[0][0], at: at, read: len(f) == 4 && f[3] == "r"})
				if f[0] == "G" {
					p.grants.Add(1)
				}
			case len(f) >= 1 && f[0] == "E":
				p.errs.Add(1)
				t.Logf("%s %s: %s", pr.name, label, sc.Text())
			case len(f) == 2 && f[0] == "DONE":
				_, _ = fmt.Sscanf(f[1], "grants=%d", &p.total)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	select {
	case <-ready:
	case <-p.done:
		t.Fatalf("the %s peer %s ended before READY", pr.name, label)
	case <-time.After(60 * time.Second):
		t.Fatalf("the %s peer %s did not connect", pr.name, label)
	}
	return p
}

// kill SIGKILLs the peer's process group; from now on none of its clients
// holds anything (their nodes stay until their sessions expire).
func (p *peerProc) kill(tl *timeline) {
	at := mono()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	for _, id := range p.ids {
		tl.add(id, 'K', at)
	}
}

// wait waits for the peer's output to end.
func (p *peerProc) wait(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("the peer %s did not finish", p.label)
	}
}

// shepherdSide is one shepherd client: its acquire/release, and the channel
// that closes when the current hold may be lost.
type shepherdSide struct {
	acquire func(context.Context) error
	release func(context.Context) error
	lost    func() <-chan struct{}
	read    bool // a read lock (readers share)
}

// heldSide is the shepherdSide of a recipe whose acquire returns a hold
// (a lease, a leadership): release and lost act on the last one acquired
// (a client acquires and releases in turn, on one goroutine).
func heldSide[H interface{ Lost() <-chan struct{} }](acquire func(context.Context) (H, error),
	release func(H, context.Context) error) shepherdSide {
	var h H
	return shepherdSide{
		acquire: func(ctx context.Context) error {
			var err error
			h, err = acquire(ctx)
			return err
		},
		release: func(ctx context.Context) error { return release(h, ctx) },
		lost:    func() <-chan struct{} { return h.Lost() },
	}
}

// runShepherd runs a shepherd client as go-i until the deadline, recording
// grants, releases and loss signals. Errors that a fault explains (a lost
// hold, a session expired) are counted; others fail the test.
//
// Every fifth hold is twenty times longer (so that faults can hit a holder).
// A request on stall (nil for all but one client) makes the client stall its
// own connection (a paused process, a partition) at its next grant, and
// hold until the loss is signalled: the loss must come before anyone else
// is granted.
func runShepherd(t *testing.T, tl *timeline, i int, deadline time.Time, hold time.Duration, c shepherdSide,
	lostErrs *atomic.Int64, stall <-chan *zktest.Proxy, stalled chan<- bool) {
	who := fmt.Sprint("go-", i)
	for n := 1; time.Now().Before(deadline); n++ {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		err := c.acquire(ctx)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return
			}
			if errors.Is(err, recipe.ErrLost) {
				lostErrs.Add(1)
				continue
			}
			t.Errorf("%s: acquire: %v", who, err)
			return
		}
		tl.addEvent(event{who: who, kind: 'G', at: mono(), read: c.read})
		lost := c.lost()
		d := hold
		if n%5 == 0 {
			d = 20 * hold
		}
		var stalling *zktest.Proxy
		select {
		case stalling = <-stall:
			stalling.Stall()
			d = 3 * peerTimeout // held until the loss (bounded: a missing loss fails the test)
			stall = nil
		default:
		}
		timer := time.NewTimer(d)
		gotLoss := false
		select {
		case <-timer.C: // the work done under the lock
		case <-lost:
			tl.add(who, 'L', mono())
			gotLoss = true
		}
		timer.Stop()
		tl.add(who, 'R', mono())
		if stalling != nil {
			stalled <- gotLoss
			// The fault: silence past the session timeout (the loss came
			// at about two thirds of it), so the server expires the session.
			time.Sleep(peerTimeout)
			stalling.Heal()
		}
		rctx, rcancel := context.WithTimeout(context.Background(), 2*peerTimeout)
		err = c.release(rctx)
		rcancel()
		if err != nil && !errors.Is(err, recipe.ErrLost) {
			t.Errorf("%s: release: %v", who, err)
			return
		}
		if err != nil {
			lostErrs.Add(1)
		}
	}
}

// faults injects, over d, each at a moment its victim holds (or tries again
// a few times): a peer's session expired (peerID, behind pyProxy), shepherd's connection stalled past
// its timeout, the victim peer process SIGKILLed, and a shepherd session
// expired. It returns what it did and how many hit a holder.
func faults(t *testing.T, tl *timeline, d, hold time.Duration, pyProxy *zktest.Proxy, goStall chan<- *zktest.Proxy,
	stallProxy *zktest.Proxy, stalled <-chan bool, goExpire *zktest.Proxy, victim *peerProc, peerID string) (did []string, hits int) {
	start := time.Now()
	at := func(frac float64) {
		if until := time.Until(start.Add(time.Duration(frac * float64(d)))); until > 0 {
			time.Sleep(until) // the fault schedule: the wait is the point
		}
	}
	// whenHeld waits (bounded) until who holds, and has held for a while
	// (a long hold: every fifth one is), and reports whether it does.
	whenHeld := func(who string, hold time.Duration) bool {
		until := time.Now().Add(d / 5)
		for time.Now().Before(until) {
			select {
			case <-tl.grantOf(who):
			case <-time.After(time.Until(until)):
				return false
			}
			time.Sleep(3 * hold) // let a short hold end: the fault is for a long one
			if tl.holding(who) {
				return true
			}
		}
		return false
	}
	// expire ends the session who opened last through p. If the server
	// has ended it already (seen in a loaded make test: a Curator peer's
	// session expired 4 s into the run, before the fault), the attempt
	// leaves no mark and the fault goes to who's next session, once who
	// has opened it (within 10 s).
	expire := func(p *zktest.Proxy, who string) {
		holding := whenHeld(who, hold)
		until := time.Now().Add(10 * time.Second)
		for {
			cred, ok := p.Last()
			if !ok {
				t.Errorf("no session seen through %s's proxy", who)
				return
			}
			holding = holding && tl.holding(who)
			x := event{who: who, kind: 'X', at: mono()}
			tl.addEvent(x)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := zktest.ExpireSession(ctx, zk.Servers(), cred)
			cancel()
			if errors.Is(err, gozk.ErrSessionExpired) && time.Now().Before(until) {
				tl.remove(x)
				t.Logf("%s's session 0x%x was ended by the server before the test could end it: the fault goes to its next session", who, cred.SessionID)
				testutil.Poll(time.Until(until), 20*time.Millisecond, func() bool {
					next, ok := p.Last()
					return ok && next.SessionID != cred.SessionID
				})
				continue
			}
			if err != nil {
				t.Errorf("expiring %s's session: %v", who, err)
				return
			}
			did = append(did, fmt.Sprintf("expired %s's session (holding: %v)", who, holding))
			if holding {
				hits++
			}
			return
		}
	}
	at(0.15)
	expire(pyProxy, peerID)
	at(0.3)
	goStall <- stallProxy
	select {
	case lossFirst := <-stalled:
		require.True(t, lossFirst, "go-0 stalled while holding was told of the loss")
		did = append(did, "stalled go-0's connection while it held, past its session timeout")
		hits++
	case <-time.After(time.Until(start.Add(d)) + 3*peerTimeout):
		// go-0 takes the stall at its next grant until its run ends (at
		// about start+d), then holds until the loss, bounded by three
		// timeouts. (Runs where shepherd's clients were granted 0–75
		// times in 25 s, the peers' 213–1,490, were not starvation: their
		// run counted from before the JVMs' slow start; see peerPair.)
		t.Error("go-0 was never granted to be stalled")
	}
	at(0.55)
	hit := whenHeld(victim.ids[0], hold) && tl.holding(victim.ids[0])
	victim.kill(tl)
	did = append(did, fmt.Sprintf("SIGKILLed peer process %s (holding: %v)", victim.label, hit))
	if hit {
		hits++
	}
	at(0.7)
	expire(goExpire, "go-1")
	return did, hits
}

// readGrants counts the grants of read locks of the shepherd side and of the
// peers.
func (tl *timeline) readGrants() (goReads, peerReads int) {
	return tl.count(func(e event) bool { return e.kind == 'G' && e.read })
}

// peerPair runs three shepherd clients (mk) against two processes of pr's
// peer in mode on one path for the interop duration, under faults, and
// checks on one clock that at most limit hold at a time (readers share). It
// returns the timeline, checked.
func peerPair(t *testing.T, pr peer, mode string, hold time.Duration, limit int,
	mk func(s *session.Session, path string, i int) (shepherdSide, error)) *timeline {
	t.Parallel()
	d := *interopDuration
	path := uniquePath(t)
	tl := &timeline{limit: limit}
	newProxy := func() *zktest.Proxy {
		p, err := zktest.NewProxy(zk.Servers()...)
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	// The peer: process A with two clients behind proxies (A:<prefix>-0 gets
	// its session expired), process B with one client (SIGKILLed).
	pa, pb := newProxy(), newProxy()
	a := launchPeer(t, pr, tl, "A", mode, path, []string{strings.Join(pa.Addrs(), ","), strings.Join(pb.Addrs(), ",")}, d, hold)
	b := launchPeer(t, pr, tl, "B", mode, path, []string{strings.Join(zk.Servers(), ",")}, d, hold)
	// shepherd: three clients; go-0 (stalled) and go-1 (expired) behind proxies.
	gp := []*zktest.Proxy{newProxy(), newProxy(), nil}
	sides := make([]shepherdSide, len(gp))
	for i := range gp {
		servers := zk.Servers()
		if gp[i] != nil {
			servers = gp[i].Addrs()
		}
		s := testutil.Open(t, servers, session.WithSessionTimeout(peerTimeout))
		var err error
		sides[i], err = mk(s, path, i)
		require.NoError(t, err)
	}
	// Every party's run starts now, every client connected: on a loaded
	// machine the JVMs' start took longer than a whole run, which once
	// counted from before it (shepherd's clients were then granted
	// nothing, the peers' hundreds of times).
	deadline := time.Now().Add(d)
	a.begin(t)
	b.begin(t)
	stall := make(chan *zktest.Proxy, 1)
	stalled := make(chan bool, 1)
	var lostErrs atomic.Int64
	var wg sync.WaitGroup
	for i, c := range sides {
		var st <-chan *zktest.Proxy
		if i == 0 {
			st = stall
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			runShepherd(t, tl, i, deadline, hold, c, &lostErrs, st, stalled)
		}()
	}
	did, hits := faults(t, tl, d, hold, pa, stall, gp[0], stalled, gp[1], b, a.ids[0])
	wg.Wait()
	a.wait(t, d+time.Minute)
	viol, goGrants, pyGrants := tl.check(t, t.Errorf)
	goLosses, pyLosses := tl.losses()
	lags, blind := tl.peerLossLags()
	t.Logf("%s: %s %s × shepherd, %v: shepherd %d grants, %s %d grants (A %d, B %d before its SIGKILL), "+
		"%d violations; faults (%d of %d hit a holder): %s; loss signals: shepherd %d, %s %d; "+
		"shepherd calls ended by ErrLost: %d, %s errors: %d; %s loss signals after the test expired its session: %v later (%d grants to others in between)",
		path, pr.name, mode, d, goGrants, pr.name, pyGrants, a.grants.Load(), b.grants.Load(), viol, hits, len(did), strings.Join(did, "; "),
		goLosses, pr.name, pyLosses, lostErrs.Load(), pr.name, a.errs.Load()+b.errs.Load(), pr.name, lags, blind)
	require.Zero(t, viol, "at most %d holders at a time", limit)
	require.Len(t, did, 4, "every fault was injected")
	// Both sides make progress: each is granted 50 times, as issue 20
	// asks, on a machine fast enough for 500 grants in the run (a quiet
	// one grants about 600); on a slower one, at least a tenth of all the
	// grants, and 10. Beside six busy loops, with every party's run
	// starting at once, shepherd's side was granted 243–906 times and
	// the peers' 190–807 (Curator and Kazoo pairs, twice each).
	minGrants := max(10, min(50, (goGrants+pyGrants)/10))
	require.GreaterOrEqual(t, goGrants, minGrants, "shepherd grants (of %d in all)", goGrants+pyGrants)
	require.GreaterOrEqual(t, pyGrants, minGrants, "%s grants (of %d in all)", pr.name, goGrants+pyGrants)
	return tl
}
