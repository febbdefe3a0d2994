package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/shepherdzk/shepherd/election"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/session"
)

// pod is one simulated Pod of examples/kubernetes: shepherd run with the
// Deployment's arguments.
type pod struct {
	name string
	cmd  *exec.Cmd
	errb *syncWriter
	url  string
}

// podArgs turns a Deployment's shepherd container's command line into one
// for this machine: -id its name, -http on a free loopback port, the
// version (priority and attribute) bumped by bump, CMD a sleep.
func podArgs(t *testing.T, c k8sContainer, name string, bump int) []string {
	t.Helper()
	var out []string
	cmd := false
	for _, a := range c.shepherdArgs() {
		switch {
		case cmd:
			continue
		case a == "--":
			out, cmd = append(out, "--", "sleep", "600"), true
		case strings.HasPrefix(a, "-id="):
			out = append(out, "-id="+name)
		case strings.HasPrefix(a, "-http="):
			out = append(out, "-http=127.0.0.1:0")
		case strings.HasPrefix(a, "-priority="):
			p, err := strconv.Atoi(strings.TrimPrefix(a, "-priority="))
			require.NoError(t, err)
			out = append(out, fmt.Sprintf("-priority=%d", p+bump))
		case strings.HasPrefix(a, "-attr=version="):
			out = append(out, fmt.Sprintf("%s+%d", a, bump))
		case strings.HasPrefix(a, "-session-timeout="):
			out = append(out, "-session-timeout=4s")
		default:
			out = append(out, a)
		}
	}
	return out
}

// startPod starts a Pod of container c, named name, version bumped by
// bump, with SHEPHERD_ZK zkEnv; it returns once the Pod serves.
func startPod(t *testing.T, c k8sContainer, zkEnv, name string, bump int) *pod {
	t.Helper()
	p := &pod{name: name, errb: &syncWriter{w: new(bytes.Buffer)}}
	p.cmd = exec.Command(bin, podArgs(t, c, name, bump)...)
	p.cmd.Env = append(os.Environ(), "SHEPHERD_ZK="+zkEnv)
	p.cmd.Stderr = p.errb
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	re := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)`)
	require.Eventually(t, func() bool {
		m := re.FindStringSubmatch(p.errb.String())
		if m != nil {
			p.url = m[1]
		}
		return m != nil
	}, 20*time.Second, 5*time.Millisecond, "%s serving; stderr: %s", name, p.errb)
	return p
}

// term sends SIGTERM (as the kubelet does when a Pod is deleted).
func (p *pod) term(t *testing.T) {
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
}

// exited waits for the Pod's end (exit 0, or CMD's status: killed by the
// SIGTERM, 143).
func (p *pod) exited(t *testing.T) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 128+int(syscall.SIGTERM)) {
			t.Fatalf("%s: %v: %s", p.name, err, p.errb)
		}
	case <-time.After(40 * time.Second):
		t.Fatalf("%s did not exit after SIGTERM: %s", p.name, p.errb)
	}
}

// leaders records who leads the election at path, at each change
// (election.Observe).
type leaders struct {
	mu   sync.Mutex
	seen []string
}

func watchLeaders(t *testing.T, s *session.Session, path string) *leaders {
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := election.Observe(ctx, s, path)
	require.NoError(t, err)
	l := &leaders{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ld := range ch {
			l.mu.Lock()
			if len(l.seen) == 0 || l.seen[len(l.seen)-1] != ld.ID {
				l.seen = append(l.seen, ld.ID)
			}
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

func (l *leaders) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// TestKubernetesRollout: examples/kubernetes's two Deployments, as their
// rolling updates run (shepherd with the manifest's arguments, the version
// bumped in the new Pods): leadership moves exactly once, to a new-version
// Pod. billing (maxSurge 1, maxUnavailable 100%): a new Pod starts and
// every old Pod gets SIGTERM at once; the old leader keeps leading, Ready,
// until a new Pod is in line. scheduler (maxSurge 1, maxUnavailable 0): each
// new Pod is in line before an old one stops, the leader first.
func TestKubernetesRollout(t *testing.T) {
	t.Parallel()
	objs := manifest(t)
	for _, name := range []string{"billing", "scheduler"} {
		t.Run(name, func(t *testing.T) {
			d := objs["Deployment/"+name]
			var c k8sContainer
			for _, k := range d.Spec.Template.Spec.Containers {
				if k.shepherdArgs() != nil {
					c = k
				}
			}
			path := "" // the manifest's flags are all -name=value
			for _, a := range c.shepherdArgs() {
				if a == "--" {
					break
				}
				if strings.HasPrefix(a, "/") {
					path = a
				}
			}
			require.NotEmpty(t, path)
			root := "/" + strings.ReplaceAll(uniquePath(t), "/", "-")[1:]
			zkEnv := zk.ConnectString() + root
			obs := testutil.Open(t, zk.Servers(), session.WithNamespace(root))
			led := watchLeaders(t, obs, path)
			old := []*pod{startPod(t, c, zkEnv, name+"-old-a", 0)}
			waitProbe(t, old[0].url+"/readyz", 200, func(p probeBody) bool { return p.Leading })
			old = append(old, startPod(t, c, zkEnv, name+"-old-b", 0))
			waitProbe(t, old[1].url+"/readyz", 503, func(p probeBody) bool { return p.Leader == name+"-old-a" })
			if d.Spec.Strategy.RollingUpdate.MaxUnavailable == "100%" {
				// Every old Pod is told to stop as the new ones are
				// created, and they start slower than the follower stops
				// (an image to pull): the old leader leads on, Ready,
				// until a new Pod is in line.
				for _, o := range old {
					o.term(t)
				}
				old[1].exited(t)
				code, body := get(t, old[0].url+"/readyz")
				require.Equal(t, 200, code, "the old leader let go with no one to take over: %s", body)
				n1 := startPod(t, c, zkEnv, name+"-new-a", 1)
				n2 := startPod(t, c, zkEnv, name+"-new-b", 1)
				old[0].exited(t)
				// The new Pod first in line leads: either, as their
				// processes were scheduled.
				waitAnyProbe(t, []string{n1.url + "/readyz", n2.url + "/readyz"}, 200,
					func(p probeBody) bool { return strings.HasPrefix(p.Leader, name+"-new-") })
			} else {
				for i, o := range old {
					n := startPod(t, c, zkEnv, fmt.Sprintf("%s-new-%c", name, 'a'+i), 1)
					waitProbe(t, n.url+"/healthz", 200, func(p probeBody) bool { return p.Leader != "" }) // in line
					o.term(t)
					o.exited(t)
				}
			}
			require.Eventually(t, func() bool { l := led.list(); return len(l) >= 3 }, 20*time.Second, 5*time.Millisecond)
			l := led.list()
			// The first report is "no leader" (Observe's start); then one
			// change, with no leaderless time between.
			require.Len(t, l, 3, "leadership moved more than once (or was left): %v", l)
			require.Equal(t, []string{"", name + "-old-a"}, l[:2])
			require.True(t, strings.HasPrefix(l[2], name+"-new-"), "to an old Pod: %v", l)
			t.Logf("%s: leaders %v", name, l)
		})
	}
}

// manifest parses examples/kubernetes/deployment.yaml by kind/name.
func manifest(t *testing.T) map[string]k8sObject {
	t.Helper()
	f, err := os.Open("../../examples/kubernetes/deployment.yaml")
	require.NoError(t, err)
	defer f.Close()
	objs := map[string]k8sObject{}
	dec := yaml.NewDecoder(f)
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		objs[o.Kind+"/"+o.Metadata.Name] = o
	}
	return objs
}
