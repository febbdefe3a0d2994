package main_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/shepherdzk/shepherd/zktest"
)

type probeBody struct {
	Status  string `json:"status"` // /healthz and /livez: "ok" or "error"
	Leading bool   `json:"leading"`
	Paused  bool   `json:"paused"`
	ID      string `json:"id"`
	Leader  string `json:"leader"`
	Term    int64  `json:"term"`
}

// sidecar starts `elect -http 127.0.0.1:0` without CMD and returns its
// process and base URL (read from its stderr).
func sidecar(t *testing.T, id, path string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd, _, url := sidecarErr(t, id, path, extra...)
	return cmd, url
}

// sidecarErr is sidecar with its stderr; extra flags come first.
func sidecarErr(t *testing.T, id, path string, extra ...string) (*exec.Cmd, *syncWriter, string) {
	t.Helper()
	args := append(append([]string{}, extra...), "-session-timeout", "4s", "elect", "-http", "127.0.0.1:0", "-id", id, path)
	cmd, errb := start(t, nil, args...)
	re := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)`)
	var url string
	require.Eventually(t, func() bool {
		m := re.FindStringSubmatch(errb.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	}, 20*time.Second, 5*time.Millisecond, "serving; stderr: %s", errb)
	return cmd, errb, url
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func waitProbe(t *testing.T, url string, code int, cond func(probeBody) bool) probeBody {
	t.Helper()
	return waitAnyProbe(t, []string{url}, code, cond)
}

// waitAnyProbe polls the probes until one of them answers code with a body
// cond accepts (20 s at most), and returns that body; a failure names each
// probe's last answer.
func waitAnyProbe(t *testing.T, urls []string, code int, cond func(probeBody) bool) probeBody {
	t.Helper()
	var p probeBody
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		last := make([]string, len(urls))
		for i, url := range urls {
			got, body := get(t, url)
			var q probeBody
			if got == code && json.Unmarshal([]byte(body), &q) == nil && cond(q) {
				p = q
				return
			}
			last[i] = fmt.Sprintf("%d %s", got, body)
		}
		c.Errorf("%v: want %d; last answers %q", urls, code, last)
	}, 20*time.Second, 10*time.Millisecond)
	return p
}

// TestElectSidecar: two `elect -http` sidecars without CMD: the leader's
// /readyz answers 200, the follower's 503 naming the leader; /metrics
// serves; after the leader's SIGTERM the follower's /readyz flips to 200.
// The probes' codes on each side: TestElectProbes.
func TestElectSidecar(t *testing.T) {
	t.Parallel()
	began := time.Now()
	defer func() { t.Logf("wall time %v", time.Since(began).Round(time.Millisecond)) }()
	path := uniquePath(t)
	a, urlA := sidecar(t, "a", path)
	pa := waitProbe(t, urlA+"/readyz", 200, func(p probeBody) bool { return p.Leading })
	require.Equal(t, probeBody{Leading: true, ID: "a", Leader: "a", Term: pa.Term}, pa)
	require.NotZero(t, pa.Term)
	_, urlB := sidecar(t, "b", path)
	pb := waitProbe(t, urlB+"/readyz", 503, func(p probeBody) bool { return p.Leader == "a" })
	require.Equal(t, probeBody{Leading: false, ID: "b", Leader: "a", Term: pa.Term}, pb)
	code, body := get(t, urlA+"/metrics")
	require.Equal(t, 200, code)
	require.Regexp(t, `shepherd_leader\{path="[^"]+"\} 1`, body)
	require.Contains(t, body, `shepherd_session_state{state="Connected"} 1`)
	code, body = get(t, urlB+"/metrics")
	require.Equal(t, 200, code)
	require.NotRegexp(t, `shepherd_leader\{path="[^"]+"\} 1`, body)

	stopped := time.Now()
	require.NoError(t, a.Process.Signal(syscall.SIGTERM))
	require.NoError(t, a.Wait(), "a sidecar stopped by SIGTERM exits 0")
	pb = waitProbe(t, urlB+"/readyz", 200, func(p probeBody) bool { return p.Leading })
	require.Equal(t, "b", pb.Leader)
	require.Greater(t, pb.Term, pa.Term)
	t.Logf("b ready %v after a's SIGTERM", time.Since(stopped).Round(time.Millisecond))
}

