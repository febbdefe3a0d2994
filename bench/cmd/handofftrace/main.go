// Command handofftrace traces election handoffs across processes: three
// candidates, each in a process of its own, on a local standalone ZooKeeper
// (127.0.0.1). The leader resigns after a short term and rejoins; every
// process stamps, on the host's wall clock (one clock for all processes of a
// host), what it is told to do, what it is told by its library, and every
// request and answer crossing its connection (a dialer that parses
// ZooKeeper's frames). For each way of resigning it then prints where the
// time went from the resignation to the next leader being told, and the
// requests the new leader sent in between.
//
//	go run ./bench/cmd/handofftrace [-peer all|shepherd|go-zk] [-mode resign|ctx|return] [-n 200] [-rounds 4]
//
// Modes (shepherd): resign = Campaign / Resign; ctx = Run, resigning by
// ending Run's ctx and rejoining by calling Run again; return = Run, whose
// OnElected returns. go-zk is go-zookeeper's zk.Lock used as an election.
// With -peer all (the default) every way runs on the same server, in
// rounds, its order rotating, so that they share its ups and downs.
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/bench"
	"github.com/shepherdzk/shepherd/bench/internal/gopeers"
	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

// event is one stamped observation of one process.
type event struct {
	Who  int    `json:"who"`
	Ev   string `json:"ev"` // resign, resigned, elected, out (a request), in (an answer), notify
	T    int64  `json:"t"`  // wall clock, Unix ns
	Xid  int32  `json:"xid,omitempty"`
	Op   int32  `json:"op,omitempty"`   // out: opcode
	Type int32  `json:"type,omitempty"` // notify: event type
	Err  int32  `json:"err,omitempty"`  // in: error code
}

const (
	opDelete       = 2
	notifyDeleted  = 2 // EventNodeDeleted
	candidates     = 3
	connectTimeout = 10 * time.Second
)

var opNames = map[int32]string{1: "create", 2: "delete", 3: "exists", 4: "getData", 5: "setData", 8: "getChildren",
	12: "getChildren2", 13: "check", 14: "multi", 15: "create2", 11: "ping"}

func main() {
	child := flag.Int("child", -1, "internal: run candidate N")
	servers := flag.String("servers", "", "internal: the server")
	path := flag.String("path", "/handofftrace", "internal: the election's path")
	peer := flag.String("peer", "all", "all, shepherd or go-zk")
	mode := flag.String("mode", "resign", "shepherd: resign (Campaign/Resign), ctx (Run, ending its ctx), return (Run, OnElected returns), mutex (a lock: Lock/Unlock)")
	n := flag.Int("n", 200, "handoffs per way of resigning (the first 3 of each round are left out as warm-up)")
	rounds := flag.Int("rounds", 4, "rounds (each way of resigning runs n/rounds handoffs per round)")
	term := flag.Duration("term", 20*time.Millisecond, "how long each leader leads")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case *child >= 0:
		err = runChild(ctx, *child, *servers, *path, *peer, *mode)
	case *n < *rounds || *rounds < 1:
		err = errors.New("-n must be at least -rounds, and -rounds at least 1")
	default:
		ways := []way{{*peer, *mode}}
		if *peer == "all" {
			ways = []way{{"shepherd", "resign"}, {"shepherd", "ctx"}, {"shepherd", "return"}, {"go-zk", "resign"}}
		}
		err = runParent(ctx, ways, *n, *rounds, *term)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "handofftrace:", err)
		os.Exit(1)
	}
}

// way is a library and a way of resigning.
type way struct{ peer, mode string }

func (w way) String() string {
	if w.peer == "go-zk" {
		return "go-zk (zk.Lock)"
	}
	return map[string]string{"resign": "shepherd, Resign", "ctx": "shepherd, Run's ctx ends", "return": "shepherd, OnElected returns",
		"mutex": "shepherd mutex"}[w.mode]
}

// ---- the candidate's process ----

