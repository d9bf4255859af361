package packaging

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/test/support"
)

var update = flag.Bool("update", false,
	"rewrite config/openshift-user-workload/prometheusrule.yaml and tests/alerts_test.yaml from config/prometheus' (make update-golden)")

const (
	uwmOverlay = "config/openshift-user-workload"
	uwmRules   = uwmOverlay + "/prometheusrule.yaml"
	baseRules  = "config/prometheus/prometheusrule.yaml"
)

var (
	// perVMSeries selects vmobs' per-VM series (internal/metrics), whose
	// namespace label is the VM's; a recorded series (level:metric:op)
	// is not one.
	perVMSeries = regexp.MustCompile(`(^|[^:\w])vmobs_(verdict|layer_\w+)\b`)
	// namespaceLabel is the label `namespace` as PromQL and the alert
	// templates name it; exported_namespace and namespace_... are not.
	namespaceLabel   = regexp.MustCompile(`\bnamespace\b`)
	templatedNSLabel = regexp.MustCompile(`\$labels\.namespace\b|\bnamespace=%q`)
)

// userWorkloadRules rewrites the rules of config/prometheus for OpenShift's
// user-workload monitoring, which overrides honorLabels and sets every
// scraped series' namespace label to the ServiceMonitor's namespace
// (prometheus-operator's overrideHonorLabels and enforcedNamespaceLabel):
// the VM's namespace arrives as exported_namespace, so the rules on per-VM
// series group, match and template by exported_namespace. The rules on the
// replicas' own series (up, vmobs_collector_errors) keep namespace, which
// is then vmobs' own, as everywhere else.
func userWorkloadRules(base map[string]any) map[string]any {
	spec, _ := base["spec"].(map[string]any)
	groups, _ := spec["groups"].([]any)
	for _, g := range groups {
		rules, _ := g.(map[string]any)["rules"].([]any)
		for _, r := range rules {
			rule := r.(map[string]any)
			expr, _ := rule["expr"].(string)
			if !perVMSeries.MatchString(expr) {
				continue
			}
			rule["expr"] = namespaceLabel.ReplaceAllString(expr, "exported_namespace")
			if ann, ok := rule["annotations"].(map[string]any); ok {
				for k, v := range ann {
					s, _ := v.(string)
					ann[k] = templatedNSLabel.ReplaceAllStringFunc(s, func(m string) string {
						return strings.Replace(m, "namespace", "exported_namespace", 1)
					})
				}
			}
		}
	}
	return map[string]any{
		"apiVersion": base["apiVersion"],
		"kind":       base["kind"],
		"metadata":   map[string]any{"name": "vmobs-alerts", "namespace": support.SystemNS},
		"spec":       spec,
	}
}

const uwmRulesHeader = `# Generated from config/prometheus/prometheusrule.yaml by
# TestUserWorkloadRules (test/packaging/openshift_test.go); make
# update-golden rewrites it. The same rules, reading the VM's namespace from
# exported_namespace, where OpenShift's user-workload monitoring keeps it.
`

// TestUserWorkloadRules checks that the user-workload overlay's rules are
// config/prometheus' own, rewritten by userWorkloadRules, and their unit
// tests config/prometheus' own, rewritten by userWorkloadTests
// (TestUserWorkloadAlerts runs them).
func TestUserWorkloadRules(t *testing.T) {
	root := support.RepoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, baseRules))
	if err != nil {
		t.Fatal(err)
	}
	var base map[string]any
	if err := yaml.Unmarshal(raw, &base); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(userWorkloadRules(base))
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte(uwmRulesHeader), out...)
	path := filepath.Join(root, uwmRules)
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil { //nolint:gosec // a committed file, read by all
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run `go test ./test/packaging -run TestUserWorkloadRules -update` (make update-golden)", uwmRules)
	}

	// The unit tests of the rules, from config/prometheus' cases.
	want = generatedAlertTests(t, root)
	path = filepath.Join(root, uwmAlertTests)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { //nolint:gosec // a committed directory
			t.Fatal(err)
		}
		if err := os.WriteFile(path, want, 0o644); err != nil { //nolint:gosec // a committed file, read by all
			t.Fatal(err)
		}
	}
	if got, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run `go test ./test/packaging -run TestUserWorkloadRules -update` (make update-golden)", uwmAlertTests)
	}
}

// The labels OpenShift's user-workload Prometheus selects by
// (cluster-monitoring-operator's assets/prometheus-user-workload/prometheus.yaml):
// it loads ServiceMonitors and PrometheusRules of namespaces that are not
// the platform's (openshift.io/cluster-monitoring=true) nor opted out
// (openshift.io/user-monitoring=false), objects not opted out themselves,
// and evaluates a rule in its own Prometheus when the rule says
// leaf-prometheus (Thanos Ruler evaluates the others).
const (
	clusterMonitoringLabel = "openshift.io/cluster-monitoring"
	userMonitoringLabel    = "openshift.io/user-monitoring"
	ruleScopeLabel         = "openshift.io/prometheus-rule-evaluation-scope"
)

