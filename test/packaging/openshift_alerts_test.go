package packaging

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/internal/metrics"
	"github.com/vmobs/vmobs/test/support"
)

const (
	baseAlertTests = "config/prometheus/tests/alerts_test.yaml"
	uwmAlertTests  = uwmOverlay + "/tests/alerts_test.yaml"
)

const uwmAlertTestsHeader = `# Generated from config/prometheus/tests/alerts_test.yaml by
# TestUserWorkloadRules (test/packaging/openshift_alerts_test.go); make
# update-golden rewrites it. The same cases, with the series as OpenShift's
# user-workload Prometheus stores them and the alerts as it raises them:
# every series scraped from vmobs has namespace vmobs-system (the
# ServiceMonitor's, enforcedNamespaceLabel), a per-VM series keeps the VM's
# namespace as exported_namespace (overrideHonorLabels), and every alert
# and recorded series has namespace vmobs-system (the PrometheusRule's).
# TestUserWorkloadAlerts runs promtool on it with the rules of
# prometheusrule.yaml as prometheus-operator hands them to that Prometheus:
# each selector also matches namespace="vmobs-system".
`

// series is a series of a promtool unit test, `name{label="value",...}`,
// labels in their order.
type series struct {
	name   string
	labels [][2]string
}

func parseSeries(s string) (series, error) {
	var out series
	i := strings.IndexByte(s, '{')
	if i < 0 {
		out.name = strings.TrimSpace(s)
		return out, nil
	}
	out.name = strings.TrimSpace(s[:i])
	rest := strings.TrimSpace(s[i+1:])
	for {
		rest = strings.TrimLeft(rest, " ,")
		if strings.HasPrefix(rest, "}") {
			if strings.TrimSpace(rest[1:]) != "" {
				return series{}, fmt.Errorf("%q: text after the labels", s)
			}
			return out, nil
		}
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 || eq+1 >= len(rest) || rest[eq+1] != '"' {
			return series{}, fmt.Errorf("%q: want name=\"value\" at %q", s, rest)
		}
		end, err := endOfString(rest, eq+1)
		if err != nil {
			return series{}, err
		}
		v, err := strconv.Unquote(rest[eq+1 : end])
		if err != nil {
			return series{}, fmt.Errorf("%q: %w", s, err)
		}
		out.labels = append(out.labels, [2]string{strings.TrimSpace(rest[:eq]), v})
		rest = rest[end:]
	}
}

func (s series) String() string {
	var b strings.Builder
	b.WriteString(s.name + "{")
	for i, l := range s.labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l[0] + "=" + strconv.Quote(l[1]))
	}
	b.WriteByte('}')
	return b.String()
}

func (s series) get(name string) string {
	for _, l := range s.labels {
		if l[0] == name {
			return l[1]
		}
	}
	return ""
}

// asUserWorkload is what user-workload monitoring makes of labels: the
// VM's namespace, if vmNamespace, moves to exported_namespace; namespace
// is ns, first.
func asUserWorkload(labels [][2]string, vmNamespace bool, ns string) [][2]string {
	out := [][2]string{{"namespace", ns}}
	for _, l := range labels {
		switch {
		case l[0] == "namespace" && vmNamespace:
			out = append(out, [2]string{"exported_namespace", l[1]})
		case l[0] == "namespace":
		default:
			out = append(out, l)
		}
	}
	return out
}

// vmNamespaced tells whether a family of vmobs exports a namespace label
// of its own (the VM's), which a scrape that does not honour labels
// renames.
func vmNamespaced(metric string) (bool, error) {
	for _, f := range metrics.Catalogue {
		if f.Name == metric {
			return slices.Contains(f.Labels, "namespace"), nil
		}
	}
	return false, fmt.Errorf("%s is not in internal/metrics.Catalogue", metric)
}

// userWorkloadSeries is a series of a unit test as the user-workload
// Prometheus stores it when scraped from vmobs' ServiceMonitor in ns. A
// series of another job is not vmobs' and stays as it is.
func userWorkloadSeries(s string, ns string) (string, error) {
	p, err := parseSeries(s)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(p.name, "vmobs_") && p.get("job") != "vmobs" {
		return s, nil
	}
	vmNS := false
	if strings.HasPrefix(p.name, "vmobs_") {
		if vmNS, err = vmNamespaced(p.name); err != nil {
			return "", err
		}
	}
	p.labels = asUserWorkload(p.labels, vmNS, ns)
	return p.String(), nil
}