func runChild(ctx context.Context, who int, servers, path, peer, mode string) error {
	out := json.NewEncoder(os.Stdout)
	var mu sync.Mutex
	emit := func(e event) {
		e.Who = who
		mu.Lock()
		_ = out.Encode(e)
		mu.Unlock()
	}
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return &tracedConn{Conn: c, emit: emit}, nil
	}
	var cand gopeers.Candidate
	switch peer {
	case "shepherd":
		s, err := session.Open(ctx, []string{servers}, session.WithDialer(dial), session.WithSessionTimeout(30*time.Second))
		if err != nil {
			return err
		}
		defer s.Close()
		e, err := election.New(s, path, fmt.Sprintf("candidate-%d", who))
		if err != nil {
			return err
		}
		switch mode {
		case "mutex": // a lock handoff, for comparison
			m, err := mutex.New(s, path)
			if err != nil {
				return err
			}
			cand = gopeers.LockerCandidate(m)
		case "resign":
			cand = gopeers.CampaignCandidate(e)
		case "ctx", "return":
			cand = gopeers.RunCandidate(e, mode == "return")
		default:
			return fmt.Errorf("unknown mode %q", mode)
		}
	case "go-zk":
		cctx, cancel := context.WithTimeout(ctx, connectTimeout)
		conn, err := bench.DialWith(cctx, []string{servers}, 30*time.Second, dial)
		cancel()
		if err != nil {
			return err
		}
		defer conn.Close()
		cand = gopeers.LockCandidate(conn, path)
	default:
		return fmt.Errorf("unknown peer %q", peer)
	}
	ctx, cancel := context.WithCancel(ctx)
	campaigning := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(1)
	go func() { // one Campaign at a time, each when told
		defer wg.Done()
		for {
			select {
			case <-campaigning:
			case <-ctx.Done():
				return
			}
			if err := cand.Campaign(ctx); err != nil {
				if ctx.Err() == nil {
					fmt.Fprintln(os.Stderr, "campaign:", err)
				}
				return
			}
			emit(event{Ev: "elected", T: time.Now().UnixNano()})
		}
	}()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "campaign":
			campaigning <- struct{}{}
		case "resign":
			emit(event{Ev: "resign", T: time.Now().UnixNano()})
			if err := cand.Resign(ctx); err != nil {
				return fmt.Errorf("resign: %w", err)
			}
			emit(event{Ev: "resigned", T: time.Now().UnixNano()})
		case "quit":
			return nil
		}
	}
	return in.Err()
}

// tracedConn stamps every request frame written (go-zookeeper writes one
// frame per Write), as the write starts, and every frame read, once read (reassembled from the stream; the
// first is the connect answer, which has no header).
type tracedConn struct {
	net.Conn
	emit      func(event)
	mu        sync.Mutex
	buf       []byte
	connected bool
	wrote     bool
}

func (c *tracedConn) Write(b []byte) (int, error) {
	// Stamped as it is handed to the kernel: the writing goroutine may be
	// descheduled after the write, past the answer's arrival.
	t := time.Now().UnixNano()
	n, err := c.Conn.Write(b)
	c.mu.Lock()
	first := !c.wrote
	c.wrote = true
	c.mu.Unlock()
	if !first && len(b) >= 12 {
		c.emit(event{Ev: "out", T: t, Xid: int32(binary.BigEndian.Uint32(b[4:8])), Op: int32(binary.BigEndian.Uint32(b[8:12]))})
	}
	return n, err
}

func (c *tracedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	t := time.Now().UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = append(c.buf, b[:n]...)
	for len(c.buf) >= 4 {
		l := int(binary.BigEndian.Uint32(c.buf[:4]))
		if len(c.buf) < 4+l {
			break
		}
		f := c.buf[4 : 4+l]
		c.buf = c.buf[4+l:]
		if !c.connected {
			c.connected = true
			continue
		}
		if len(f) < 16 {
			continue
		}
		xid, code := int32(binary.BigEndian.Uint32(f[0:4])), int32(binary.BigEndian.Uint32(f[12:16]))
		switch {
		case xid == -1 && len(f) >= 20:
			c.emit(event{Ev: "notify", T: t, Xid: xid, Type: int32(binary.BigEndian.Uint32(f[16:20]))})
		case xid != -2: // not a ping's answer
			c.emit(event{Ev: "in", T: t, Xid: xid, Err: code})
		}
	}
	return n, err
}