// TestUserWorkloadMonitoringShapes renders config/openshift-user-workload
// and checks it against what OpenShift's user-workload monitoring accepts
// and how it changes what it loads (its Prometheus runs with
// ignoreNamespaceSelectors, arbitraryFSAccessThroughSMs.deny,
// overrideHonorLabels and enforcedNamespaceLabel: namespace; no
// ScrapeConfig selector). TestOverlaysOnAPIServer applies the same overlay
// to an API server serving prometheus-operator's CRDs.
func TestUserWorkloadMonitoringShapes(t *testing.T) {
	objs := render(t, uwmOverlay)

	ns := mustFind(t, objs, "Namespace", support.SystemNS)
	if ns.GetLabels()[clusterMonitoringLabel] == "true" {
		t.Errorf("namespace labelled %s=true: user-workload monitoring skips it", clusterMonitoringLabel)
	}
	if ns.GetLabels()[userMonitoringLabel] == "false" {
		t.Errorf("namespace labelled %s=false: user-workload monitoring skips it", userMonitoringLabel)
	}

	var monitors, rules int
	for _, o := range objs {
		if strings.HasPrefix(o.GetAPIVersion(), "monitoring.coreos.com/") {
			switch o.GetKind() {
			case "ServiceMonitor":
				monitors++
			case "PrometheusRule":
				rules++
			default:
				// ScrapeConfig has no selector in user-workload monitoring;
				// PodMonitor and Probe would need a pod or prober of their own.
				t.Errorf("%s/%s: only ServiceMonitors and PrometheusRules are used", o.GetKind(), o.GetName())
			}
			if o.GetNamespace() != support.SystemNS {
				t.Errorf("%s/%s in namespace %q: user-workload monitoring reads it from the namespace it watches, vmobs' own", o.GetKind(), o.GetName(), o.GetNamespace())
			}
			if o.GetLabels()[userMonitoringLabel] == "false" {
				t.Errorf("%s/%s opted out of user-workload monitoring", o.GetKind(), o.GetName())
			}
		}
	}
	if monitors != 1 || rules != 1 {
		t.Errorf("%d ServiceMonitors and %d PrometheusRules, want one of each", monitors, rules)
	}

	sm := mustFind(t, objs, "ServiceMonitor", "vmobs-controller-manager-metrics-monitor")
	if _, ok, _ := unstructured.NestedFieldNoCopy(sm.Object, "spec", "namespaceSelector"); ok {
		t.Error("the ServiceMonitor has a namespaceSelector, which user-workload monitoring ignores (ignoreNamespaceSelectors): it finds Services in its own namespace only")
	}
	// The Service it selects is in its namespace.
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	svc := mustFind(t, objs, "Service", metricsService)
	for k, v := range sel {
		if svc.GetLabels()[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, which Service %s lacks", k, v, svc.GetName())
		}
	}
	if svc.GetNamespace() != sm.GetNamespace() {
		t.Errorf("Service in %q, ServiceMonitor in %q", svc.GetNamespace(), sm.GetNamespace())
	}
	ep := endpoint(t, objs)
	// arbitraryFSAccessThroughSMs.deny: no file of the Prometheus pod.
	for _, path := range [][]string{{"bearerTokenFile"}, {"tlsConfig", "caFile"}, {"tlsConfig", "certFile"}, {"tlsConfig", "keyFile"}} {
		if _, ok, _ := unstructured.NestedFieldNoCopy(ep, path...); ok {
			t.Errorf("endpoint sets %s: user-workload monitoring refuses a file of its Prometheus' pod (arbitraryFSAccessThroughSMs)", strings.Join(path, "."))
		}
	}
	secret := nested(ep, "authorization", "credentials", "name")
	if s := mustFind(t, objs, "Secret", secret); s.GetNamespace() != sm.GetNamespace() {
		t.Errorf("the scrape's token Secret %s is in %q: the ServiceMonitor reads Secrets of its own namespace", secret, s.GetNamespace())
	}
	if cm := nested(ep, "tlsConfig", "ca", "configMap", "name"); cm == "" {
		t.Errorf("tlsConfig %v does not verify the service CA's certificate", ep["tlsConfig"])
	} else {
		mustFind(t, objs, "ConfigMap", cm)
	}
	servesCertFrom(t, objs, svc.GetAnnotations()["service.beta.openshift.io/serving-cert-secret-name"])

	// The rules: evaluated next to vmobs' series, and never grouping or
	// matching per-VM series by namespace, which is vmobs-system for all.
	pr := mustFind(t, objs, "PrometheusRule", "vmobs-alerts")
	if pr.GetLabels()[ruleScopeLabel] != "leaf-prometheus" {
		t.Errorf("PrometheusRule labels %v: want %s=leaf-prometheus", pr.GetLabels(), ruleScopeLabel)
	}
	baseRule := mustFind(t, render(t, "config/prometheus"), "PrometheusRule", "vmobs-alerts")
	names := func(o *unstructured.Unstructured) (out []string) {
		groups, _, _ := unstructured.NestedSlice(o.Object, "spec", "groups")
		for _, g := range groups {
			rs, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
			for _, r := range rs {
				m := r.(map[string]any)
				out = append(out, nested(m, "alert")+nested(m, "record"))
			}
		}
		return out
	}
	if got, want := names(pr), names(baseRule); !slices.Equal(got, want) {
		t.Errorf("rules %v, want config/prometheus' %v", got, want)
	}
	var perVM int
	groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
	for _, g := range groups {
		rs, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rs {
			m := r.(map[string]any)
			expr := nested(m, "expr")
			if !perVMSeries.MatchString(expr) {
				continue
			}
			perVM++
			name := nested(m, "alert") + nested(m, "record")
			if namespaceLabel.MatchString(expr) {
				t.Errorf("%s reads the namespace label of per-VM series:\n%s", name, expr)
			}
			if strings.Contains(nested(m, "annotations", "description"), "$labels.namespace") {
				t.Errorf("%s's description names $labels.namespace", name)
			}
		}
	}
	if perVM == 0 {
		t.Error("no rule reads per-VM series")
	}
	if !strings.Contains(promtoolCheck(t, pr), "SUCCESS") {
		t.Error("promtool did not report SUCCESS")
	}

	// The domain stats: KubeVirt's series are platform monitoring's, read
	// across namespaces through thanos-querier's 9091 with the manager's
	// token, which is bound to cluster-monitoring-view.
	args := managerDeployment(t, objs).Spec.Template.Spec.Containers[0].Args
	for _, a := range []string{
		"--prometheus-url=https://thanos-querier.openshift-monitoring.svc:9091",
		"--prometheus-bearer-token-file=/var/run/secrets/kubernetes.io/serviceaccount/token",
		"--prometheus-ca-file=/var/run/secrets/kubernetes.io/serviceaccount/service-ca.crt",
	} {
		if !slices.Contains(args, a) {
			t.Errorf("manager args %v lack %s", args, a)
		}
	}
	crb := mustFind(t, objs, "ClusterRoleBinding", "vmobs-cluster-monitoring-view")
	subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
	sa := managerDeployment(t, objs).Spec.Template.Spec.ServiceAccountName
	if str(crb, "roleRef", "name") != "cluster-monitoring-view" || len(subjects) != 1 ||
		nested(subjects[0].(map[string]any), "name") != sa || nested(subjects[0].(map[string]any), "namespace") != support.SystemNS {
		t.Errorf("ClusterRoleBinding %v: want cluster-monitoring-view for the manager's ServiceAccount %s", crb.Object, sa)
	}
}

