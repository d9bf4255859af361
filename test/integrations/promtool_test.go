package integrations

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/metrics"
	"github.com/vmobs/vmobs/test/support"
)

const runbookBase = "https://github.com/vmobs/vmobs/blob/main/docs/runbooks/"

type promRule struct {
	Record      string            `json:"record"`
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type promRuleGroup struct {
	Name  string     `json:"name"`
	Rules []promRule `json:"rules"`
}

// readPrometheusRule reads the PrometheusRule and returns its spec (a
// Prometheus rules file, as the operator hands it to Prometheus) and groups.
func readPrometheusRule(t *testing.T) ([]byte, []promRuleGroup) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(support.RepoRoot(t), "config", "prometheus", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Spec       map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &pr); err != nil {
		t.Fatal(err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Fatalf("prometheusrule.yaml is a %s %s", pr.APIVersion, pr.Kind)
	}
	spec, err := yaml.Marshal(pr.Spec)
	if err != nil {
		t.Fatal(err)
	}
	var groups struct {
		Groups []promRuleGroup `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(spec, &groups); err != nil {
		t.Fatalf("spec of the PrometheusRule: %v", err)
	}
	return spec, groups.Groups
}

func runPromtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(support.BuiltTool(t, "promtool", "PROMTOOL"), args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// TestPrometheusRuleWithPromtool checks the rules (`promtool check rules`)
// and runs their unit tests (`promtool test rules`).
func TestPrometheusRuleWithPromtool(t *testing.T) {
	spec, _ := readPrometheusRule(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "vmobs-alerts.rules.yaml"), spec, 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join(support.RepoRoot(t), "config", "prometheus", "tests", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log(runPromtool(t, dir, "check", "rules", "vmobs-alerts.rules.yaml"))
	t.Log(runPromtool(t, dir, "test", "rules", "alerts_test.yaml"))
}

// TestPrometheusRuleConventions checks what promtool does not: the labels
// and annotations every alert carries (operator_health_impact none on all:
// nothing of vmobs may mark OpenShift Virtualization degraded; vm and node
// on every per-VM alert the unit tests fire), a runbook per alert, a unit
// test that fires each alert and one for each recording rule, and that the
// metrics, verdicts and reasons the expressions name exist.
func TestPrometheusRuleConventions(t *testing.T) {
	root := support.RepoRoot(t)
	_, groups := readPrometheusRule(t)

	// Metric names vmobs exports: the catalogue, which internal/metrics
	// proves equal to what every source registers.
	exported := map[string]bool{}
	for _, f := range metrics.Catalogue {
		exported[f.Name] = true
	}
	if !exported["vmobs_layer_verdict"] || !exported["vmobs_layer_reason"] {
		t.Fatalf("could not read vmobs' metric names: %v", exported)
	}
	reasons := map[string]bool{}
	for _, r := range v1alpha1.AllReasons {
		reasons[r] = true
	}
	verdicts := map[string]bool{}
	for _, v := range metrics.Verdicts {
		verdicts[string(v)] = true
	}

	unit := support.ReadPromtoolTests(t, filepath.Join(root, "config", "prometheus", "tests", "alerts_test.yaml"))
	fires, silent, evaluated := map[string]bool{}, map[string]bool{}, map[string]bool{}
	firedLabels := map[string][]map[string]string{}
	for _, tc := range unit.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
			for _, e := range a.ExpAlerts {
				firedLabels[a.Alertname] = append(firedLabels[a.Alertname], e.ExpLabels)
			}
		}
		for _, e := range tc.PromQLExprTest {
			if len(e.ExpSamples) > 0 {
				evaluated[e.Expr] = true
			}
		}
	}

	var alerts []string
	recordRe := regexp.MustCompile(`^[a-z_]+:(vmobs_[a-z_]+):[a-z_]+$`)
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				t.Run(r.Record, func(t *testing.T) {
					m := recordRe.FindStringSubmatch(r.Record)
					if m == nil || !exported[m[1]] {
						t.Errorf("recording rule %q is not named level:vmobs_metric:operation after a metric vmobs exports", r.Record)
					}
					if !evaluated[r.Record] {
						t.Errorf("alerts_test.yaml has no promql_expr_test with samples for %s", r.Record)
					}
				})
				continue
			}
			alerts = append(alerts, r.Alert)
			t.Run(r.Alert, func(t *testing.T) {
				if !slices.Contains([]string{"warning", "critical"}, r.Labels["severity"]) {
					t.Errorf("severity %q", r.Labels["severity"])
				}
				if r.Labels["operator_health_impact"] != "none" {
					t.Errorf("operator_health_impact %q: the HyperConverged operator would count the alert against OpenShift Virtualization's health", r.Labels["operator_health_impact"])
				}
				for _, l := range firedLabels[r.Alert] {
					switch g.Name {
					case "vmobs.vm.rules":
						if l["vm"] == "" || l["vm"] != l["name"] || l["namespace"] == "" {
							t.Errorf("a firing %s lacks the vm label (equal to name) consoles link a VM's alert by: %v", r.Alert, l)
						}
					case "vmobs.node.rules":
						if l["node"] == "" {
							t.Errorf("a firing %s lacks its node: %v", r.Alert, l)
						}
					}
				}
				if r.Labels["kubernetes_operator_part_of"] == "" || r.Labels["kubernetes_operator_component"] != "vmobs" {
					t.Errorf("kubernetes_operator_* labels: %v", r.Labels)
				}
				if r.For == "" {
					t.Error("no `for`: a single scrape would page")
				}
				for _, a := range []string{"summary", "description", "runbook_url"} {
					if r.Annotations[a] == "" {
						t.Errorf("no %s annotation", a)
					}
				}
				if want := runbookBase + r.Alert + ".md"; r.Annotations["runbook_url"] != want {
					t.Errorf("runbook_url %q, want %q", r.Annotations["runbook_url"], want)
				}
				rb, err := os.ReadFile(filepath.Join(root, "docs", "runbooks", r.Alert+".md"))
				if err != nil {
					t.Errorf("no runbook: %v", err)
				} else {
					for _, h := range []string{"# " + r.Alert, "## Meaning", "## Impact", "## Diagnosis", "## Mitigation"} {
						if !bytes.Contains(rb, []byte("\n"+h+"\n")) && !bytes.HasPrefix(rb, []byte(h+"\n")) {
							t.Errorf("docs/runbooks/%s.md lacks the heading %q", r.Alert, h)
						}
					}
					if !bytes.Contains(rb, []byte("kubectl ")) {
						t.Errorf("docs/runbooks/%s.md has no kubectl command in its diagnosis", r.Alert)
					}
				}
				if !fires[r.Alert] || !silent[r.Alert] {
					t.Errorf("alerts_test.yaml must show %s both firing and not firing (firing: %v, silent: %v)", r.Alert, fires[r.Alert], silent[r.Alert])
				}
				for _, m := range regexp.MustCompile(`\bvmobs_[a-z_]+`).FindAllString(r.Expr, -1) {
					if !exported[m] {
						t.Errorf("the expression reads %s, which vmobs does not export", m)
					}
				}
				for _, m := range regexp.MustCompile(`reason=~?"([^"]+)"`).FindAllStringSubmatch(r.Expr, -1) {
					for _, reason := range strings.Split(m[1], "|") {
						if !reasons[reason] {
							t.Errorf("the expression names reason %q, which is not in api/v1alpha1/reasons.go", reason)
						}
					}
				}
				for _, m := range regexp.MustCompile(`verdict=~?"([^"]+)"`).FindAllStringSubmatch(r.Expr, -1) {
					for _, v := range strings.Split(m[1], "|") {
						if !verdicts[v] {
							t.Errorf("the expression names verdict %q", v)
						}
					}
				}
			})
		}
	}
	// No runbook without an alert.
	files, _ := filepath.Glob(filepath.Join(root, "docs", "runbooks", "*.md"))
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".md")
		if name != "README" && !slices.Contains(alerts, name) {
			t.Errorf("docs/runbooks/%s.md has no alert", name)
		}
	}
	if len(alerts) == 0 {
		t.Fatal("no alerts")
	}
}