// ---- the driver ----

type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func (p *proc) tell(s string) error {
	_, err := io.WriteString(p.stdin, s+"\n")
	return err
}

func runParent(ctx context.Context, ways []way, n, rounds int, term time.Duration) error {
	cluster, err := zktest.StartCluster(ctx, 1, zktest.WithFullJIT())
	if err != nil {
		return err
	}
	defer cluster.Close()
	results := make([][]phases, len(ways))
	rejoined := make([]int, len(ways))
	for r := range rounds {
		for k := range ways {
			i := (k + r) % len(ways)
			evs, hs, err := runWay(ctx, cluster.Servers()[0], ways[i], fmt.Sprintf("/handofftrace-%d-%d", i, r), n/rounds, term)
			if err != nil {
				return fmt.Errorf("%v, round %d: %w", ways[i], r+1, err)
			}
			ps, rj, err := analyse(evs, hs)
			if err != nil {
				return fmt.Errorf("%v, round %d: %w", ways[i], r+1, err)
			}
			results[i] = append(results[i], ps[min(3, len(ps)):]...)
			rejoined[i] += rj
		}
	}
	return report(os.Stdout, ways, results, rejoined, rounds)
}

// runWay runs n handoffs of one way with three fresh candidate processes
// and returns every process's events, in time order, and the handoffs.
func runWay(ctx context.Context, server string, w way, path string, n int, term time.Duration) ([]event, []handoff, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	events := make(chan event, 4096)
	var all []event
	var allMu sync.Mutex
	procs := make([]*proc, candidates)
	var readers sync.WaitGroup
	defer func() {
		for _, p := range procs {
			if p != nil {
				_ = p.tell("quit")
				_ = p.stdin.Close()
			}
		}
		for _, p := range procs {
			if p != nil {
				_ = p.cmd.Wait()
			}
		}
		readers.Wait()
	}()
	for i := range procs {
		cmd := exec.CommandContext(ctx, self, "-child", fmt.Sprint(i), "-servers", server, "-path", path, "-peer", w.peer, "-mode", w.mode)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, nil, err
		}
		procs[i] = &proc{cmd: cmd, stdin: stdin}
		readers.Add(1)
		go func() {
			defer readers.Done()
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				var e event
				if json.Unmarshal(sc.Bytes(), &e) != nil {
					continue
				}
				allMu.Lock()
				all = append(all, e)
				allMu.Unlock()
				switch e.Ev {
				case "elected": // never dropped
					select {
					case events <- e:
					case <-ctx.Done():
						return
					}
				case "out": // the line-up only: dropped when nobody reads
					select {
					case events <- e:
					default:
					}
				}
			}
		}()
	}
	wait := func(what string, ok func(event) bool) (event, error) {
		timeout := time.NewTimer(20 * time.Second)
		defer timeout.Stop()
		for {
			select {
			case e := <-events:
				if ok(e) {
					return e, nil
				}
			case <-timeout.C:
				return event{}, fmt.Errorf("timed out waiting for %s", what)
			case <-ctx.Done():
				return event{}, ctx.Err()
			}
		}
	}
	// Line up: candidate 0 leads, the others wait (each has set a watch:
	// a getData or exists request).
	for i, p := range procs {
		if err := p.tell("campaign"); err != nil {
			return nil, nil, err
		}
		if i == 0 {
			_, err = wait("the first leader", func(e event) bool { return e.Ev == "elected" && e.Who == 0 })
		} else {
			_, err = wait("a candidate's watch", func(e event) bool { return e.Who == i && e.Ev == "out" && (e.Op == 3 || e.Op == 4) })
		}
		if err != nil {
			return nil, nil, err
		}
	}
	var hs []handoff
	leader := 0
	for len(hs) < n {
		if err := gopeers.SleepCtx(ctx, term); err != nil {
			return nil, nil, err
		}
		if err := procs[leader].tell("resign"); err != nil {
			return nil, nil, err
		}
		e, err := wait("the next leader", func(e event) bool { return e.Ev == "elected" })
		if err != nil {
			return nil, nil, err
		}
		if e.Who == leader {
			return nil, nil, fmt.Errorf("candidate %d re-elected itself", leader)
		}
		hs = append(hs, handoff{leader, e.Who})
		// Rejoin (return mode: Run rejoins by itself, and Campaign waits
		// for its next OnElected).
		if err := procs[leader].tell("campaign"); err != nil {
			return nil, nil, err
		}
		leader = e.Who
	}
	if err := gopeers.SleepCtx(ctx, 200*time.Millisecond); err != nil { // the last events
		return nil, nil, err
	}
	allMu.Lock()
	evs := slices.Clone(all)
	allMu.Unlock()
	slices.SortStableFunc(evs, func(a, b event) int { return cmp.Compare(a.T, b.T) })
	return evs, hs, nil
}

