package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Subprocess is a peer in another language, run as a child process that
// speaks JSON lines: one command per line on its stdin, exactly one answer per
// command on its stdout.
//
//	start                           → {"event":"hello","peer":"curator","version":"5.4.0"}
//	{"cmd":"prepare", <Spec fields>} → {"event":"ready"}
//	{"cmd":"start"}                 → {"event":"started"}  (W8 only: the measured part begins)
//	{"cmd":"go"}                    → {"event":"result","ops":N,"elapsed_s":S,"metrics":{...}}
//	{"cmd":"close"}                 → {"event":"closed"}   (sent after every prepare)
//	{"cmd":"quit"}                  → the process exits
//
// W8 (a rolling restart) runs prepare, start, then the runner restarts the
// servers one by one, then go: the peer waits until its run has settled and
// reports what happened since start. Any command may be answered
// {"event":"error","error":"..."}. Lines on stdout that are not JSON objects
// are ignored; stderr goes to a log file. The
// process is started at the first Prepare and again after it died; it lives
// across runs, so a JIT-compiled peer stays warm, but each run opens and
// closes its own sessions.
type Subprocess struct {
	name     string
	argv     []string
	dir      string
	logPath  string
	supports map[string]bool

	mu      sync.Mutex // one command at a time
	proc    *process
	version string
}

type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte   // JSON lines from stdout
	exited chan struct{} // closed when the process has been waited for
	log    *os.File
}

// NewSubprocess returns a peer that runs argv (in dir) on demand, logging its
// stderr to logPath.
func NewSubprocess(name string, argv []string, dir, logPath string, workloads ...string) *Subprocess {
	s := &Subprocess{name: name, argv: argv, dir: dir, logPath: logPath, supports: map[string]bool{}}
	for _, w := range workloads {
		s.supports[w] = true
	}
	return s
}

// Name implements Peer.
func (s *Subprocess) Name() string { return s.name }

// Supports implements Peer.
func (s *Subprocess) Supports(w string) bool { return s.supports[w] }

// Version is the library version the subprocess reported, once started.
func (s *Subprocess) Version() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// LogPath is the file holding the subprocess's stderr.
func (s *Subprocess) LogPath() string { return s.logPath }

type message struct {
	Event    string             `json:"event"`
	Error    string             `json:"error"`
	Peer     string             `json:"peer"`
	Version  string             `json:"version"`
	Ops      int                `json:"ops"`
	ElapsedS float64            `json:"elapsed_s"`
	Metrics  map[string]float64 `json:"metrics"`
}

// Start starts the process if it is not running and waits for its hello.
func (s *Subprocess) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startLocked(ctx)
}

func (s *Subprocess) startLocked(ctx context.Context) error {
	if s.proc != nil {
		select {
		case <-s.proc.exited:
			s.proc = nil
		default:
			return nil
		}
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("bench: %s: %w", s.name, err)
	}
	fmt.Fprintf(logf, "==== %s: starting %q at %s ====\n", s.name, s.argv, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Dir = s.dir
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logf.Close()
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("bench: starting %s: %w", s.name, err)
	}
	p := &process{cmd: cmd, stdin: stdin, lines: make(chan []byte, 16), exited: make(chan struct{}), log: logf}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 || line[0] != '{' {
				fmt.Fprintf(logf, "stdout: %s\n", line)
				continue
			}
			select {
			case p.lines <- append([]byte(nil), line...):
			default: // more answers than commands: the protocol is broken; keep draining
				fmt.Fprintf(logf, "stdout (unexpected, dropped): %s\n", line)
			}
		}
	}()
	go func() {
		<-readerDone
		_ = cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	s.proc = p
	m, err := s.receive(ctx, 2*time.Minute)
	if err == nil && m.Event != "hello" {
		err = fmt.Errorf("bench: %s said %q before hello", s.name, m.Event)
	}
	if err != nil {
		s.killLocked()
		return err
	}
	s.version = m.Version
	return nil
}

