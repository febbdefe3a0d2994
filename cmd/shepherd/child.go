package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// How CMD's processes are kept (see the usage text):
//
// shepherd starts itself again as a tiny init (`shepherd __init ... -- CMD`),
// which starts CMD, reaps every process that ends up as its child, and on
// request signals them all and exits only when none is left. shepherd talks
// to it over a pipe: "stop SIG GRACE" lines; end of file means shepherd died.
// With -on-disconnect=pause, "freeze SEQ" stops (SIGSTOP) every process of
// CMD's and "thaw" continues them (SIGCONT); the init answers a freeze on a
// second pipe ("frozen SEQ N", N processes still running) once it has seen
// them all stopped.
//
//   - pidns mode: the init is PID 1 of a new PID namespace (CLONE_NEWPID, with
//     CLONE_NEWUSER when not root) and dies with shepherd (Pdeathsig SIGKILL):
//     the kernel then kills every process of the namespace. kill(-1, sig)
//     from PID 1 signals exactly the namespace's other processes.
//   - subreaper mode (namespaces refused, or -pidns=false): the init is the
//     child subreaper of CMD's processes, so that every orphan among them
//     becomes its child; it finds them all as its descendants in /proc, and
//     when the pipe reaches end of file (shepherd died, even by SIGKILL) it
//     kills them. Only a SIGKILL of the init itself escapes it.

// treeMode is how the init keeps CMD's processes.
type treeMode string

const (
	modePIDNS     treeMode = "pidns"
	modeSubreaper treeMode = "subreaper"
)

// backstop is how long shepherd waits, beyond the grace, for the init to
// report that every process is gone before it SIGKILLs the init itself.
const backstop = 5 * time.Second

// launcher starts inits. Linux sends the Pdeathsig when the *thread* that
// forked the child exits, and the Go runtime ends a thread when a goroutine
// locked to it exits: so every init is forked from one goroutine locked to
// its thread for the life of shepherd (never unlocked, never returning).
type launcher struct {
	reqs     chan func()
	fallback sync.Once
}

func newLauncher() *launcher {
	l := &launcher{reqs: make(chan func())}
	go func() {
		runtime.LockOSThread()
		for f := range l.reqs {
			f()
		}
	}()
	return l
}

// child is CMD's process tree, under its init.
type child struct {
	mode    treeMode
	cmd     *exec.Cmd
	ctl     *os.File // the write end of the init's control pipe
	answers chan string
	done    chan struct{}
	err     error

	mu       sync.Mutex // serialises writes to ctl; guards what follows
	frozen   bool
	stopping bool // a stop was requested: CMD is never frozen again
	seq      int  // of the last freeze
}

// start starts CMD under an init. pidns asks for a PID namespace; where the
// kernel refuses it, the subreaper mode is used and stderr says so once.
func (l *launcher) start(argv, env []string, pidns bool, grace time.Duration, stderr io.Writer) (*child, error) {
	if _, err := exec.LookPath(argv[0]); err != nil {
		code := exitNotFound
		if errors.Is(err, os.ErrPermission) {
			code = exitCannotExec
		}
		return nil, exitCode{code, fmt.Errorf("cannot run %q: %w", argv[0], err)}
	}
	if pidns {
		c, err := l.startMode(modePIDNS, argv, env, grace, stderr)
		if err == nil || !namespaceRefused(err) {
			return c, err
		}
		l.fallback.Do(func() {
			fmt.Fprintf(stderr, "shepherd: no PID namespace for CMD (%v): %s\n", err, subreaperNotice)
		})
	} else {
		l.fallback.Do(func() { fmt.Fprintf(stderr, "shepherd: -pidns=false: %s\n", subreaperNotice) })
	}
	return l.startMode(modeSubreaper, argv, env, grace, stderr)
}

const subreaperNotice = "CMD's processes are kept by a subreaper instead; they are stopped " +
	"on a hold loss or a signal, and killed if shepherd dies, unless its helper process is " +
	"SIGKILLed too"