// promtoolCheck runs `promtool check rules` on a PrometheusRule's groups.
func promtoolCheck(t *testing.T, pr *unstructured.Unstructured) string {
	t.Helper()
	groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
	b, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(support.BuiltTool(t, "promtool", "PROMTOOL"), "check", "rules", f).CombinedOutput() //nolint:gosec // the built promtool
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	return string(out)
}

// TestHelmUserWorkloadRules: the chart's prometheus.rule.userWorkload
// installs the rules config/openshift-user-workload does, with the label
// that has the user-workload Prometheus evaluate them; without it, the
// rules of config/prometheus.
func TestHelmUserWorkloadRules(t *testing.T) {
	exprs := func(o *unstructured.Unstructured) []string {
		var out []string
		groups, _, _ := unstructured.NestedSlice(o.Object, "spec", "groups")
		for _, g := range groups {
			rs, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
			for _, r := range rs {
				m := r.(map[string]any)
				out = append(out, nested(m, "alert")+nested(m, "record")+": "+nested(m, "expr"))
			}
		}
		return out
	}
	for _, tc := range []struct {
		set, overlay string
		leaf         bool
	}{
		{"prometheus.rule.enabled=true", "config/prometheus", false},
		{"prometheus.rule.enabled=true,prometheus.rule.userWorkload=true", uwmOverlay, true},
	} {
		t.Run(tc.set, func(t *testing.T) {
			var chartRule *unstructured.Unstructured
			for _, o := range helmTemplate(t, helmRelease, support.SystemNS, "--set", tc.set) {
				if o.GetKind() == "PrometheusRule" {
					chartRule = o
				}
			}
			if chartRule == nil {
				t.Fatal("the chart renders no PrometheusRule")
			}
			want := mustFind(t, render(t, tc.overlay), "PrometheusRule", "vmobs-alerts")
			if got, want := exprs(chartRule), exprs(want); !slices.Equal(got, want) {
				t.Errorf("the chart's rules differ from %s's:\n%s\nwant\n%s", tc.overlay, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if leaf := chartRule.GetLabels()[ruleScopeLabel] == "leaf-prometheus"; leaf != tc.leaf {
				t.Errorf("labels %v: %s=leaf-prometheus is %v, want %v", chartRule.GetLabels(), ruleScopeLabel, leaf, tc.leaf)
			}
		})
	}
}
