// Command shepherd-demo is what `make demo` runs. It starts a local ZooKeeper
// on loopback in a temporary directory, three replicas of examples/failover as
// separate processes, and shows who leads; then it crashes the leader
// (SIGKILL) and stops the next one gracefully (SIGTERM), printing a timeline
// with the failover times measured; then it does the same to three
// examples/scheduler processes running a job every 400ms, and checks from
// their output that each tick ran at most once and that only the ticks the
// catch-up policy skips were skipped (it exits non-zero otherwise); then it
// runs examples/workers, a pool of processes sharing a semaphore of 3 leases. Every process it started is
// stopped when it ends, also on Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/session"
	"github.com/shepherdzk/shepherd/zktest"
)

func main() {
	sessionTimeout := flag.Duration("session-timeout", 2*time.Second, "replicas' ZooKeeper session timeout (a crashed leader is replaced after it)")
	skipScheduler := flag.Bool("skip-scheduler", false, "skip the scheduler part")
	skipWorkers := flag.Bool("skip-workers", false, "skip the worker pool part")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // the whole demo is bounded
	defer cancel()
	d := &demo{start: time.Now(), out: os.Stdout, sessionTimeout: *sessionTimeout}
	err := d.run(ctx, !*skipScheduler, !*skipWorkers)
	d.cleanup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

type demo struct {
	start          time.Time
	out            io.Writer
	sessionTimeout time.Duration
	zk             *zktest.Cluster
	bin            string
	procs          []*exec.Cmd
	done           map[*exec.Cmd]chan struct{} // closed when the process has been waited for
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, "%7.2fs  %s\n", time.Since(d.start).Seconds(), fmt.Sprintf(format, args...))
}

func (d *demo) note(format string, args ...any) {
	fmt.Fprintf(d.out, "          %s\n", fmt.Sprintf(format, args...))
}

func (d *demo) cleanup() {
	for _, p := range d.procs {
		select {
		case <-d.done[p]:
		default:
			_ = p.Process.Kill()
			<-d.done[p]
		}
	}
	if d.zk != nil {
		d.zk.Close()
	}
	if d.bin != "" {
		os.RemoveAll(d.bin)
	}
}

// build compiles the examples into a temporary directory (one go build:
// the packages are built in parallel).
func (d *demo) build(ctx context.Context, names ...string) error {
	dir, err := os.MkdirTemp("", "shepherd-demo-")
	if err != nil {
		return err
	}
	d.bin = dir
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, n := range names {
		args = append(args, "./examples/"+n)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building examples %v (run the demo from the repository root): %w", names, err)
	}
	return nil
}

// spawn starts a process; its output goes to a log file in the temp dir.
func (d *demo) spawn(name string, args ...string) (*exec.Cmd, error) {
	return d.spawnTo(name, nil, args...)
}