// amMatcher is one of Alertmanager's matchers (name op "value"), as
// docs/alertmanager-inhibition.yaml writes them.
var amMatcher = regexp.MustCompile(`^([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"(.*)"$`)

// matchesAll tells whether an alert's labels match every matcher, as
// Alertmanager does: a missing label is the empty string, regular
// expressions are anchored.
func matchesAll(t *testing.T, matchers []string, labels map[string]string) bool {
	t.Helper()
	for _, m := range matchers {
		p := amMatcher.FindStringSubmatch(m)
		if p == nil {
			t.Fatalf("matcher %q is not name op \"value\"", m)
		}
		v := labels[p[1]]
		var ok bool
		switch p[2] {
		case "=":
			ok = v == p[3]
		case "!=":
			ok = v != p[3]
		default:
			ok = regexp.MustCompile("^(?:" + p[3] + ")$").MatchString(v)
			if p[2] == "!~" {
				ok = !ok
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// TestAlertmanagerInhibition checks the inhibition rules of
// docs/alertmanager-inhibition.yaml against the alerts promtool's unit
// tests expect (config/prometheus/tests/alerts_test.yaml, which
// TestPrometheusRuleWithPromtool runs, so these are the labels the rules
// really give): the node alert and the incident alert are sources and no
// targets, every per-VM alert is a target, and a per-VM alert is held back
// exactly when a node alert of its own node, or the alert of its own
// incident, fires.
func TestAlertmanagerInhibition(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(support.RepoRoot(t), "docs", "alertmanager-inhibition.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type inhibitRule struct {
		SourceMatchers []string `json:"source_matchers"`
		TargetMatchers []string `json:"target_matchers"`
		Equal          []string `json:"equal"`
	}
	var cfg struct {
		InhibitRules []inhibitRule `json:"inhibit_rules"`
	}
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		t.Fatal(err)
	}
	// Each source alert, and the label its targets must share with it.
	want := map[string]string{"VMObservationNodeUnknown": "node", "VMObservationIncident": "incident"}
	if len(cfg.InhibitRules) != len(want) {
		t.Fatalf("%d inhibit rules, want %d", len(cfg.InhibitRules), len(want))
	}

	tests := support.ReadPromtoolTests(t, filepath.Join(support.RepoRoot(t), "config", "prometheus", "tests", "alerts_test.yaml"))
	var alerts []map[string]string
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			for _, e := range a.ExpAlerts {
				l := map[string]string{"alertname": a.Alertname}
				for k, v := range e.ExpLabels {
					l[k] = v
				}
				alerts = append(alerts, l)
			}
		}
	}
	sources := map[string]int{}
	var targets int
	for _, rule := range cfg.InhibitRules {
		for _, a := range alerts {
			src, tgt := matchesAll(t, rule.SourceMatchers, a), matchesAll(t, rule.TargetMatchers, a)
			if label, isSource := want[a["alertname"]]; src && (!isSource || !slices.Equal(rule.Equal, []string{label})) {
				t.Errorf("%v: a source of the rule on %v", a, rule.Equal)
			}
			if perVM := a["vm"] != ""; tgt != perVM {
				t.Errorf("%v: target %v, want %v (per-VM alert)", a, tgt, perVM)
			}
			if src {
				sources[a["alertname"]]++
				if a[rule.Equal[0]] == "" {
					t.Errorf("%v: a source without %s inhibits nothing", a, rule.Equal[0])
				}
			}
			if tgt {
				targets++
			}
		}
	}
	for name := range want {
		if sources[name] == 0 {
			t.Errorf("the unit tests expect no %s", name)
		}
	}
	if targets == 0 {
		t.Fatal("the unit tests expect no per-VM alert")
	}
	// The lost node-b and the StorageClass incident of the unit tests:
	// their VMs' alerts are held back, others are not.
	inhibited := func(target map[string]string) bool {
		for _, rule := range cfg.InhibitRules {
			for _, s := range alerts {
				if !matchesAll(t, rule.SourceMatchers, s) || !matchesAll(t, rule.TargetMatchers, target) {
					continue
				}
				if !slices.ContainsFunc(rule.Equal, func(l string) bool { return s[l] != target[l] }) {
					return true
				}
			}
		}
		return false
	}
	var held, kept int
	for _, a := range alerts {
		if a["vm"] == "" {
			continue
		}
		covered := slices.ContainsFunc(alerts, func(s map[string]string) bool {
			return (s["alertname"] == "VMObservationNodeUnknown" && s["node"] == a["node"]) ||
				(s["alertname"] == "VMObservationIncident" && a["incident"] != "" && s["incident"] == a["incident"])
		})
		if got := inhibited(a); got != covered {
			t.Errorf("%v: inhibited %v, its node's or incident's alert firing %v", a, got, covered)
		} else if got {
			held++
		} else {
			kept++
		}
	}
	if held == 0 || kept == 0 {
		t.Errorf("%d per-VM alerts held back, %d kept: the unit tests should have both", held, kept)
	}
	t.Logf("%d alerts: sources %v, %d targets; %d per-VM alerts held back by a lost node or an incident, %d kept", len(alerts), sources, targets, held, kept)
}
