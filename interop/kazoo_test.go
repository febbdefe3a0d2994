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
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/admin"

	gozk "github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/line"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/recipe"
	"github.com/shepherdzk/shepherd/semaphore"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

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
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, e := range tl.evs {
		if e.kind != 'L' {
			continue
		}
		if strings.HasPrefix(e.who, "go-") {
			goLosses++
		} else {
			peerLosses++
		}
	}
	return goLosses, peerLosses
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

// kazooPython is a python3 that can import kazoo (Debian's python3-kazoo
// lives in /usr/bin/python3's path; a pyenv python3 earlier on PATH cannot
// see it).
func kazooPython(t *testing.T) string {
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import kazoo").Run() == nil {
			return p
		}
	}
	t.Fatal("no python3 can import kazoo: run make setup-bench (apt-get install python3-kazoo)")
	return ""
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

// kazooPeer runs python/kazoo_peer.py.
var kazooPeer = peer{name: "Kazoo", prefix: "py",
	cmd: func(t *testing.T, ctx context.Context, mode, path string, connects []string, d, hold time.Duration) *exec.Cmd {
		return exec.CommandContext(ctx, kazooPython(t), filepath.Join("python", "kazoo_peer.py"), mode, path, strings.Join(connects, ";"),
			fmt.Sprintf("%.3f", d.Seconds()), fmt.Sprint(hold.Milliseconds()), fmt.Sprintf("%.1f", peerTimeout.Seconds()))
	}}

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

