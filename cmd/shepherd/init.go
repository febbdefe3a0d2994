package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// initCommand is the hidden subcommand of the init that runs CMD (see
// child.go). Not for people: shepherd starts it with its control pipe as
// file descriptor 3.
const initCommand = "__init"

// rekill is how often the init repeats SIGKILL while processes remain (a
// process forked while the previous round was being sent).
const rekill = 20 * time.Millisecond

// freezeLimit bounds a freeze: a process in uninterruptible sleep (a hung
// NFS mount) stops only when it wakes; the init then reports how many still
// run.
const freezeLimit = 3 * time.Second

// request is a line of the control pipe: "stop SIG GRACE_NS", "freeze SEQ"
// or "thaw".
type request struct {
	op    string // "stop", "freeze" or "thaw"
	sig   syscall.Signal
	grace time.Duration
	seq   string // freeze: echoed in the answer
}

// runInit is the init's main: it returns its exit status, CMD's own.
func runInit(args []string) int {
	fs := flag.NewFlagSet(initCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	mode := fs.String("mode", string(modePIDNS), "")
	grace := fs.Duration("grace", 10*time.Second, "")
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "shepherd: __init is shepherd's own helper, not a subcommand")
		return exitUsage
	}
	argv := fs.Args()
	tree := processTree{mode: treeMode(*mode), self: os.Getpid()}

	// Signals from outside (a terminal's Ctrl-C reaches the whole process
	// group) are shepherd's to act on: it sends "stop" over the pipe. They
	// are caught, not ignored, so that CMD starts with default handlers.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)

	ctl := os.NewFile(3, "control")
	syscall.CloseOnExec(3)
	answers := os.NewFile(4, "answers")
	syscall.CloseOnExec(4)
	reqs := make(chan request)
	parentGone := make(chan struct{})
	go readControl(ctl, reqs, parentGone)

	if tree.mode == modeSubreaper {
		if err := setSubreaper(); err != nil {
			fmt.Fprintf(os.Stderr, "shepherd: cannot become a subreaper: %v\n", err)
			return exitError
		}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "shepherd: cannot run %q: %v\n", argv[0], err)
		if errors.Is(err, os.ErrPermission) {
			return exitCannotExec
		}
		return exitNotFound
	}
	if tree.mode == modePIDNS {
		randomizePIDs()
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "shepherd: cannot run %q: %v\n", argv[0], err)
		if errors.Is(err, syscall.ENOENT) {
			return exitNotFound
		}
		return exitCannotExec
	}

	// Reap every child: CMD, and every orphan of CMD's that lands here.
	cmdDone := make(chan syscall.WaitStatus, 1)
	allGone := make(chan struct{})
	go func() {
		for {
			var ws syscall.WaitStatus
			wpid, err := syscall.Wait4(-1, &ws, 0, nil)
			switch {
			case errors.Is(err, syscall.EINTR):
			case err != nil: // ECHILD: nothing is left, and nothing can come back
				close(allGone)
				return
			case wpid == pid:
				cmdDone <- ws
			}
		}
	}()

	var status syscall.WaitStatus
	var killAt <-chan time.Time // when the stop's grace runs out
	var killTimer *time.Timer
	var deadline time.Time
	var ticker <-chan time.Time // SIGKILL rounds
	stop := func(sig syscall.Signal, g time.Duration) {
		tree.signal(sig)
		if d := time.Now().Add(g); deadline.IsZero() || d.Before(deadline) {
			deadline = d
			if killTimer != nil {
				killTimer.Stop()
			}
			killTimer = time.NewTimer(g)
			killAt = killTimer.C
		}
	}
	killAll := func() {
		tree.signal(syscall.SIGKILL)
		if ticker == nil {
			ticker = time.NewTicker(rekill).C
		}
	}
	for {
		select {
		case <-allGone:
			select {
			case status = <-cmdDone: // sent before allGone closed
			default:
			}
			return exitStatus(status)
		case status = <-cmdDone:
			// CMD ended; whatever it left running must not outlive the hold.
			if n := tree.count(); n > 0 {
				fmt.Fprintf(os.Stderr, "shepherd: %s exited; stopping the %d process%s it left running\n",
					argv[0], n, map[bool]string{true: "", false: "es"}[n == 1])
				stop(syscall.SIGTERM, *grace)
			}
		case r := <-reqs:
			switch r.op {
			case "stop":
				stop(r.sig, r.grace)
			case "freeze":
				// Answered only once every process is stopped: shepherd
				// says "frozen" after this answer.
				_, _ = fmt.Fprintf(answers, "frozen %s %d\n", r.seq, tree.freeze(freezeLimit))
			case "thaw":
				tree.signal(syscall.SIGCONT)
			}
		case <-killAt:
			killAll()
		case <-ticker:
			tree.signal(syscall.SIGKILL)
		case <-parentGone:
			// shepherd died (even SIGKILL closes the pipe): its hold is
			// gone or going, so are CMD's processes.
			parentGone = nil
			killAll()
		case <-sigs:
		}
	}
}