// spawnTo is spawn, and the process's stdout goes to w too (when not nil).
func (d *demo) spawnTo(name string, w io.Writer, args ...string) (*exec.Cmd, error) {
	cmd := exec.Command(filepath.Join(d.bin, name), args...)
	logf, err := os.Create(filepath.Join(d.bin, fmt.Sprintf("%s-%d.log", name, len(d.procs))))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if w != nil {
		cmd.Stdout = io.MultiWriter(logf, w)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	d.procs = append(d.procs, cmd)
	if d.done == nil {
		d.done = map[*exec.Cmd]chan struct{}{}
	}
	done := make(chan struct{})
	d.done[cmd] = done
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	return cmd, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

type replica struct {
	id, addr string
	cmd      *exec.Cmd
}

func (d *demo) run(ctx context.Context, scheduler, workers bool) error {
	fmt.Fprintln(d.out, "shepherd demo: leader election with failover, a scheduled job's failover, a bounded worker pool")
	names := []string{"failover"}
	if scheduler {
		names = append(names, "scheduler")
	}
	if workers {
		names = append(names, "workers")
	}
	if err := d.build(ctx, names...); err != nil {
		return err
	}
	zk, err := zktest.StartCluster(ctx, 1)
	if err != nil {
		return err
	}
	d.zk = zk
	d.say("ZooKeeper serving at %s (started in %v, data in a temp dir)", zk.ConnectString(), zk.StartupTime().Round(time.Millisecond))

	sess, err := session.Open(ctx, zk.Servers())
	if err != nil {
		return err
	}
	defer sess.Close()
	const path = "/shepherd/examples/failover"
	leaders, err := election.Observe(ctx, sess, path)
	if err != nil {
		return err
	}
	<-leaders // nobody yet

	var reps []*replica
	for _, id := range []string{"a", "b", "c"} {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		cmd, err := d.spawn("failover", "-id", id, "-listen", addr, "-zk", zk.ConnectString(),
			"-path", path, "-session-timeout", d.sessionTimeout.String())
		if err != nil {
			return err
		}
		reps = append(reps, &replica{id: id, addr: addr, cmd: cmd})
		d.say("started replica %s (pid %d) on http://%s/", id, cmd.Process.Pid, addr)
	}
	next := func(what string) (election.Leader, error) {
		for {
			select {
			case l, ok := <-leaders:
				if !ok {
					return election.Leader{}, ctx.Err()
				}
				if l.ID != "" {
					return l, nil
				}
			case <-ctx.Done():
				return election.Leader{}, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
			}
		}
	}
	l, err := next("the first leader")
	if err != nil {
		return err
	}
	d.say("leader: %s (term %d)", l.ID, int64(l.Term))
	if err := d.showHTTP(ctx, reps, l.ID); err != nil {
		return err
	}
	byID := map[string]*replica{}
	for _, r := range reps {
		byID[r.id] = r
	}
	type failover struct {
		how      string
		from, to string
		took     time.Duration
		fromTerm election.Term
		toTerm   election.Term
	}
	var results []failover
	for _, how := range []string{"SIGKILL", "SIGTERM"} {
		old := l
		sig, why := syscall.SIGKILL, "a crash: the others wait for its session to expire"
		if how == "SIGTERM" {
			sig, why = syscall.SIGTERM, "a graceful stop: it resigns first"
		}
		t0 := time.Now()
		if err := byID[old.ID].cmd.Process.Signal(sig); err != nil {
			return err
		}
		d.say("%s to leader %s (%s)", how, old.ID, why)
		if l, err = next("a new leader"); err != nil {
			return err
		}
		took := time.Since(t0)
		d.say("leader: %s (term %d), failover took %v", l.ID, int64(l.Term), took.Round(time.Millisecond))
		results = append(results, failover{how, old.ID, l.ID, took, old.Term, l.Term})
		alive := reps[:0:0]
		for _, r := range reps {
			if r.id != old.ID {
				alive = append(alive, r)
			}
		}
		reps = alive
		if err := d.showHTTP(ctx, reps, l.ID); err != nil {
			return err
		}
	}
	fmt.Fprintln(d.out, "\nfailover summary:")
	for _, r := range results {
		fmt.Fprintf(d.out, "  %-8s %s → %s in %8v   term %d → %d\n", r.how, r.from, r.to, r.took.Round(time.Millisecond), int64(r.fromTerm), int64(r.toTerm))
	}
	fmt.Fprintf(d.out, "  (a crash costs about one session timeout, %v; a graceful handover milliseconds)\n\n", d.sessionTimeout)
	for _, r := range reps {
		if r.id == l.ID {
			d.showMetrics(ctx, r)
		}
	}
	if scheduler {
		if err := d.runScheduler(ctx, sess); err != nil {
			return err
		}
	}
	if workers {
		return d.runWorkers(ctx)
	}
	return nil
}

// showHTTP asks every replica what it is. A replica learns it leads (or who
// leads) a moment after ZooKeeper shows it, so each answer is awaited until it
// agrees with leader, for up to two seconds.
func (d *demo) showHTTP(ctx context.Context, reps []*replica, leader string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	for _, r := range reps {
		want := fmt.Sprintf("503 standby %s: the leader is %q", r.id, leader)
		if r.id == leader {
			want = "200 active " + r.id
		}
		var line string
		for i := 0; i < 40; i++ {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.addr+"/", nil)
			resp, err := client.Do(req)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				line = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
				if strings.HasPrefix(line, want) {
					break
				}
			} else {
				line = err.Error()
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
		d.note("GET http://%s/ (%s) → %s", r.addr, r.id, line)
	}
	return nil
}

// showMetrics prints a few of the leader's Prometheus metrics (/metrics).
func (d *demo) showMetrics(ctx context.Context, r *replica) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.addr+"/metrics", nil)
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
	if err != nil {
		d.note("metrics: %v", err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	d.say("GET http://%s/metrics (%s), a few of its lines:", r.addr, r.id)
	for _, line := range strings.Split(string(b), "\n") {
		for _, p := range []string{"shepherd_leader{", "shepherd_leader_term{", "shepherd_leadership_changes_total{",
			`shepherd_session_state{state="Connected"}`, "shepherd_acquire_wait_seconds_count"} {
			if strings.HasPrefix(line, p) {
				d.note("%s", line)
			}
		}
	}
	fmt.Fprintln(d.out)
}