// userWorkloadTests rewrites config/prometheus' promtool unit tests for
// the rules of config/openshift-user-workload: the input series as
// userWorkloadSeries; each expected alert and recorded sample of a rule
// that userWorkloadRules rewrote (rewritten) with the VM's namespace in
// exported_namespace; every one with namespace ns, which
// enforcedNamespaceLabel adds to every rule's results. Annotations are
// unchanged: the templates render the same text from exported_namespace.
// The node tree keeps the file's comments and order.
func userWorkloadTests(doc *kyaml.Node, rewritten map[string]bool, ns string) error {
	root := doc
	if root.Kind == kyaml.DocumentNode {
		root = root.Content[0]
	}
	for _, tc := range items(root, "tests") {
		for _, in := range items(tc, "input_series") {
			s := mapValue(in, "series")
			if s == nil {
				return fmt.Errorf("input series without series at line %d", in.Line)
			}
			v, err := userWorkloadSeries(s.Value, ns)
			if err != nil {
				return err
			}
			s.Value = v
		}
		for _, a := range items(tc, "alert_rule_test") {
			n := mapValue(a, "alertname")
			if n == nil {
				return fmt.Errorf("alert_rule_test without alertname at line %d", a.Line)
			}
			name := n.Value
			for _, exp := range items(a, "exp_alerts") {
				l := mapValue(exp, "exp_labels")
				if l == nil {
					continue
				}
				var labels [][2]string
				for i := 0; i+1 < len(l.Content); i += 2 {
					labels = append(labels, [2]string{l.Content[i].Value, l.Content[i+1].Value})
				}
				l.Content = nil
				for _, kv := range asUserWorkload(labels, rewritten[name], ns) {
					l.Content = append(l.Content, kyaml.NewStringRNode(kv[0]).YNode(), kyaml.NewStringRNode(kv[1]).YNode())
				}
			}
		}
		for _, e := range items(tc, "promql_expr_test") {
			for _, sample := range items(e, "exp_samples") {
				l := mapValue(sample, "labels")
				if l == nil {
					continue
				}
				p, err := parseSeries(l.Value)
				if err != nil {
					return err
				}
				p.labels = asUserWorkload(p.labels, rewritten[p.name], ns)
				l.Value = p.String()
			}
		}
	}
	return nil
}

// mapValue is the value of key in a mapping node, nil if none.
func mapValue(n *kyaml.Node, key string) *kyaml.Node {
	if n == nil || n.Kind != kyaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// items are the items of the sequence under key in a mapping node, none
// if the key is absent (a case without promql_expr_test).
func items(n *kyaml.Node, key string) []*kyaml.Node {
	if v := mapValue(n, key); v != nil {
		return v.Content
	}
	return nil
}

// ruleGroups are a copy of a PrometheusRule's groups.
func ruleGroups(o *unstructured.Unstructured) []any {
	groups, _, _ := unstructured.NestedSlice(o.Object, "spec", "groups")
	return groups
}

// eachRule calls f with every rule of groups and its name (alert or record).
func eachRule(groups []any, f func(name string, rule map[string]any)) {
	for _, g := range groups {
		rs, _ := g.(map[string]any)["rules"].([]any)
		for _, r := range rs {
			m := r.(map[string]any)
			f(nested(m, "alert")+nested(m, "record"), m)
		}
	}
}

// rewrittenRules names the rules whose expression userWorkloadRules
// changed from config/prometheus'.
func rewrittenRules(base, uwm *unstructured.Unstructured) map[string]bool {
	exprs := map[string]string{}
	eachRule(ruleGroups(base), func(name string, r map[string]any) { exprs[name] = nested(r, "expr") })
	out := map[string]bool{}
	eachRule(ruleGroups(uwm), func(name string, r map[string]any) { out[name] = nested(r, "expr") != exprs[name] })
	return out
}

// generatedAlertTests is config/prometheus' unit tests rewritten by
// userWorkloadTests, with its header: the content of uwmAlertTests.
func generatedAlertTests(t *testing.T, root string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, baseAlertTests))
	if err != nil {
		t.Fatal(err)
	}
	var doc kyaml.Node
	if err := kyaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	// The plain file's own header describes the plain shapes: ours replaces it.
	// yaml.v3 keeps it on the document, the mapping or its first key.
	for n := &doc; n != nil; {
		n.HeadComment = ""
		if len(n.Content) == 0 || n.Kind == kyaml.ScalarNode {
			break
		}
		n = n.Content[0]
	}
	base := mustFind(t, render(t, "config/prometheus"), "PrometheusRule", "vmobs-alerts")
	uwm := mustFind(t, render(t, uwmOverlay), "PrometheusRule", "vmobs-alerts")
	if err := userWorkloadTests(&doc, rewrittenRules(base, uwm), uwm.GetNamespace()); err != nil {
		t.Fatalf("%s: %v", baseAlertTests, err)
	}
	out, err := kyaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(uwmAlertTestsHeader), out...)
}