// namespaceRefused reports whether err is the kernel refusing the clone
// flags (no privilege, user namespaces disabled or exhausted, seccomp).
func namespaceRefused(err error) bool {
	for _, e := range []error{syscall.EPERM, syscall.EINVAL, syscall.ENOSPC, syscall.EUSERS, syscall.EACCES, syscall.ENOSYS} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (l *launcher) startMode(mode treeMode, argv, env []string, grace time.Duration, stderr io.Writer) (*child, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	ar, aw, err := os.Pipe() // the init's answers
	if err != nil {
		w.Close()
		return nil, err
	}
	defer aw.Close()
	args := append([]string{initCommand, "-mode", string(mode), "-grace", grace.String(), "--"}, argv...)
	// /proc/self/exe is this very binary, even if its file was replaced.
	cmd := exec.Command("/proc/self/exe", args...)
	cmd.Args[0] = "shepherd"
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, stderr
	cmd.ExtraFiles = []*os.File{r, aw}
	attr := &syscall.SysProcAttr{}
	if mode == modePIDNS {
		attr.Cloneflags = syscall.CLONE_NEWPID
		attr.Pdeathsig = syscall.SIGKILL
		if os.Geteuid() != 0 {
			// Map only our own ids: CMD keeps its identity.
			attr.Cloneflags |= syscall.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
		}
	}
	// In subreaper mode the init must outlive shepherd long enough to kill
	// CMD's processes: no Pdeathsig, the pipe's end of file tells it.
	cmd.SysProcAttr = attr
	errc := make(chan error, 1)
	l.reqs <- func() { errc <- cmd.Start() }
	if err := <-errc; err != nil {
		w.Close()
		ar.Close()
		return nil, fmt.Errorf("starting CMD's init (%s): %w", mode, err)
	}
	c := &child{mode: mode, cmd: cmd, ctl: w, answers: make(chan string, 4), done: make(chan struct{})}
	go func() {
		// Until the init is gone (end of file).
		defer ar.Close()
		sc := bufio.NewScanner(ar)
		for sc.Scan() {
			select {
			case c.answers <- sc.Text():
			default: // an answer nobody waits for any more
			}
		}
	}()
	go func() {
		c.err = cmd.Wait()
		c.mu.Lock()
		c.ctl.Close()
		c.mu.Unlock()
		close(c.done)
	}()
	return c, nil
}

// requestStop asks the init to send sig to every process of CMD's and to
// SIGKILL them after grace (or sooner, if an earlier request said so). It
// does not wait. A frozen CMD is thawed after sig (unless sig is SIGKILL),
// so that its processes can act on it; a stopping CMD is never frozen again.
func (c *child) requestStop(sig syscall.Signal, grace time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requestStopLocked(sig, grace)
}

func (c *child) requestStopLocked(sig syscall.Signal, grace time.Duration) {
	select {
	case <-c.done:
		return
	default:
	}
	c.stopping = true
	_, _ = fmt.Fprintf(c.ctl, "stop %d %d\n", int(sig), grace.Nanoseconds())
	if c.frozen && sig != syscall.SIGKILL {
		_, _ = fmt.Fprintln(c.ctl, "thaw")
		c.frozen = false
	}
}

// requestLostStop is requestStop after a hold loss: SIGTERM, SIGKILL after
// grace; but a frozen CMD is SIGKILLed at once (after a loss none of its
// processes may run again, not even to handle SIGTERM). It reports whether
// CMD was frozen, and the grace to await.
func (c *child) requestLostStop(grace time.Duration) (frozen bool, g time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		c.requestStopLocked(syscall.SIGKILL, 0)
		return true, 0
	}
	c.requestStopLocked(syscall.SIGTERM, grace)
	return false, grace
}

// freeze stops (SIGSTOP) every process of CMD's and returns once the init
// has seen them all stopped. It returns how many still run (a process in
// uninterruptible sleep stops only when it wakes), and false if it did not
// freeze: CMD is stopping or has ended, or the init did not answer. One
// goroutine calls it (ride).
func (c *child) freeze() (running int, ok bool) {
	c.mu.Lock()
	select {
	case <-c.done:
		c.mu.Unlock()
		return 0, false
	default:
	}
	if c.stopping {
		c.mu.Unlock()
		return 0, false
	}
	c.seq++
	seq := strconv.Itoa(c.seq)
	_, _ = fmt.Fprintf(c.ctl, "freeze %s\n", seq)
	c.frozen = true
	c.mu.Unlock()
	t := time.NewTimer(freezeLimit + backstop)
	defer t.Stop()
	for {
		select {
		case a := <-c.answers:
			f := strings.Fields(a)
			if len(f) == 3 && f[0] == "frozen" && f[1] == seq {
				n, _ := strconv.Atoi(f[2])
				return n, true
			}
		case <-c.done:
			return 0, false
		case <-t.C:
			return 0, false
		}
	}
}

// thaw continues (SIGCONT) CMD's frozen processes. It reports whether they
// were frozen (a stop thaws them itself).
func (c *child) thaw() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.frozen {
		return false
	}
	c.frozen = false
	select {
	case <-c.done:
		return false
	default:
	}
	_, _ = fmt.Fprintln(c.ctl, "thaw")
	return true
}

// stop stops CMD's processes (requestStop) and waits until none is left. If
// the init does not report that within grace plus the backstop, it is
// SIGKILLed (in pidns mode that kills every process of the namespace).
func (c *child) stop(sig syscall.Signal, grace time.Duration) {
	c.requestStop(sig, grace)
	c.await(grace)
}

// await waits until the init reports every process gone, after a stop
// request with grace; past grace plus the backstop, it SIGKILLs the init.
func (c *child) await(grace time.Duration) {
	t := time.NewTimer(grace + backstop)
	defer t.Stop()
	select {
	case <-c.done:
		return
	case <-t.C:
	}
	_ = c.cmd.Process.Kill()
	<-c.done
}

// status is CMD's exit status, as the init reports it (128+N when CMD was
// killed by signal N).
func (c *child) status() int {
	var ee *exec.ExitError
	if errors.As(c.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if c.err != nil {
		return exitError
	}
	return 0
}