// probes reads /healthz, /readyz and /livez once each: their codes, and
// /healthz's body (/livez must answer the same).
func probes(t *testing.T, url string) (health, ready, live int, hb probeBody) {
	t.Helper()
	health, hbody := get(t, url+"/healthz")
	ready, _ = get(t, url+"/readyz")
	live, lbody := get(t, url+"/livez")
	require.NoError(t, json.Unmarshal([]byte(hbody), &hb), "/healthz body %s", hbody)
	var lb probeBody
	require.NoError(t, json.Unmarshal([]byte(lbody), &lb), "/livez body %s", lbody)
	require.Equal(t, hb, lb, "/livez answers as /healthz")
	return health, ready, live, hb
}

// TestElectProbes: the Kubernetes convention. /healthz (and /livez, the
// same) means "this process is alive and working": 200 on the leader and on
// a follower alike, so a livenessProbe on it never restarts a follower.
// /readyz means "this process leads": 200 on the leader, 503 on a follower.
func TestElectProbes(t *testing.T) {
	t.Parallel()
	path := uniquePath(t)
	_, urlA := sidecar(t, "a", path)
	waitProbe(t, urlA+"/readyz", 200, func(p probeBody) bool { return p.Leading })
	_, urlB := sidecar(t, "b", path)
	waitProbe(t, urlB+"/readyz", 503, func(p probeBody) bool { return p.Leader == "a" })

	health, ready, live, hb := probes(t, urlA)
	require.Equal(t, [3]int{200, 200, 200}, [3]int{health, ready, live}, "the leader: /healthz, /readyz, /livez")
	require.Equal(t, probeBody{Status: "ok", Leading: true, ID: "a", Leader: "a", Term: hb.Term}, hb)

	health, ready, live, hb = probes(t, urlB)
	require.Equal(t, [3]int{200, 503, 200}, [3]int{health, ready, live}, "a follower: /healthz, /readyz, /livez")
	require.Equal(t, probeBody{Status: "ok", Leading: false, ID: "b", Leader: "a", Term: hb.Term}, hb)
}

// TestElectProbesPaused: a sidecar leader with -on-disconnect=pause whose
// connection is cut: paused, it answers 200 on /healthz and /livez (alive:
// a restart would only end the leadership it keeps) and 503 on /readyz
// (traffic moves away); all 200 again once the same session is back.
func TestElectProbesPaused(t *testing.T) {
	t.Parallel()
	s := zk.Servers()[0]
	proxy, err := zktest.NewProxy(s, s)
	require.NoError(t, err)
	t.Cleanup(func() { proxy.Close() })
	_, errb, url := sidecarErr(t, "p", uniquePath(t), "-zk", strings.Join(proxy.Addrs(), ","), "-on-disconnect=pause")
	waitProbe(t, url+"/readyz", 200, func(p probeBody) bool { return p.Leading })

	proxy.Refuse(true)
	proxy.Sever()
	require.Eventually(t, func() bool { return strings.Contains(errb.String(), "connection to ZooKeeper lost") },
		20*time.Second, time.Millisecond, "paused; stderr: %s", errb)
	pb := waitProbe(t, url+"/readyz", 503, func(p probeBody) bool { return p.Paused })
	require.True(t, pb.Leading)
	health, ready, live, hb := probes(t, url)
	require.Equal(t, [3]int{200, 503, 200}, [3]int{health, ready, live}, "paused: /healthz, /readyz, /livez; stderr: %s", errb)
	require.Equal(t, probeBody{Status: "ok", Leading: true, Paused: true, ID: "p", Leader: "p", Term: hb.Term}, hb)

	proxy.Refuse(false)
	waitProbe(t, url+"/readyz", 200, func(p probeBody) bool { return p.Leading && !p.Paused })
	health, ready, live, _ = probes(t, url)
	require.Equal(t, [3]int{200, 200, 200}, [3]int{health, ready, live}, "resumed; stderr: %s", errb)
}