// receive waits for the next JSON line. Must hold s.mu.
func (s *Subprocess) receive(ctx context.Context, timeout time.Duration) (message, error) {
	p := s.proc
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line := <-p.lines:
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			return m, fmt.Errorf("bench: %s: bad line %q: %w", s.name, line, err)
		}
		if m.Event == "error" {
			return m, fmt.Errorf("bench: %s: %s", s.name, m.Error)
		}
		return m, nil
	case <-p.exited:
		// The reader has drained stdout before exited closes: one last line
		// may be waiting.
		select {
		case line := <-p.lines:
			var m message
			if json.Unmarshal(line, &m) == nil && m.Event != "error" {
				return m, nil
			}
			return m, fmt.Errorf("bench: %s exited: %s (log: %s)", s.name, line, s.logPath)
		default:
		}
		return message{}, fmt.Errorf("bench: %s exited (%v); its log: %s", s.name, p.cmd.ProcessState, s.logPath)
	case <-t.C:
		return message{}, fmt.Errorf("bench: %s: no answer within %v (log: %s)", s.name, timeout, s.logPath)
	case <-ctx.Done():
		return message{}, ctx.Err()
	}
}

// call sends one command and waits for its answer; a process that does not
// answer in time is killed (it is restarted at the next Prepare).
func (s *Subprocess) call(ctx context.Context, cmd any, timeout time.Duration) (message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return message{}, fmt.Errorf("bench: %s is not running", s.name)
	}
	b, err := json.Marshal(cmd)
	if err != nil {
		return message{}, err
	}
	if _, err := s.proc.stdin.Write(append(b, '\n')); err != nil {
		s.killLocked()
		return message{}, fmt.Errorf("bench: %s: %w", s.name, err)
	}
	m, err := s.receive(ctx, timeout)
	if err != nil && m.Event != "error" {
		// No answer (or a garbled one): the conversation is out of step.
		s.killLocked()
	}
	return m, err
}

func (s *Subprocess) killLocked() {
	p := s.proc
	if p == nil {
		return
	}
	s.proc = nil
	_ = p.stdin.Close()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
}

type prepareCmd struct {
	Cmd string `json:"cmd"`
	Spec
}

type simpleCmd struct {
	Cmd string `json:"cmd"`
}

// Prepare implements Peer.
func (s *Subprocess) Prepare(ctx context.Context, spec Spec) (Run, error) {
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	var faults *faultService
	if spec.Workload == W6 {
		var err error
		if faults, err = startFaults(&spec, spec.Sessions); err != nil {
			return nil, err
		}
	}
	_, err := s.call(ctx, prepareCmd{Cmd: "prepare", Spec: spec}, 60*time.Second+2*spec.Grace())
	if err != nil {
		// The peer answers every prepare, failed or not, with a close.
		_, _ = s.call(ctx, simpleCmd{"close"}, spec.Grace())
		if faults != nil {
			faults.close()
		}
		return nil, err
	}
	return &subprocessRun{s: s, spec: spec, faults: faults}, nil
}

type subprocessRun struct {
	s      *Subprocess
	spec   Spec
	faults *faultService // W6 only
}

func (r *subprocessRun) Go(ctx context.Context) (Result, error) {
	m, err := r.s.call(ctx, simpleCmd{"go"}, r.spec.Duration()+2*r.spec.Grace())
	if err != nil {
		return Result{}, err
	}
	if m.Event != "result" {
		return Result{}, fmt.Errorf("bench: %s answered go with %q", r.s.name, m.Event)
	}
	return Result{Ops: m.Ops, ElapsedS: m.ElapsedS, Metrics: m.Metrics}, nil
}

// Start implements Starter (W8).
func (r *subprocessRun) Start(ctx context.Context) error {
	m, err := r.s.call(ctx, simpleCmd{"start"}, r.spec.Grace())
	if err != nil {
		return err
	}
	if m.Event != "started" {
		return fmt.Errorf("bench: %s answered start with %q", r.s.name, m.Event)
	}
	return nil
}

func (r *subprocessRun) Close(ctx context.Context) error {
	_, err := r.s.call(ctx, simpleCmd{"close"}, r.spec.Grace())
	if r.faults != nil {
		r.faults.close()
	}
	return err
}

// Close implements Peer: asks the process to quit, and kills it if it does not.
func (s *Subprocess) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	if p == nil {
		return nil
	}
	b, _ := json.Marshal(simpleCmd{"quit"})
	_, _ = p.stdin.Write(append(b, '\n'))
	_ = p.stdin.Close()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-p.exited:
		s.proc = nil
		return nil
	case <-t.C:
	}
	s.killLocked()
	return errors.New("bench: " + s.name + " did not quit; killed")
}