// startKazoo starts a Kazoo peer (see startPeer).
func startKazoo(t *testing.T, tl *timeline, label, mode, path string, connects []string, d, hold time.Duration) *peerProc {
	t.Helper()
	return startPeer(t, kazooPeer, tl, label, mode, path, connects, d, hold)
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
	expire := func(p *zktest.Proxy, who string) {
		holding := whenHeld(who, hold)
		cred, ok := p.Last()
		if !ok {
			t.Errorf("no session seen through %s's proxy", who)
			return
		}
		holding = holding && tl.holding(who)
		tl.add(who, 'X', mono())
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := zktest.ExpireSession(ctx, zk.Servers(), cred)
		cancel()
		if err != nil {
			t.Errorf("expiring %s's session: %v", who, err)
			return
		}
		did = append(did, fmt.Sprintf("expired %s's session (holding: %v)", who, holding))
		if holding {
			hits++
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

// kazooPair runs shepherd clients (mk) against two Kazoo processes in mode on
// one path for the interop duration, under faults, and checks one holder at a
// time on one clock.
func kazooPair(t *testing.T, mode string, hold time.Duration, mk func(s *session.Session, path string, i int) (shepherdSide, error)) {
	peerPair(t, kazooPeer, mode, hold, 1, mk)
}

// readGrants counts the grants of read locks of the shepherd side and of the
// peers.
func (tl *timeline) readGrants() (goReads, peerReads int) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, e := range tl.evs {
		if e.kind != 'G' || !e.read {
			continue
		}
		if strings.HasPrefix(e.who, "go-") {
			goReads++
		} else {
			peerReads++
		}
	}
	return goReads, peerReads
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

// TestKazooLock: Kazoo's Lock (default constructor) and shepherd's mutex
// with Kazoo names share a path: one holder at a time across both, under
// faults on both sides.
func TestKazooLock(t *testing.T) {
	kazooPair(t, "lock", 5*time.Millisecond, func(s *session.Session, path string, _ int) (shepherdSide, error) {
		m, err := mutex.New(s, path, mutex.WithNaming(recipe.KazooNaming))
		if err != nil {
			return shepherdSide{}, err
		}
		return shepherdSide{acquire: m.Lock, release: m.Unlock, lost: func() <-chan struct{} { return m.Hold().Lost() }}, nil
	})
}

// TestKazooElection: Kazoo's Election and shepherd's fair election with
// Kazoo names share a path: one leader at a time across both, under faults.
func TestKazooElection(t *testing.T) {
	kazooPair(t, "election", 5*time.Millisecond, func(s *session.Session, path string, i int) (shepherdSide, error) {
		e, err := election.New(s, path, fmt.Sprint("go-", i), election.WithNaming(recipe.KazooNaming))
		if err != nil {
			return shepherdSide{}, err
		}
		return heldSide(e.Campaign, (*election.Leadership).Resign), nil
	})
}

// TestKazooReadWriteLock: Kazoo's WriteLock and shepherd's read-write lock
// with Kazoo names (readers and writers) share a path: a writer excludes
// everyone, readers share, across both, under faults. (Kazoo 2.8's ReadLock
// deadlocks with a writer queued behind it, with Kazoo alone: see
// python/kazoo_peer.py; it is not run.)
func TestKazooReadWriteLock(t *testing.T) {
	kazooPair(t, "wlock", 5*time.Millisecond, func(s *session.Session, path string, i int) (shepherdSide, error) {
		rw, err := mutex.NewRW(s, path, mutex.WithNaming(recipe.KazooNaming))
		if err != nil {
			return shepherdSide{}, err
		}
		if i%2 == 1 { // go-0 and go-2 read, go-1 writes
			return shepherdSide{acquire: rw.Lock, release: rw.Unlock, lost: func() <-chan struct{} { return rw.Writer().Hold().Lost() }}, nil
		}
		return shepherdSide{acquire: rw.RLock, release: rw.RUnlock, read: true,
			lost: func() <-chan struct{} { return rw.Reader().Hold().Lost() }}, nil
	})
}

// kazooHolds starts a Kazoo process whose one client takes mode at path and
// holds it for the test, and waits until it holds.
func kazooHolds(t *testing.T, mode, path string) *peerProc {
	t.Helper()
	tl := &timeline{}
	p := startKazoo(t, tl, "K", mode, path, []string{strings.Join(zk.Servers(), ",")}, time.Minute, time.Minute)
	require.Eventually(t, func() bool { return p.grants.Load() == 1 }, 30*time.Second, 10*time.Millisecond)
	t.Cleanup(func() { p.kill(tl) })
	return p
}

// TestKazooRefusals: shepherd with Curator names (the default) refuses a path
// where Kazoo's Lock or Election has nodes (Kazoo would never see shepherd's
// nodes), fast, leaving nothing behind; shepherd with Kazoo names refuses a
// path with Curator-named nodes.
func TestKazooRefusals(t *testing.T) {
	t.Parallel()
	s := open(t)
	for _, mode := range []string{"lock", "election"} {
		path := uniquePath(t)
		kazooHolds(t, mode, path)
		before := testutil.Children(t, s, path)
		require.Len(t, before, 1)
		ctx := testutil.Ctx(t, 10*time.Second)
		m, err := mutex.New(s, path)
		require.NoError(t, err)
		err = m.Lock(ctx)
		require.ErrorIs(t, err, recipe.ErrForeignRecipe, "a Curator-named mutex on Kazoo %s's path", mode)
		require.Contains(t, err.Error(), "kazoo __lock__")
		ok, err := m.TryLock(ctx)
		require.ErrorIs(t, err, recipe.ErrForeignRecipe)
		require.False(t, ok)
		e, err := election.New(s, path, "go")
		require.NoError(t, err)
		_, err = e.Campaign(ctx)
		require.ErrorIs(t, err, election.ErrForeignRecipe, "a Curator-named election on Kazoo %s's path", mode)
		rw, err := mutex.NewRW(s, path)
		require.NoError(t, err)
		require.ErrorIs(t, rw.RLock(ctx), recipe.ErrForeignRecipe)
		require.NoError(t, ctx.Err(), "refused fast")
		require.Equal(t, before, testutil.Children(t, s, path), "nothing left behind")

		// Inspect (and so shepherd status) names the Kazoo holder.
		snap, err := admin.Inspect(ctx, s, s.Path(path))
		require.NoError(t, err)
		require.Equal(t, "kazoo", snap.Names)
		require.Equal(t, "mutex", snap.Kind, "Kazoo names a Lock's and an Election's nodes alike")
		require.Len(t, snap.Holders, 1)
		require.Equal(t, "py-0", snap.Holders[0].Data)
		require.Equal(t, line.Library(recipe.KindKazooLock), snap.Holders[0].Library)
	}

	// Kazoo's Semaphore (max_leases as the path's data, leases as plain
	// children of the path) cannot share a path: a shepherd semaphore refuses
	// it, naming it.
	sp := uniquePath(t)
	kazooHolds(t, "semaphore", sp)
	before := testutil.Children(t, s, sp)
	sem, err := semaphore.New(s, sp, 3)
	require.NoError(t, err)
	ctx := testutil.Ctx(t, 10*time.Second)
	_, err = sem.Acquire(ctx)
	require.ErrorIs(t, err, recipe.ErrForeignRecipe)
	require.ErrorIs(t, err, semaphore.ErrWrongKind)
	require.Contains(t, err.Error(), "Kazoo Semaphore")
	require.NoError(t, ctx.Err(), "refused fast")
	require.Equal(t, before, testutil.Children(t, s, sp), "nothing left behind")

	// A Curator-named node (as InterProcessMutex names its own) on the
	// path: Kazoo-named shepherd recipes refuse it.
	path := uniquePath(t)
	ep, err := s.Wait(testutil.Ctx(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, line.EnsurePath(s, ep, s.Path(path)))
	_, err = ep.Conn().Create(s.Path(path)+"/"+line.ProtectedPrefix(line.NewGUID(), recipe.KindLock), nil,
		gozk.FlagEphemeral|gozk.FlagSequence, gozk.WorldACL(gozk.PermAll))
	require.NoError(t, err)
	before = testutil.Children(t, s, path)
	m, err := mutex.New(s, path, mutex.WithNaming(recipe.KazooNaming))
	require.NoError(t, err)
	err = m.Lock(ctx)
	require.ErrorIs(t, err, recipe.ErrForeignRecipe)
	require.Contains(t, err.Error(), "curator lock-")
	e, err := election.New(s, path, "go", election.WithNaming(recipe.KazooNaming))
	require.NoError(t, err)
	_, err = e.Campaign(ctx)
	require.ErrorIs(t, err, recipe.ErrForeignRecipe)
	// Curator's LeaderSelector is an InterProcessMutex: lock- nodes, which
	// a (Curator-named) election cannot tell from candidates: refused.
	e, err = election.New(s, path, "go")
	require.NoError(t, err)
	_, err = e.Campaign(ctx)
	require.ErrorIs(t, err, recipe.ErrForeignRecipe)
	require.Contains(t, err.Error(), "LeaderSelector")
	require.Equal(t, before, testutil.Children(t, s, path), "nothing left behind")

	// A Kazoo node added: both namings at one path, which Inspect shows.
	_, err = ep.Conn().Create(s.Path(path)+"/"+recipe.KazooNaming.Prefix(line.NewGUID(), recipe.KindKazooLock), nil,
		gozk.FlagEphemeral|gozk.FlagSequence, gozk.WorldACL(gozk.PermAll))
	require.NoError(t, err)
	snap, err := admin.Inspect(ctx, s, s.Path(path))
	require.NoError(t, err)
	require.Equal(t, "mixed", snap.Names)
}