// phases of one handoff, in ns, on the one clock.
type phases struct {
	toWire, toNotify, toAnswer, toElected, total int64
	requests                                     []string // the new leader's, between the notification and being told
	trace                                        []event
	r0                                           int64
}

// handoff is one leadership change: from resigned, to was elected.
type handoff struct{ from, to int }

// analyse finds each handoff's phases in evs. Handoffs where the next
// leader was elected by its own look at the line (it was rejoining after
// resigning just before, and found itself at the head) are counted apart.
func analyse(evs []event, hs []handoff) (ps []phases, rejoined int, err error) {
	i := 0 // where the search for the next handoff starts
	for _, h := range hs {
		var p phases
		r0, r1, r2, s1, s2 := int64(-1), int64(-1), int64(-1), int64(-1), int64(-1)
		delXid := int32(0)
		j := i
		for ; j < len(evs); j++ {
			e := evs[j]
			switch {
			case r0 < 0:
				if e.Who == h.from && e.Ev == "resign" {
					r0 = e.T
					p.trace = append(p.trace, e)
				}
				continue
			case e.Who != h.from && e.Who != h.to:
				continue
			}
			p.trace = append(p.trace, e)
			switch {
			case e.Who == h.from && e.Ev == "out" && e.Op == opDelete && r1 < 0:
				r1, delXid = e.T, e.Xid
			case e.Who == h.from && e.Ev == "in" && r1 >= 0 && e.Xid == delXid && r2 < 0:
				r2 = e.T
			case e.Who == h.to && e.Ev == "notify" && e.Type == notifyDeleted && r1 >= 0 && s1 < 0:
				s1 = e.T
			case e.Who == h.to && e.Ev == "out" && s1 >= 0 && s2 < 0:
				p.requests = append(p.requests, opName(e.Op))
			case e.Who == h.to && e.Ev == "elected":
				s2 = e.T
			}
			if s2 >= 0 && r2 >= 0 {
				break
			}
		}
		i = j
		if r0 >= 0 && r1 >= 0 && r2 >= 0 && s1 < 0 && s2 >= 0 {
			rejoined++
			continue
		}
		if r0 < 0 || r1 < 0 || r2 < 0 || s1 < 0 || s2 < 0 {
			return nil, 0, fmt.Errorf("handoff %d (%d → %d): events missing from the trace (resign %v, delete sent %v, answered %v, notified %v, elected %v)",
				len(ps), h.from, h.to, r0 >= 0, r1 >= 0, r2 >= 0, s1 >= 0, s2 >= 0)
		}
		p.r0, p.toWire, p.toNotify, p.toAnswer, p.toElected, p.total = r0, r1-r0, s1-r1, r2-r1, s2-s1, s2-r0
		ps = append(ps, p)
	}
	return ps, rejoined, nil
}

