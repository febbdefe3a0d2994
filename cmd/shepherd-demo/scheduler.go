package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shepherdzk/shepherd/schedule"
	"github.com/shepherdzk/shepherd/session"
)

// The scheduler part's settings: short, so that it adds a few seconds.
const (
	schedEvery   = 400 * time.Millisecond
	schedWork    = 50 * time.Millisecond
	schedSession = time.Second // a crashed leader is replaced after about this
	schedPath    = "/shepherd/demo/scheduler"
)

// tickLine is one "msg=tick" line of an examples/scheduler process.
type tickLine struct {
	id        string
	n         int64
	attempt   int
	term      int64
	scheduled time.Time // when the tick was due (the ZooKeeper server's clock)
	at        time.Time // when the demo read the line
}

// tickLog collects the tick lines of all the scheduler processes, in the
// order the demo read them.
type tickLog struct {
	mu   sync.Mutex
	all  []tickLine
	wake chan struct{} // signalled on every line
}

func newTickLog() *tickLog { return &tickLog{wake: make(chan struct{}, 1)} }

func (l *tickLog) add(t tickLine) {
	l.mu.Lock()
	l.all = append(l.all, t)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *tickLog) lines() []tickLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]tickLine(nil), l.all...)
}

// wait returns line i, waiting for it up to timeout.
func (l *tickLog) wait(ctx context.Context, i int, timeout time.Duration, what string) (tickLine, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		if i < len(l.all) {
			t := l.all[i]
			l.mu.Unlock()
			return t, nil
		}
		l.mu.Unlock()
		select {
		case <-l.wake:
		case <-ctx.Done():
			return tickLine{}, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-deadline.C:
			return tickLine{}, fmt.Errorf("no %s within %v", what, timeout)
		}
	}
}

// lineWriter is a process's stdout: it splits it into lines and adds the
// tick lines to log.
type lineWriter struct {
	id  string
	log *tickLog
	buf []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if t, ok := parseTick(string(w.buf[:i])); ok {
			t.id, t.at = w.id, time.Now()
			w.log.add(t)
		}
		w.buf = w.buf[i+1:]
	}
}

// parseTick parses examples/scheduler's slog line
// "time=... level=INFO msg=tick scheduler=a n=3 scheduled=... attempt=1 term=7".
func parseTick(line string) (tickLine, bool) {
	kv := map[string]string{}
	for _, f := range strings.Fields(line) {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		}
	}
	if kv["msg"] != "tick" {
		return tickLine{}, false
	}
	var t tickLine
	var err error
	if t.n, err = strconv.ParseInt(kv["n"], 10, 64); err != nil {
		return tickLine{}, false
	}
	if t.attempt, err = strconv.Atoi(kv["attempt"]); err != nil {
		return tickLine{}, false
	}
	if t.term, err = strconv.ParseInt(kv["term"], 10, 64); err != nil {
		return tickLine{}, false
	}
	if t.scheduled, err = time.Parse(time.RFC3339Nano, kv["scheduled"]); err != nil {
		return tickLine{}, false
	}
	return t, true
}