// The parts of Kubernetes objects that TestKubernetesExample checks.
type (
	k8sProbe struct {
		HTTPGet struct {
			Path string `yaml:"path"`
			Port any    `yaml:"port"` // a name or a number
		} `yaml:"httpGet"`
	}
	k8sContainer struct {
		Name    string   `yaml:"name"`
		Command []string `yaml:"command"`
		Args    []string `yaml:"args"`
		Ports   []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		Readiness *k8sProbe `yaml:"readinessProbe"`
		Liveness  *k8sProbe `yaml:"livenessProbe"`
	}
	k8sObject struct {
		Kind     string `yaml:"kind"`
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		Spec struct {
			Replicas        int `yaml:"replicas"`
			MinReadySeconds int `yaml:"minReadySeconds"`
			MinAvailable    any `yaml:"minAvailable"`
			Strategy        struct {
				Type          string `yaml:"type"`
				RollingUpdate struct {
					MaxSurge       any `yaml:"maxSurge"`
					MaxUnavailable any `yaml:"maxUnavailable"`
				} `yaml:"rollingUpdate"`
			} `yaml:"strategy"`
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Template struct {
				Metadata struct {
					Labels      map[string]string `yaml:"labels"`
					Annotations map[string]string `yaml:"annotations"`
				} `yaml:"metadata"`
				Spec struct {
					TerminationGracePeriodSeconds int            `yaml:"terminationGracePeriodSeconds"`
					Containers                    []k8sContainer `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
)

// shepherdArgs is a container's shepherd command line, or nil.
func (c k8sContainer) shepherdArgs() []string {
	if len(c.Command) > 0 && strings.HasSuffix(c.Command[0], "/shepherd") {
		return append(c.Command[1:], c.Args...)
	}
	if len(c.Args) > 0 && c.Args[0] == "elect" {
		return c.Args
	}
	return nil
}

// TestKubernetesExample parses examples/kubernetes/deployment.yaml and
// checks what makes it work: the strategies (a rollout that cannot finish
// is the failure to catch), the PodDisruptionBudget, and that each shepherd
// container's probes ask the right paths on the port its -http serves, with
// flags `shepherd elect` has.
func TestKubernetesExample(t *testing.T) {
	t.Parallel()
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
	require.Len(t, objs, 4, "billing (Deployment, Service), scheduler (Deployment, PodDisruptionBudget)")
	help := shepherd(t, nil, "elect", "-h")
	require.Equal(t, 0, help.code, help.stderr)
	usage := help.stdout + help.stderr

	// checkShepherd returns the shepherd container's args after `elect`
	// (flags, PATH, then -- CMD...) and checks its probes against -http.
	checkShepherd := func(d k8sObject, ready, live string) []string {
		t.Helper()
		var c *k8sContainer
		for i := range d.Spec.Template.Spec.Containers {
			if d.Spec.Template.Spec.Containers[i].shepherdArgs() != nil {
				c = &d.Spec.Template.Spec.Containers[i]
			}
		}
		require.NotNil(t, c, "%s: a shepherd container", d.Metadata.Name)
		args := c.shepherdArgs()
		require.Equal(t, "elect", args[0])
		httpPort, grace, wait, priority := "", 10*time.Second, time.Duration(0), false
		for _, a := range args[1:] {
			if a == "--" {
				break
			}
			if !strings.HasPrefix(a, "-") {
				continue
			}
			name, val, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			require.Regexp(t, `(?m)^\s+-`+regexp.QuoteMeta(name)+`\b`, usage, "%s: elect has no flag -%s", d.Metadata.Name, name)
			switch name {
			case "http":
				_, httpPort, err = net.SplitHostPort(val)
				require.NoError(t, err)
			case "grace":
				grace, err = time.ParseDuration(val)
				require.NoError(t, err)
			case "handover-wait":
				wait, err = time.ParseDuration(val)
				require.NoError(t, err)
			case "priority":
				priority = true
			}
		}
		require.NotEmpty(t, httpPort, "%s: -http", d.Metadata.Name)
		require.Greater(t, time.Duration(d.Spec.Template.Spec.TerminationGracePeriodSeconds)*time.Second, grace+wait,
			"%s: terminationGracePeriodSeconds above -grace and -handover-wait", d.Metadata.Name)
		require.True(t, priority, "%s: -priority (a rollout moves leadership to the new version)", d.Metadata.Name)
		portOf := func(p *k8sProbe, what string) string {
			require.NotNil(t, p, "%s: %s", d.Metadata.Name, what)
			if name, ok := p.HTTPGet.Port.(string); ok {
				for _, cp := range c.Ports {
					if cp.Name == name {
						return strconv.Itoa(cp.ContainerPort)
					}
				}
				t.Fatalf("%s: %s: no port named %q", d.Metadata.Name, what, name)
			}
			return fmt.Sprint(p.HTTPGet.Port)
		}
		require.Equal(t, ready, c.Readiness.HTTPGet.Path, "%s: readiness", d.Metadata.Name)
		require.Equal(t, httpPort, portOf(c.Readiness, "readiness"), "%s: readiness on -http's port", d.Metadata.Name)
		require.Equal(t, live, c.Liveness.HTTPGet.Path, "%s: liveness", d.Metadata.Name)
		require.Equal(t, httpPort, portOf(c.Liveness, "liveness"), "%s: liveness on -http's port", d.Metadata.Name)
		if p, ok := d.Spec.Template.Metadata.Annotations["prometheus.io/port"]; ok {
			require.Equal(t, httpPort, p, "%s: /metrics is on -http's port", d.Metadata.Name)
		}
		require.Equal(t, d.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels)
		return args[1:]
	}

	// The traffic sidecar: Ready means leader, so only maxUnavailable 100%
	// lets a rollout replace the leader; no PodDisruptionBudget.
	billing := objs["Deployment/billing"]
	require.Equal(t, 2, billing.Spec.Replicas)
	require.Equal(t, "RollingUpdate", billing.Spec.Strategy.Type)
	require.Equal(t, "100%", billing.Spec.Strategy.RollingUpdate.MaxUnavailable)
	require.Equal(t, 1, billing.Spec.Strategy.RollingUpdate.MaxSurge)
	args := checkShepherd(billing, "/readyz", "/healthz")
	require.NotContains(t, args, "--", "billing: a sidecar, no CMD")
	require.Len(t, billing.Spec.Template.Spec.Containers, 2)
	_, ok := objs["Service/billing"]
	require.True(t, ok)

	// The CMD form: both replicas Ready, an ordinary rolling update and a
	// PodDisruptionBudget.
	sched := objs["Deployment/scheduler"]
	require.Equal(t, 2, sched.Spec.Replicas)
	require.Equal(t, "RollingUpdate", sched.Spec.Strategy.Type)
	require.Equal(t, 0, sched.Spec.Strategy.RollingUpdate.MaxUnavailable)
	require.Equal(t, 1, sched.Spec.Strategy.RollingUpdate.MaxSurge)
	require.Positive(t, sched.Spec.MinReadySeconds)
	args = checkShepherd(sched, "/healthz", "/healthz")
	require.Contains(t, args, "-on-disconnect=pause")
	dash := slices.Index(args, "--")
	require.Positive(t, dash, "scheduler: PATH -- CMD")
	require.Less(t, dash, len(args)-1, "scheduler: a CMD after --")
	pdb := objs["PodDisruptionBudget/scheduler"]
	require.Equal(t, 1, pdb.Spec.MinAvailable)
	require.Equal(t, sched.Spec.Template.Metadata.Labels, pdb.Spec.Selector.MatchLabels)
}