func report(w io.Writer, ways []way, results [][]phases, rejoined []int, rounds int) error {
	for i, ps := range results {
		if len(ps) == 0 {
			return fmt.Errorf("%v: no handoff past the warm-up", ways[i])
		}
	}
	med := func(ps []phases, f func(phases) int64) string {
		v := make([]int64, len(ps))
		for k, p := range ps {
			v[k] = f(p)
		}
		slices.Sort(v)
		return fmt.Sprintf("%.0f", float64(v[len(v)/2])/1e3)
	}
	fmt.Fprintf(w, "handofftrace: %d candidates in %d processes, one ZooKeeper, %d rounds; medians, µs, one host clock\n\n", candidates, candidates, rounds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\t")
	for _, wy := range ways {
		fmt.Fprintf(tw, "%v\t", wy)
	}
	fmt.Fprintln(tw)
	rows := []struct {
		label string
		f     func(phases) int64
	}{
		{"resign called → delete on the wire (old leader)", func(p phases) int64 { return p.toWire }},
		{"delete on the wire → old leader reads its answer", func(p phases) int64 { return p.toAnswer }},
		{"delete on the wire → next leader reads NodeDeleted", func(p phases) int64 { return p.toNotify }},
		{"next leader: NodeDeleted → told it leads", func(p phases) int64 { return p.toElected }},
		{"resign called → next leader told", func(p phases) int64 { return p.total }},
		{"  the client's share (first + fourth)", func(p phases) int64 { return p.toWire + p.toElected }},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t", r.label)
		for _, ps := range results {
			fmt.Fprintf(tw, "%s\t", med(ps, r.f))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "handoffs\t")
	for _, ps := range results {
		fmt.Fprintf(tw, "%d\t", len(ps))
	}
	fmt.Fprintln(tw)
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, ps := range results {
		counts := map[string]int{}
		for _, p := range ps {
			counts[strings.Join(p.requests, "+")]++
		}
		keys := slices.Sorted(maps.Keys(counts))
		fmt.Fprintf(w, "\n%v: the next leader's requests between NodeDeleted and being told:", ways[i])
		for _, k := range keys {
			name := k
			if name == "" {
				name = "none"
			}
			fmt.Fprintf(w, " %s ×%d", name, counts[k])
		}
		if rejoined[i] > 0 {
			fmt.Fprintf(w, " (and %d handoffs left out: the next leader was rejoining and found itself at the head)", rejoined[i])
		}
		fmt.Fprintln(w)
		// The handoff whose total is the median, event by event.
		sorted := slices.Clone(ps)
		slices.SortFunc(sorted, func(a, b phases) int { return cmp.Compare(a.total, b.total) })
		m := sorted[len(sorted)/2]
		fmt.Fprintf(w, "  the median handoff, event by event (µs from the resign call):\n")
		for _, e := range m.trace {
			fmt.Fprintf(w, "    %8.0f  candidate %d  %s\n", float64(e.T-m.r0)/1e3, e.Who, describe(e))
		}
	}
	return nil
}

func opName(op int32) string {
	if s, ok := opNames[op]; ok {
		return s
	}
	return fmt.Sprintf("op%d", op)
}

func describe(e event) string {
	switch e.Ev {
	case "out":
		return fmt.Sprintf("sends %s (xid %d)", opName(e.Op), e.Xid)
	case "in":
		if e.Err != 0 {
			return fmt.Sprintf("reads the answer to xid %d (error %d)", e.Xid, e.Err)
		}
		return fmt.Sprintf("reads the answer to xid %d", e.Xid)
	case "notify":
		return fmt.Sprintf("reads a notification (%s)", zk.EventType(e.Type))
	}
	return e.Ev
}