// enforcedRules is the rules file prometheus-operator writes for a
// Prometheus with enforcedNamespaceLabel: namespace (pkg/namespacelabeler),
// as user-workload monitoring runs it: every rule labelled with the
// PrometheusRule's namespace, every selector matching it.
func enforcedRules(t *testing.T, pr *unstructured.Unstructured) []byte {
	t.Helper()
	ns := pr.GetNamespace()
	groups := ruleGroups(pr) // a deep copy, changed in place
	eachRule(groups, func(name string, r map[string]any) {
		expr, err := enforceLabel(nested(r, "expr"), "namespace", ns)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r["expr"] = expr
		labels, _ := r["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
		}
		labels["namespace"] = ns
		r["labels"] = labels
	})
	b, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// promtoolTest runs `promtool test rules` on tests against rules and
// returns its output and whether it passed.
func promtoolTest(t *testing.T, rules, tests []byte) (string, bool) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "vmobs-alerts.rules.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(support.BuiltTool(t, "promtool", "PROMTOOL"), "test", "rules", "alerts_test.yaml") //nolint:gosec // the built promtool
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("promtool test rules: %v", err)
	}
	return string(out), err == nil
}

// failedAlerts are the alert names of promtool's failed alert tests.
var failedAlert = regexp.MustCompile(`alertname: (\w+), time:`)

func failedAlerts(out string) map[string]bool {
	m := map[string]bool{}
	for _, f := range failedAlert.FindAllStringSubmatch(out, -1) {
		m[f[1]] = true
	}
	return m
}

