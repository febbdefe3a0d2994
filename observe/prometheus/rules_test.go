package prometheus_test

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/shepherdzk/shepherd/observe"
	promobs "github.com/shepherdzk/shepherd/observe/prometheus"
	"github.com/shepherdzk/shepherd/session"
)

// The files shipped beside the adapter whose expressions name its metrics.
const (
	alertsFile     = "alerts.yaml"
	alertTestsFile = "alerts_test.yaml"
	dashboardFile  = "dashboard.json"
)

// describer records the names of the metrics registered through it.
type describer struct {
	prometheus.Registerer
	names map[string]bool
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (d *describer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 10)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		if m := fqName.FindStringSubmatch(desc.String()); m != nil {
			d.names[m[1]] = true
		}
	}
	return d.Registerer.Register(c)
}

func (d *describer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := d.Register(c); err != nil {
			panic(err)
		}
	}
}

// exportedNames returns the names of the series the adapter exports: it
// feeds a new Observer one session event and one recipe event of each kind,
// so that every vector has a series, and gathers them. Histograms add their
// _bucket, _sum and _count series.
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	d := &describer{Registerer: reg, names: map[string]bool{}}
	obs, err := promobs.New(d)
	require.NoError(t, err)
	obs.SessionEvent(session.Event{State: session.Connected, Previous: session.Suspended, InPrevious: time.Second})
	for k := observe.RecipeEventKind(1); k.String() != "unknown"; k++ {
		obs.RecipeEvent(observe.RecipeEvent{Kind: k, Recipe: "mutex", Path: "/p", Term: 1,
			Wait: time.Second, Held: time.Second, Paused: time.Second, Took: time.Second})
	}
	mfs, err := reg.Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	gathered := map[string]bool{}
	for _, mf := range mfs {
		gathered[mf.GetName()] = true
		names[mf.GetName()] = true
		if mf.GetType().String() == "HISTOGRAM" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[mf.GetName()+s] = true
			}
		}
	}
	// Every registered metric has a series: no vector was left out.
	require.Equal(t, d.names, gathered, "registered metrics without a series after one event of each kind")
	return names
}

// metricName matches a shepherd metric name in an expression.
var metricName = regexp.MustCompile(`\bshepherd_[a-zA-Z0-9_:]*`)

// unknownMetrics returns the shepherd_ names used in text that the adapter
// does not export, sorted.
func unknownMetrics(text string, exported map[string]bool) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range metricName.FindAllString(text, -1) {
		if !exported[n] && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return string(b)
}

// TestRulesUseExportedMetrics: every metric named in the alert rules, their
// tests and the dashboard (expressions, and the text around them) is one the
// adapter exports; each file names some.
func TestRulesUseExportedMetrics(t *testing.T) {
	exported := exportedNames(t)
	for _, f := range []string{alertsFile, alertTestsFile, dashboardFile} {
		text := readFile(t, f)
		require.NotEmpty(t, metricName.FindAllString(text, -1), "%s names no shepherd metric", f)
		if bad := unknownMetrics(text, exported); len(bad) > 0 {
			t.Errorf("%s names metrics the adapter does not export: %v", f, bad)
		}
	}
}

// TestMetricCheckCatchesMisspelling: the check above fails on a misspelled
// metric in either file.
func TestMetricCheckCatchesMisspelling(t *testing.T) {
	exported := exportedNames(t)
	for f, swap := range map[string][2]string{
		alertsFile:    {"shepherd_hold_lost_total", "shepherd_holds_lost_total"},
		dashboardFile: {"shepherd_acquire_wait_seconds_bucket", "shepherd_acquire_wait_second_bucket"},
	} {
		text := readFile(t, f)
		require.Contains(t, text, swap[0])
		bad := strings.Replace(text, swap[0], swap[1], 1)
		require.Equal(t, []string{swap[1]}, unknownMetrics(bad, exported), f)
	}
	// A histogram suffix on a gauge is no metric either.
	require.Equal(t, []string{"shepherd_holds_bucket"}, unknownMetrics("sum(shepherd_holds_bucket)", exported))
}

// rule is one alerting rule of alerts.yaml.
type rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// TestAlertRules: alerts.yaml's rules are alerts with a severity, a summary
// and a description, and alerts_test.yaml tests each one firing and not
// firing (promtool runs those tests: make alerts).
func TestAlertRules(t *testing.T) {
	var file struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, alertsFile)), &file))
	var alerts []string
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "group %s: a rule that is not an alert", g.Name)
			require.NotEmpty(t, r.Expr, r.Alert)
			require.Contains(t, []string{"warning", "critical"}, r.Labels["severity"], r.Alert)
			require.NotEmpty(t, r.Annotations["summary"], r.Alert)
			require.NotEmpty(t, r.Annotations["description"], r.Alert)
			alerts = append(alerts, r.Alert)
		}
	}
	require.Len(t, alerts, 10)

	var tests struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, alertTestsFile)), &tests))
	require.Equal(t, []string{alertsFile}, tests.RuleFiles)
	firing, quiet := map[string]bool{}, map[string]bool{}
	for _, tg := range tests.Tests {
		for _, at := range tg.AlertRuleTest {
			require.Contains(t, alerts, at.Alertname, "alerts_test.yaml tests an alert alerts.yaml lacks")
			if len(at.ExpAlerts) > 0 {
				firing[at.Alertname] = true
			} else {
				quiet[at.Alertname] = true
			}
		}
	}
	for _, a := range alerts {
		require.True(t, firing[a], "%s: no test of it firing", a)
		require.True(t, quiet[a], "%s: no test of it not firing", a)
	}
}

// TestDashboard: dashboard.json is a Grafana dashboard whose panels query a
// Prometheus data source chosen by a variable, each with expressions.
func TestDashboard(t *testing.T) {
	type target struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	}
	type datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	}
	type panel struct {
		Type       string      `json:"type"`
		Title      string      `json:"title"`
		Datasource *datasource `json:"datasource"`
		Targets    []target    `json:"targets"`
		Panels     []panel     `json:"panels"`
	}
	var d struct {
		Title         string  `json:"title"`
		UID           string  `json:"uid"`
		SchemaVersion int     `json:"schemaVersion"`
		Panels        []panel `json:"panels"`
		Templating    struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"` // a string, or an object for a query variable
			} `json:"list"`
		} `json:"templating"`
	}
	dec := json.NewDecoder(strings.NewReader(readFile(t, dashboardFile)))
	require.NoError(t, dec.Decode(&d))
	require.NotEmpty(t, d.Title)
	require.NotEmpty(t, d.UID)
	require.GreaterOrEqual(t, d.SchemaVersion, 36)
	dsVar := ""
	for _, v := range d.Templating.List {
		if v.Type == "datasource" && string(v.Query) == `"prometheus"` {
			dsVar = "${" + v.Name + "}"
		}
	}
	require.NotEmpty(t, dsVar, "no Prometheus data source variable")
	var queried int
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" || p.Type == "text" {
				continue
			}
			require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
			require.NotNil(t, p.Datasource, "panel %q has no data source", p.Title)
			require.Equal(t, dsVar, p.Datasource.UID, "panel %q", p.Title)
			for _, tg := range p.Targets {
				require.NotEmpty(t, tg.Expr, "panel %q: a query without an expression", p.Title)
				require.Regexp(t, metricName, tg.Expr, "panel %q: a query of no shepherd metric", p.Title)
			}
			queried++
		}
	}
	walk(d.Panels)
	require.GreaterOrEqual(t, queried, 10)
}