// runScheduler runs three examples/scheduler processes on one schedule (a
// job every 400ms), crashes the one that runs the ticks (SIGKILL: the
// others wait for its session to expire), then stops the next one
// gracefully (SIGTERM: it leaves the election at once), and checks from
// their output that no tick ran twice and that the only ticks skipped are
// those the catch-up policy (CatchUpOnce, the default) skips: the ticks
// that fell due while nobody could run them, except the latest.
func (d *demo) runScheduler(ctx context.Context, sess *session.Session) error {
	fmt.Fprintf(d.out, "a singleton job every %v (examples/scheduler, package schedule): 3 processes, the leader runs each tick\n", schedEvery)
	log := newTickLog()
	procs := map[string]*exec.Cmd{}
	for _, id := range []string{"a", "b", "c"} {
		cmd, err := d.spawnTo("scheduler", &lineWriter{id: id, log: log}, "-id", id, "-zk", d.zk.ConnectString(),
			"-path", schedPath, "-every", schedEvery.String(), "-work", schedWork.String(),
			"-session-timeout", schedSession.String())
		if err != nil {
			return err
		}
		procs[id] = cmd
	}
	d.say("started schedulers a, b, c (session timeout %v, each job run takes %v)", schedSession, schedWork)
	// The demo's own view of the schedule's record (New does no I/O).
	rec, err := schedule.New(sess, schedPath, "demo", schedEvery)
	if err != nil {
		return err
	}
	shown := 0
	show := func(what string, timeout time.Duration, mark string) (tickLine, error) {
		t, err := log.wait(ctx, shown, timeout, what)
		if err != nil {
			return t, err
		}
		shown++
		d.say("tick %2d ran on %s (term %d, attempt %d)%s", t.n, t.id, t.term, t.attempt, mark)
		return t, nil
	}
	// finished waits (bounded) until the record says the last tick started
	// is finished: a leader stopped then has no tick in flight, and the new
	// one has nothing to rerun (a crash in the middle of a run would make
	// the new leader run that tick again, attempt 2: RerunInterrupted).
	finished := func() error {
		for i := 0; i < 100; i++ {
			r, err := rec.Record(ctx)
			if err == nil && r.State == "finished" {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
		return fmt.Errorf("the schedule's last tick was not recorded finished within 2s")
	}
	stop := func(t tickLine, how string, why string) (time.Time, error) {
		sig := syscall.SIGTERM
		if how == "SIGKILL" {
			sig = syscall.SIGKILL
		}
		if err := finished(); err != nil {
			return time.Time{}, err
		}
		t0 := time.Now()
		if err := procs[t.id].Process.Signal(sig); err != nil {
			return t0, err
		}
		d.say("%s to scheduler %s, the leader (%s)", how, t.id, why)
		// Its output is complete once it has been waited for.
		select {
		case <-d.done[procs[t.id]]:
		case <-time.After(10 * time.Second):
			return t0, fmt.Errorf("scheduler %s did not exit", t.id)
		}
		return t0, nil
	}
	var fos []schedFailover

	var last tickLine
	for i := 0; i < 3; i++ {
		if last, err = show("a tick", 10*time.Second, ""); err != nil {
			return err
		}
	}
	for _, how := range []string{"SIGKILL", "SIGTERM"} {
		why := fmt.Sprintf("a crash: the others wait for its session to expire, %v", schedSession)
		if how == "SIGTERM" {
			why = "a graceful stop: it records its last tick and leaves the election"
		}
		t0, err := stop(last, how, why)
		if err != nil {
			return err
		}
		// The tick before: the last one the stopped process ran (all of
		// its output has been read).
		var before tickLine
		for _, t := range log.lines() {
			if t.id == last.id {
				before = t
			}
		}
		for shown < len(log.lines()) && log.lines()[shown].id == last.id {
			if _, err := show("a tick", 0, ""); err != nil {
				return err
			}
		}
		d.note("the tick before the failover: %d, on %s", before.n, before.id)
		after, err := show("the tick after the failover", schedSession+10*time.Second, "")
		if err != nil {
			return err
		}
		f := schedFailover{how: how, before: before, after: after, took: after.at.Sub(t0), due: after.scheduled.Sub(t0)}
		fos = append(fos, f)
		switch {
		case after.n == before.n+1:
			d.note("the tick after: %d, on %s, ran %v after the %s (it was due %v after it)",
				after.n, after.id, f.took.Round(time.Millisecond), how, f.due.Round(time.Millisecond))
		case after.n > before.n+1:
			d.note("the tick after: %d, on %s, ran %v after the %s (it was due %v after it)",
				after.n, after.id, f.took.Round(time.Millisecond), how, f.due.Round(time.Millisecond))
			d.note("%s fell due meanwhile, not run: a new leader runs only the latest due tick (CatchUpOnce, the default)",
				tickSpan(before.n+1, after.n-1))
		}
		if last, err = show("a tick", 10*time.Second, ""); err != nil {
			return err
		}
	}
	// Stop the last one gracefully and check everything that ran.
	if _, err := stop(last, "SIGTERM", "the end of this part"); err != nil {
		return err
	}
	for shown < len(log.lines()) {
		if _, err := show("a tick", 0, ""); err != nil {
			return err
		}
	}
	for id, p := range procs {
		<-d.done[p]
		if id != fos[0].before.id && !p.ProcessState.Success() {
			return fmt.Errorf("scheduler %s: %v", id, p.ProcessState)
		}
	}
	return d.checkTicks(log.lines(), fos)
}

// schedFailover is one of the scheduler part's failovers.
type schedFailover struct {
	how           string // SIGKILL or SIGTERM
	before, after tickLine
	took          time.Duration // from the signal to the tick after, read
	due           time.Duration // from the signal to when the tick after was due
}

// checkTicks checks the ticks run, in the order they were read: each ran
// once, in order, from tick 0 on, and every tick skipped is one the
// catch-up policy skips (the tick run after a gap is the latest due: it ran
// less than an interval after it was due, give or take an interval's slack
// for a loaded machine). It prints the summary.
func (d *demo) checkTicks(ticks []tickLine, fos []schedFailover) error {
	if len(ticks) == 0 || ticks[0].n != 0 {
		return fmt.Errorf("scheduler: the first tick run is not tick 0")
	}
	ranOn := map[int64]tickLine{}
	perID := map[string]int{}
	var skipped []string
	for i, t := range ticks {
		if prev, ok := ranOn[t.n]; ok {
			return fmt.Errorf("scheduler: tick %d ran twice: on %s (term %d, attempt %d) and on %s (term %d, attempt %d)",
				t.n, prev.id, prev.term, prev.attempt, t.id, t.term, t.attempt)
		}
		ranOn[t.n] = t
		perID[t.id]++
		if i == 0 {
			continue
		}
		p := ticks[i-1]
		if t.n < p.n {
			return fmt.Errorf("scheduler: tick %d ran after tick %d", t.n, p.n)
		}
		if t.n > p.n+1 {
			if late := t.at.Sub(t.scheduled); late >= 2*schedEvery {
				return fmt.Errorf("scheduler: ticks %s were skipped, and tick %d ran %v after it was due: not the latest due tick (CatchUpOnce)",
					span(p.n+1, t.n-1), t.n, late.Round(time.Millisecond))
			}
			skipped = append(skipped, tickSpan(p.n+1, t.n-1))
		}
	}
	last := ticks[len(ticks)-1].n
	ids := make([]string, 0, len(perID))
	for id := range perID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var on []string
	for _, id := range ids {
		on = append(on, fmt.Sprintf("%d on %s", perID[id], id))
	}
	fmt.Fprintf(d.out, "\nscheduler summary:\n  ticks %s: %d ran, each once (%s)", span(0, last), len(ticks), strings.Join(on, ", "))
	if len(skipped) > 0 {
		fmt.Fprintf(d.out, "; not run: %s, due while no leader could run them (CatchUpOnce)", strings.Join(skipped, ", "))
	}
	fmt.Fprintln(d.out)
	for _, f := range fos {
		what := "a crash"
		if f.how == "SIGTERM" {
			what = "a graceful stop"
		}
		fmt.Fprintf(d.out, "  %-8s (%s): tick %d on %s → tick %d on %s, run %v after the signal (due %v after it)\n",
			f.how, what, f.before.n, f.before.id, f.after.n, f.after.id, f.took.Round(10*time.Millisecond), f.due.Round(10*time.Millisecond))
	}
	fmt.Fprintln(d.out)
	return nil
}

// tickSpan is "tick a" or "ticks a–b".
func tickSpan(a, b int64) string {
	if a == b {
		return fmt.Sprintf("tick %d", a)
	}
	return "ticks " + span(a, b)
}

// span is "a" or "a–b".
func span(a, b int64) string {
	if a == b {
		return strconv.FormatInt(a, 10)
	}
	return fmt.Sprintf("%d–%d", a, b)
}