// TestUserWorkloadAlerts runs the alerts of config/openshift-user-workload
// in promtool on the series OpenShift's user-workload Prometheus holds
// (config/openshift-user-workload/tests/alerts_test.yaml, generated from
// config/prometheus' cases by TestUserWorkloadRules), with the rules as
// prometheus-operator hands them to it. Every alert fires there and is
// silent there, with the VM's namespace and the incident the Alertmanager
// inhibition matches; and each shape needs its rules: config/prometheus'
// rules on these series, or these rules on config/prometheus' series,
// raise the per-VM alerts without the VM's namespace.
func TestUserWorkloadAlerts(t *testing.T) {
	root := support.RepoRoot(t)
	tests, err := os.ReadFile(filepath.Join(root, uwmAlertTests))
	if err != nil {
		t.Fatal(err)
	}
	base := mustFind(t, render(t, "config/prometheus"), "PrometheusRule", "vmobs-alerts")
	uwm := mustFind(t, render(t, uwmOverlay), "PrometheusRule", "vmobs-alerts")
	ns := uwm.GetNamespace()
	rewritten := rewrittenRules(base, uwm)

	if out, ok := promtoolTest(t, enforcedRules(t, uwm), tests); !ok {
		t.Fatalf("promtool test rules on %s:\n%s", uwmAlertTests, out)
	}

	// Every alert fires and stays silent in some case, every recording rule
	// has samples; all carry vmobs' namespace, the per-VM ones the VM's.
	unit := support.ReadPromtoolTests(t, filepath.Join(root, uwmAlertTests))
	fires, silent, recorded := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var incidentMembers int
	for i, tc := range unit.Tests {
		incidents := map[string]bool{}
		for _, a := range tc.AlertRuleTest {
			for _, e := range a.ExpAlerts {
				if a.Alertname == "VMObservationIncident" {
					incidents[e.ExpLabels["incident"]] = true
				}
			}
		}
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) == 0 {
				silent[a.Alertname] = true
			}
			for _, e := range a.ExpAlerts {
				fires[a.Alertname] = true
				l := e.ExpLabels
				if l["namespace"] != ns {
					t.Errorf("test %d: %s with namespace %q, want %q (enforcedNamespaceLabel)", i, a.Alertname, l["namespace"], ns)
				}
				if rewritten[a.Alertname] && (l["exported_namespace"] == "" || l["vm"] == "") {
					t.Errorf("test %d: %s %v lacks the VM's namespace in exported_namespace or its vm label", i, a.Alertname, l)
				}
				// The Alertmanager inhibition on `incident`
				// (docs/alertmanager-inhibition.yaml) matches the member's
				// alert to its incident's, which fires beside it.
				if inc := l["incident"]; inc != "" && a.Alertname != "VMObservationIncident" {
					if !incidents[inc] {
						t.Errorf("test %d: %s carries incident %q, whose alert does not fire", i, a.Alertname, inc)
					}
					incidentMembers++
				}
			}
		}
		for _, e := range tc.PromQLExprTest {
			for _, s := range e.ExpSamples {
				recorded[e.Expr] = true
				p, err := parseSeries(s.Labels)
				if err != nil {
					t.Fatal(err)
				}
				if p.get("namespace") != ns {
					t.Errorf("test %d: sample %s without namespace %q", i, s.Labels, ns)
				}
			}
		}
	}
	var perVM int
	eachRule(ruleGroups(uwm), func(name string, r map[string]any) {
		if nested(r, "record") != "" {
			if !recorded[name] {
				t.Errorf("%s has no promql_expr_test with samples", name)
			}
			return
		}
		if !fires[name] || !silent[name] {
			t.Errorf("%s must be shown firing and silent (firing: %v, silent: %v)", name, fires[name], silent[name])
		}
		if rewritten[name] {
			perVM++
		}
	})
	if perVM == 0 || incidentMembers == 0 {
		t.Errorf("%d rewritten alerts, %d alerts of incident members: the cases must have both", perVM, incidentMembers)
	}
	// The inhibition rules name no namespace: they hold the same alerts
	// back on this path.
	inhibition, err := os.ReadFile(filepath.Join(root, "docs", "alertmanager-inhibition.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(inhibition, []byte("namespace=")) || bytes.Contains(inhibition, []byte("- namespace")) {
		t.Error("docs/alertmanager-inhibition.yaml matches on namespace, which is vmobs-system for every alert of user-workload monitoring")
	}

	// Each shape needs its rules. Every rewritten alert that fires in a
	// case must fail: its labels lack the VM's namespace.
	mismatched := func(t *testing.T, out string, passed bool) {
		t.Helper()
		if passed {
			t.Fatal("promtool test rules passed")
		}
		failed := failedAlerts(out)
		for name := range rewritten {
			if rewritten[name] && fires[name] && !failed[name] {
				t.Errorf("%s did not fail", name)
			}
		}
		if t.Failed() {
			t.Log(out)
		}
	}
	t.Run("config/prometheus rules on user-workload series", func(t *testing.T) {
		out, ok := promtoolTest(t, enforcedRules(t, base), tests)
		mismatched(t, out, ok)
	})
	t.Run("user-workload rules on honorLabels series", func(t *testing.T) {
		plain, err := os.ReadFile(filepath.Join(root, baseAlertTests))
		if err != nil {
			t.Fatal(err)
		}
		rules, err := yaml.Marshal(map[string]any{"groups": ruleGroups(uwm)})
		if err != nil {
			t.Fatal(err)
		}
		out, ok := promtoolTest(t, rules, plain)
		mismatched(t, out, ok)
	})
}