// readControl reads control lines ("stop SIG GRACE_NS", "freeze SEQ",
// "thaw") until end of file, which it reports by closing gone.
func readControl(r io.Reader, reqs chan<- request, gone chan<- struct{}) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "stop":
			sig, err1 := strconv.Atoi(f[1])
			ns, err2 := strconv.ParseInt(f[2], 10, 64)
			if err1 != nil || err2 != nil {
				continue
			}
			reqs <- request{op: "stop", sig: syscall.Signal(sig), grace: time.Duration(ns)}
		case len(f) == 2 && f[0] == "freeze":
			reqs <- request{op: "freeze", seq: f[1]}
		case len(f) == 1 && f[0] == "thaw":
			reqs <- request{op: "thaw"}
		}
	}
	close(gone)
}

// randomizePIDs makes the namespace's next PID a random one: every CMD would
// otherwise get the same small PIDs, and scripts that name files after $$
// (run side by side under a semaphore) would clobber each other's. Writing
// ns_last_pid needs CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE) over the
// namespace: as root it works; in a user namespace it fails and PIDs repeat.
func randomizePIDs() {
	max := 32768
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v > 4096 {
			max = v
		}
	}
	last := 1000 + rand.IntN(max-2000)
	_ = os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(last)), 0)
}

func exitStatus(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// setSubreaper makes this process the child subreaper of its descendants.
func setSubreaper() error {
	const prSetChildSubreaper = 36
	_, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	if e != 0 {
		return e
	}
	return nil
}

// processTree is every process CMD started.
type processTree struct {
	mode treeMode
	self int
}

// signal sends sig to every process of the tree.
func (t processTree) signal(sig syscall.Signal) {
	if t.mode == modePIDNS {
		// From PID 1: every process of the namespace but the init.
		_ = syscall.Kill(-1, sig)
		return
	}
	for _, pid := range t.descendants() {
		_ = syscall.Kill(pid, sig)
	}
}

// freeze stops (SIGSTOP) every process of the tree and returns when it
// sees them all stopped, or after limit; it returns how many still run.
// In the PID namespace kill(-1) reaches every process, one being forked
// too. Below a subreaper each process is signalled by PID, and a process
// may fork between a listing and its signal: freeze is done only when two
// listings in a row show the same processes, all stopped (a stopped
// process forks no more, and a child forked before its parent stopped is
// in the second listing).
func (t processTree) freeze(limit time.Duration) int {
	deadline := time.Now().Add(limit)
	var prev map[int]bool
	for {
		procs := t.list()
		cur := make(map[int]bool, len(procs))
		var running []int
		for _, p := range procs {
			cur[p.pid] = true
			if !frozen(p.pid, p.state) {
				running = append(running, p.pid)
			}
		}
		if len(running) == 0 && sameSet(prev, cur) {
			return 0
		}
		if time.Now().After(deadline) {
			return len(running)
		}
		prev = cur
		if t.mode == modePIDNS {
			_ = syscall.Kill(-1, syscall.SIGSTOP)
		} else {
			for _, pid := range running {
				_ = syscall.Kill(pid, syscall.SIGSTOP)
			}
		}
		if len(running) > 0 {
			time.Sleep(time.Millisecond) // let the signals land before the next listing
		}
	}
}

// frozen reports whether the process (state: /proc/PID/stat's letter) is
// stopped, or will stop before it runs another instruction of its own: in
// uninterruptible sleep (D) with SIGSTOP pending. Such a process cannot
// take a stop until its sleep ends: a disk write under writeback
// throttling (an effect already in flight, which lands), or a shell
// waiting in vfork for a child that the freeze stopped before its exec
// (which stays so until the thaw).
func frozen(pid int, state string) bool {
	switch state {
	case "T", "t":
		return true
	case "D":
		return stopPending(pid)
	}
	return false
}

// stopPending reports whether SIGSTOP is pending for pid (for the process or
// its thread): bit 19-1 of /proc/PID/status's ShdPnd or SigPnd mask.
func stopPending(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "ShdPnd" && k != "SigPnd") {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err == nil && mask&(1<<(uint(syscall.SIGSTOP)-1)) != 0 {
			return true
		}
	}
	return false
}

func sameSet(a, b map[int]bool) bool {
	if a == nil || len(a) != len(b) {
		return false
	}
	for k := range b {
		if !a[k] {
			return false
		}
	}
	return true
}

// count is the number of processes in the tree.
func (t processTree) count() int { return len(t.descendants()) }

// descendants lists the live processes below the init (zombies, which have
// ended already, aside), read from /proc. In the PID namespace /proc is
// still the host's: PIDs there are the host's, the init's too.
func (t processTree) descendants() []int {
	procs := t.list()
	out := make([]int, len(procs))
	for i, p := range procs {
		out[i] = p.pid
	}
	return out
}

// treeProc is a process of the tree and its state (/proc/PID/stat's letter).
type treeProc struct {
	pid   int
	state string
}

// list lists the live processes below the init, as descendants.
func (t processTree) list() []treeProc {
	self := t.self
	if t.mode == modePIDNS {
		if p, err := os.Readlink("/proc/self"); err == nil {
			self, _ = strconv.Atoi(p)
		}
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]treeProc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, state, ok := parentOf(pid); ok && state != "Z" {
			children[ppid] = append(children[ppid], treeProc{pid, state})
		}
	}
	var out []treeProc
	queue := []int{self}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

// parentOf reads a process's parent and state from /proc/PID/stat.
func parentOf(pid int) (ppid int, state string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold anything
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(s[i+1:]) // state ppid ...
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0], err == nil
}
