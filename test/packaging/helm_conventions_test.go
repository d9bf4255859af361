package packaging

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

// The chart's conventions (docs/helm.md): first-class values for the
// common settings, OpenShift detected from the API, a PodDisruptionBudget,
// a NetworkPolicy, `helm test`, the Grafana dashboards, runbooks at the
// release's tag, namespaced Roles, Chart.yaml's metadata. Rendered with the
// real Helm (bin/helm, `make helm`).

// helmTemplateTests renders as helmTemplate does, `helm test`'s hooks
// included.
func helmTemplateTests(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out, err := runHelm(t, append([]string{"template", helmRelease, chartDir, "--namespace", support.SystemNS}, args...)...)
	if err != nil {
		t.Fatalf("helm template %s: %v", strings.Join(args, " "), err)
	}
	return decodeManifests(t, out)
}

// TestHelmFirstClassValues: each first-class value becomes the manager's
// flag, which `vmobs manager` has, and the token and CA files the flags
// name are where the chart mounts the Secret's and the ConfigMap's keys.
func TestHelmFirstClassValues(t *testing.T) {
	objs := helmTemplate(t, helmRelease, support.SystemNS,
		"--set", "watchNamespaces={vms-prod,vms-dev},vmSelector=tier in (gold),logLevel=debug",
		"--set", "prometheus.url=https://thanos-querier.openshift-monitoring.svc:9091",
		"--set", "prometheus.bearerToken.secretName=prom-token,prometheus.ca.configMapName=openshift-service-ca.crt,prometheus.ca.key=service-ca.crt",
		"--set", "guestProbe.interval=2m,guestProbe.timeout=5s",
		"--set", "policy.guestAgentExpected=false,policy.heartbeatTimeout=3m,policy.schedulingTimeout=20m,policy.migrationPhaseTimeout=7m",
		"--set", "flags.auto-create=false")
	pod := managerDeployment(t, objs).Spec.Template.Spec
	c := pod.Containers[0]
	want := []string{
		"manager", "--leader-elect", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8443",
		"--auto-create=false", "--guest-agent-expected=false", "--guest-probe-interval=2m", "--guest-probe-timeout=5s",
		"--heartbeat-timeout=3m", "--migration-phase-timeout=7m", "--namespace=vms-prod", "--namespace=vms-dev",
		"--prometheus-bearer-token-file=/var/run/secrets/vmobs/prometheus-token/token",
		"--prometheus-ca-file=/var/run/secrets/vmobs/prometheus-ca/service-ca.crt",
		"--prometheus-url=https://thanos-querier.openshift-monitoring.svc:9091",
		"--scheduling-timeout=20m", "--vm-selector=tier in (gold)", "--zap-log-level=debug",
	}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args:\n%q\nwant\n%q", c.Args, want)
	}
	flags, err := managerFlags()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, a := range c.Args[1:] {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !flags[name] {
			t.Errorf("%s: `vmobs manager` has no flag %q", a, name)
		}
		if strings.HasSuffix(name, "-file") {
			files[name] = value
		}
	}
	// Each file a flag names is a key of a mounted volume.
	for flag, path := range files {
		found := false
		for _, m := range c.VolumeMounts {
			if filepath.Dir(path) != m.MountPath {
				continue
			}
			i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
			if i < 0 {
				t.Fatalf("mount %s has no volume", m.Name)
			}
			v := pod.Volumes[i]
			var items []corev1.KeyToPath
			switch {
			case v.Secret != nil:
				items = v.Secret.Items
			case v.ConfigMap != nil:
				items = v.ConfigMap.Items
			}
			found = m.ReadOnly && slices.ContainsFunc(items, func(k corev1.KeyToPath) bool { return k.Path == filepath.Base(path) })
		}
		if !found {
			t.Errorf("--%s=%s: no read-only volume mounts that file (mounts %+v, volumes %+v)", flag, path, c.VolumeMounts, pod.Volumes)
		}
	}
	token := pod.Volumes[slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "prometheus-token" })]
	ca := pod.Volumes[slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "prometheus-ca" })]
	if token.Secret == nil || token.Secret.SecretName != "prom-token" || ca.ConfigMap == nil || ca.ConfigMap.Name != "openshift-service-ca.crt" {
		t.Errorf("volumes %+v, %+v: want Secret prom-token and ConfigMap openshift-service-ca.crt", token, ca)
	}

	// With none of them set, the chart passes no such flag: the manager's
	// defaults hold.
	args := managerDeployment(t, helmTemplate(t, helmRelease, support.SystemNS)).Spec.Template.Spec.Containers[0].Args
	if want := []string{"manager", "--leader-elect", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8443"}; !slices.Equal(args, want) {
		t.Errorf("default args %q, want %q", args, want)
	}
}

// TestHelmConventionsRefuse: values the chart refuses, naming the value.
func TestHelmConventionsRefuse(t *testing.T) {
	for _, tt := range []struct{ name, set, want string }{
		{"a flag a first-class value sets", "watchNamespaces={vms},flags.namespace=other", "flags.namespace: a first-class value"},
		{"the Prometheus URL twice", "prometheus.url=http://p:9090,flags.prometheus-url=http://q:9090", "flags.prometheus-url"},
		{"a CA from two places", "prometheus.ca.configMapName=a,prometheus.ca.secretName=b", "prometheus.ca"},
		{"openshift as a string", "openshift=yes", "openshift"},
		{"a log level", "logLevel=verbose", "logLevel"},
		{"a URL without a scheme", "prometheus.url=prometheus:9090", "url"},
		{"a bad namespace", "watchNamespaces={Vms_Prod}", "watchNamespaces"},
		{"a bad duration", "guestProbe.interval=often", "interval"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runHelm(t, "template", helmRelease, chartDir, "--namespace", support.SystemNS, "--set", tt.set)
			if err == nil {
				t.Fatalf("helm template --set %s succeeded:\n%.500s", tt.set, out)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("helm template --set %s: %v; want a message with %q", tt.set, err, tt.want)
			}
		})
	}
}

// TestHelmOpenShiftFromAPI: with openshift left null the chart installs
// for OpenShift where the API serves route.openshift.io/v1, and a set value
// decides either way.
func TestHelmOpenShiftFromAPI(t *testing.T) {
	const route = "route.openshift.io/v1"
	for _, tt := range []struct {
		name      string
		args      []string
		openshift bool
	}{
		{"Kubernetes", nil, false},
		{"OpenShift's API", []string{"--api-versions", route}, true},
		{"OpenShift's API, openshift=false", []string{"--api-versions", route, "--set", "openshift=false"}, false},
		{"openshift=true without its API", []string{"--set", "openshift=true"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objs := helmTemplate(t, helmRelease, support.SystemNS, tt.args...)
			sc := managerDeployment(t, objs).Spec.Template.Spec.SecurityContext
			svc := convert[corev1.Service](t, mustFind(t, objs, "Service", "vmobs-controller-manager-metrics"))
			_, serviceCA := svc.Annotations[serviceCAAnnotKey]
			if fixedUID := sc.RunAsUser != nil; fixedUID == tt.openshift || serviceCA != tt.openshift {
				t.Errorf("openshift %v: runAsUser %v, service-CA annotation %v", tt.openshift, sc.RunAsUser, serviceCA)
			}
		})
	}
}

// TestHelmPodDisruptionBudget: one with more than one replica, selecting
// the manager's pods; none with one, so that a drain is never blocked.
func TestHelmPodDisruptionBudget(t *testing.T) {
	objs := helmTemplate(t, helmRelease, support.SystemNS, "--set", "replicaCount=3")
	pdb := convert[policyv1.PodDisruptionBudget](t, mustFind(t, objs, "PodDisruptionBudget", "vmobs-controller-manager"))
	dep := managerDeployment(t, objs)
	if pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != intstr.FromInt32(1) || pdb.Spec.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget spec %+v: want maxUnavailable 1", pdb.Spec)
	}
	if !equality.Semantic.DeepEqual(pdb.Spec.Selector, dep.Spec.Selector) {
		t.Errorf("PodDisruptionBudget selects %v, the Deployment %v", pdb.Spec.Selector, dep.Spec.Selector)
	}
	for _, set := range []string{"replicaCount=1", "replicaCount=3,podDisruptionBudget.enabled=false"} {
		if find(helmTemplate(t, helmRelease, support.SystemNS, "--set", set), "PodDisruptionBudget", "vmobs-controller-manager") != nil {
			t.Errorf("a PodDisruptionBudget with %s", set)
		}
	}
}

// TestHelmNetworkPolicy: off by default; on, it admits the metrics port of
// the manager's pods from the peers the values name.
func TestHelmNetworkPolicy(t *testing.T) {
	if o := find(helmTemplate(t, helmRelease, support.SystemNS), "NetworkPolicy", "vmobs-controller-manager"); o != nil {
		t.Error("a NetworkPolicy by default")
	}
	objs := helmTemplate(t, helmRelease, support.SystemNS, "--set", "networkPolicy.enabled=true",
		"--set", "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=monitoring")
	np := convert[networkingv1.NetworkPolicy](t, mustFind(t, objs, "NetworkPolicy", "vmobs-controller-manager"))
	dep := managerDeployment(t, objs)
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("the NetworkPolicy selects %v, not the manager's pods (%v): %v", np.Spec.PodSelector, dep.Spec.Template.Labels, err)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Ingress) != 1 {
		t.Fatalf("NetworkPolicy spec %+v", np.Spec)
	}
	in := np.Spec.Ingress[0]
	ports := dep.Spec.Template.Spec.Containers[0].Ports
	if len(in.Ports) != 1 || !slices.ContainsFunc(ports, func(p corev1.ContainerPort) bool { return p.Name == in.Ports[0].Port.StrVal && p.ContainerPort == 8443 }) {
		t.Errorf("ingress ports %+v: want the container's metrics port (%+v)", in.Ports, ports)
	}
	if len(in.From) != 1 || in.From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" {
		t.Errorf("ingress from %+v", in.From)
	}
}

// TestHelmTestHook: `helm test` runs a pod that scrapes the metrics
// Service with a token bound to the metrics-reader ClusterRole, under the
// restricted Pod Security Standard; `helm template --skip-tests` and `helm
// install` leave it out.
func TestHelmTestHook(t *testing.T) {
	objs := helmTemplateTests(t)
	pod := convert[corev1.Pod](t, mustFind(t, objs, "Pod", "vmobs-test-metrics"))
	sa := mustFind(t, objs, "ServiceAccount", "vmobs-test-metrics")
	crb := convert[rbacv1.ClusterRoleBinding](t, mustFind(t, objs, "ClusterRoleBinding", "vmobs-test-metrics"))
	for _, o := range []metav1.Object{&pod.ObjectMeta, sa, &crb.ObjectMeta} {
		if o.GetAnnotations()["helm.sh/hook"] != "test" {
			t.Errorf("%s: annotations %v, want helm.sh/hook: test", o.GetName(), o.GetAnnotations())
		}
	}
	mustFind(t, objs, "ClusterRole", crb.RoleRef.Name) // the metrics reader, which the chart creates
	if r := mustFind(t, objs, "ClusterRole", crb.RoleRef.Name); !strings.HasSuffix(r.GetName(), "metrics-reader") {
		t.Errorf("the test binds ClusterRole %s", r.GetName())
	}
	if len(crb.Subjects) != 1 || crb.Subjects[0].Name != pod.Spec.ServiceAccountName || crb.Subjects[0].Namespace != support.SystemNS {
		t.Errorf("binding subjects %+v, pod ServiceAccount %s", crb.Subjects, pod.Spec.ServiceAccountName)
	}
	script := strings.Join(pod.Spec.Containers[0].Command, " ")
	svc := mustFind(t, objs, "Service", "vmobs-controller-manager-metrics")
	if !strings.Contains(script, "https://"+svc.GetName()+"."+support.SystemNS+".svc:8443/metrics") || !strings.Contains(script, "vmobs_build_info") {
		t.Errorf("the test pod runs %q: want a scrape of Service %s for vmobs_build_info", script, svc.GetName())
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %s", pod.Spec.RestartPolicy)
	}
	c := pod.Spec.Containers[0].SecurityContext
	if !*pod.Spec.SecurityContext.RunAsNonRoot || *c.AllowPrivilegeEscalation || c.Capabilities == nil || c.SeccompProfile == nil {
		t.Errorf("the test pod's security contexts %+v, %+v do not meet the restricted standard", pod.Spec.SecurityContext, c)
	}
	for _, o := range helmTemplate(t, helmRelease, support.SystemNS, "--skip-tests") {
		if o.GetAnnotations()["helm.sh/hook"] == "test" {
			t.Errorf("%s/%s rendered with --skip-tests", o.GetKind(), o.GetName())
		}
	}
	for _, o := range helmTemplateTests(t, "--set", "tests.enabled=false") {
		if o.GetAnnotations()["helm.sh/hook"] == "test" {
			t.Errorf("%s/%s rendered with tests.enabled=false", o.GetKind(), o.GetName())
		}
	}
}

// TestHelmGrafanaDashboards: the fleet dashboard as the sidecar's ConfigMap
// and as a grafana-operator GrafanaDashboard, both holding
// config/grafana/vmobs-fleet.json as it is.
func TestHelmGrafanaDashboards(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(support.RepoRoot(t), "config", "grafana", "vmobs-fleet.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range helmTemplate(t, helmRelease, support.SystemNS) {
		if o.GetKind() == "GrafanaDashboard" || o.GetLabels()["grafana_dashboard"] != "" {
			t.Errorf("%s/%s rendered by default", o.GetKind(), o.GetName())
		}
	}
	objs := helmTemplate(t, helmRelease, support.SystemNS, "--set", "grafana.dashboards.sidecar.enabled=true,grafana.dashboards.grafanaOperator.enabled=true",
		"--set", "grafana.dashboards.namespace=monitoring,grafana.dashboards.annotations.grafana_folder=VMs")
	cm := convert[corev1.ConfigMap](t, mustFind(t, objs, "ConfigMap", "vmobs-grafana-dashboards"))
	if cm.Labels["grafana_dashboard"] != "1" || cm.Namespace != "monitoring" || cm.Annotations["grafana_folder"] != "VMs" {
		t.Errorf("ConfigMap labels %v, namespace %s, annotations %v", cm.Labels, cm.Namespace, cm.Annotations)
	}
	if got := cm.Data["vmobs-fleet.json"]; strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
		t.Errorf("the ConfigMap's vmobs-fleet.json (%d bytes) is not config/grafana's (%d bytes)", len(got), len(want))
	}
	gd := mustFind(t, objs, "GrafanaDashboard", "vmobs-fleet-dashboard")
	if gd.GetAPIVersion() != "grafana.integreatly.org/v1beta1" || gd.GetNamespace() != "monitoring" {
		t.Errorf("GrafanaDashboard %s in %s", gd.GetAPIVersion(), gd.GetNamespace())
	}
	var got, wantJSON any
	if err := json.Unmarshal([]byte(str(gd, "spec", "json")), &got); err != nil {
		t.Fatalf("the GrafanaDashboard's json: %v", err)
	}
	if err := json.Unmarshal(want, &wantJSON); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(got, wantJSON) {
		t.Error("the GrafanaDashboard's json is not config/grafana/vmobs-fleet.json")
	}
	if sel, _, _ := unstructured.NestedStringMap(gd.Object, "spec", "instanceSelector", "matchLabels"); sel["dashboards"] != "grafana" {
		t.Errorf("instanceSelector %v", sel)
	}
}

// TestHelmRunbooksAtTheReleaseTag: each alert's runbook_url points at a
// runbook that exists, on main for an unreleased chart, at the tag of a
// packaged release's appVersion, or at prometheus.rule.runbookBaseURL.
func TestHelmRunbooksAtTheReleaseTag(t *testing.T) {
	dir := t.TempDir()
	if out, err := runHelm(t, "package", chartDir, "--version", "1.2.3", "--app-version", "v1.2.3", "--destination", dir); err != nil {
		t.Fatalf("helm package: %v\n%s", err, out)
	}
	packaged := filepath.Join(dir, "vmobs-1.2.3.tgz")
	render := func(chart string, set string) []string {
		out, err := runHelm(t, "template", helmRelease, chart, "--namespace", support.SystemNS, "--set", "prometheus.rule.enabled=true"+set)
		if err != nil {
			t.Fatal(err)
		}
		rule := mustFind(t, decodeManifests(t, out), "PrometheusRule", "vmobs-alerts")
		groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
		var urls []string
		for _, g := range groups {
			for _, r := range g.(map[string]any)["rules"].([]any) {
				if u := nested(r.(map[string]any), "annotations", "runbook_url"); u != "" {
					urls = append(urls, u)
				}
			}
		}
		if len(urls) == 0 {
			t.Fatal("no alert has a runbook_url")
		}
		return urls
	}
	for _, tt := range []struct{ name, chart, set, base string }{
		{"unreleased", chartDir, "", "https://github.com/vmobs/vmobs/blob/main/docs/runbooks/"},
		{"v1.2.3", packaged, "", "https://github.com/vmobs/vmobs/blob/v1.2.3/docs/runbooks/"},
		{"a mirror", packaged, ",prometheus.rule.runbookBaseURL=https://wiki.example.com/vmobs", "https://wiki.example.com/vmobs/"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, u := range render(tt.chart, tt.set) {
				page, ok := strings.CutPrefix(u, tt.base)
				if !ok {
					t.Errorf("runbook_url %s, want it under %s", u, tt.base)
					continue
				}
				if _, err := os.Stat(filepath.Join(support.RepoRoot(t), "docs", "runbooks", page)); err != nil {
					t.Errorf("runbook_url %s: %v", u, err)
				}
			}
		})
	}
}

// managerRoleYAML is config/rbac/role.yaml, the manager's rules as `make
// manifests` generates them.
func managerRoleYAML(t *testing.T) rbacv1.ClusterRole {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(support.RepoRoot(t), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(b, &role); err != nil {
		t.Fatal(err)
	}
	return role
}

// ruleTriples expands RBAC rules into group/resource/verb triples.
func ruleTriples(rules []rbacv1.PolicyRule) map[string]bool {
	out := map[string]bool{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out[g+"/"+res+":"+v] = true
				}
			}
		}
	}
	return out
}

// TestHelmNamespacedRoles: with watchNamespaces the manager's rights on
// namespaced objects are Roles in those namespaces and its ClusterRole
// holds only cluster-scoped resources; together they grant exactly
// config/rbac/role.yaml's rules.
func TestHelmNamespacedRoles(t *testing.T) {
	role := managerRoleYAML(t)
	want := ruleTriples(role.Rules)
	clusterScoped := map[string]bool{"/nodes": true, "observability.vmobs.io/nodeobservations": true, "observability.vmobs.io/nodeobservations/status": true, "observability.vmobs.io/vmincidents": true, "observability.vmobs.io/vmincidents/status": true, "authentication.k8s.io/tokenreviews": true, "authorization.k8s.io/subjectaccessreviews": true}

	objs := helmTemplate(t, helmRelease, support.SystemNS, "--set", "watchNamespaces={vms-prod,vms-dev}")
	cr := convert[rbacv1.ClusterRole](t, mustFind(t, objs, "ClusterRole", "vmobs-manager-role"))
	for triple := range ruleTriples(cr.Rules) {
		gr, _, _ := strings.Cut(triple, ":")
		if !clusterScoped[gr] {
			t.Errorf("the ClusterRole grants %s with watchNamespaces set", triple)
		}
	}
	for _, ns := range []string{"vms-prod", "vms-dev"} {
		var r *rbacv1.Role
		var rb *rbacv1.RoleBinding
		for _, o := range objs {
			if o.GetNamespace() == ns && o.GetKind() == "Role" {
				r = convert[rbacv1.Role](t, o)
			}
			if o.GetNamespace() == ns && o.GetKind() == "RoleBinding" {
				rb = convert[rbacv1.RoleBinding](t, o)
			}
		}
		if r == nil || rb == nil {
			t.Fatalf("no Role and RoleBinding in %s", ns)
		}
		if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != r.Name || len(rb.Subjects) != 1 ||
			rb.Subjects[0].Name != support.ServiceAccount || rb.Subjects[0].Namespace != support.SystemNS {
			t.Errorf("RoleBinding %s/%s: roleRef %+v, subjects %+v", ns, rb.Name, rb.RoleRef, rb.Subjects)
		}
		got := ruleTriples(append(slices.Clone(cr.Rules), r.Rules...))
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("in %s the ClusterRole and the Role grant %v, role.yaml %v", ns, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
	}
	// Without it, the ClusterRole is role.yaml's and there is no such Role.
	objs = helmTemplate(t, helmRelease, support.SystemNS)
	cr = convert[rbacv1.ClusterRole](t, mustFind(t, objs, "ClusterRole", "vmobs-manager-role"))
	if !equality.Semantic.DeepEqual(cr.Rules, role.Rules) {
		t.Errorf("ClusterRole rules %+v, want role.yaml's", cr.Rules)
	}
	for _, o := range objs {
		if o.GetKind() == "Role" && o.GetNamespace() != support.SystemNS {
			t.Errorf("Role %s/%s without watchNamespaces", o.GetNamespace(), o.GetName())
		}
	}
}

// TestHelmChartMetadata: Chart.yaml's kubeVersion is enforced, its icon is
// a file of this repository, and the Artifact Hub annotations parse and name
// the chart's CRDs.
func TestHelmChartMetadata(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(support.RepoRoot(t), chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		KubeVersion string            `json:"kubeVersion"`
		Icon        string            `json:"icon"`
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if _, err := runHelm(t, "template", helmRelease, chartDir, "--kube-version", "1.29.0"); err == nil || !strings.Contains(err.Error(), "kubeVersion") {
		t.Errorf("helm template --kube-version 1.29.0 (kubeVersion %q): %v, want a refusal", c.KubeVersion, err)
	}
	if _, err := runHelm(t, "template", helmRelease, chartDir, "--kube-version", "1.30.0"); err != nil {
		t.Errorf("helm template --kube-version 1.30.0: %v", err)
	}
	const raw = "https://raw.githubusercontent.com/vmobs/vmobs/main/"
	icon, ok := strings.CutPrefix(c.Icon, raw)
	if !ok {
		t.Errorf("icon %q is not a file of the repository's main", c.Icon)
	} else if _, err := os.Stat(filepath.Join(support.RepoRoot(t), icon)); err != nil {
		t.Errorf("icon: %v", err)
	}
	for _, key := range []string{"artifacthub.io/links", "artifacthub.io/images", "artifacthub.io/crds", "artifacthub.io/crdsExamples"} {
		var v []map[string]any
		if err := yaml.UnmarshalStrict([]byte(c.Annotations[key]), &v); err != nil || len(v) == 0 {
			t.Errorf("%s: %v (%q)", key, err, c.Annotations[key])
		}
	}
	var crds []struct{ Name string }
	_ = yaml.Unmarshal([]byte(c.Annotations["artifacthub.io/crds"]), &crds)
	files, _ := filepath.Glob(filepath.Join(support.RepoRoot(t), chartDir, "crds", "*.yaml"))
	if len(crds) != len(files) {
		t.Errorf("artifacthub.io/crds names %d CRDs, crds/ has %d", len(crds), len(files))
	}
	for _, crd := range crds {
		// controller-gen names the file GROUP_PLURAL.yaml.
		plural, group, _ := strings.Cut(crd.Name, ".")
		if !slices.Contains(files, filepath.Join(support.RepoRoot(t), chartDir, "crds", group+"_"+plural+".yaml")) {
			t.Errorf("artifacthub.io/crds names %s, which crds/ lacks", crd.Name)
		}
	}
}

// TestHelmNamespacedRolesOnAPIServer installs the chart with watchNamespaces
// onto the test control plane and asks the API server's own authorizer
// (SubjectAccessReviews) what the manager's ServiceAccount may do: every
// rule of config/rbac/role.yaml in the watched namespace (cluster-wide for
// the cluster-scoped ones), and none of the namespaced ones in a namespace
// it does not watch.
func TestHelmNamespacedRolesOnAPIServer(t *testing.T) {
	_, admin, kubeconfig := helmControlPlane(t)
	ctx := t.Context()
	const watched, other = "vms-watched", "vms-other"
	for _, ns := range []string{support.SystemNS, watched, other} {
		support.MustCreate(ctx, t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	if out, err := runHelm(t, "install", helmRelease, chartDir, "--namespace", support.SystemNS, "--kubeconfig", kubeconfig,
		"--set", "watchNamespaces={"+watched+"}"); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}

	role := managerRoleYAML(t)
	user := "system:serviceaccount:" + support.SystemNS + ":" + support.ServiceAccount
	allowed := func(ns, group, resource, verb string) bool {
		res, sub, _ := strings.Cut(resource, "/")
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   user,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + support.SystemNS, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Group: group, Resource: res, Subresource: sub, Verb: verb,
			},
		}}
		if err := admin.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		return sar.Status.Allowed
	}
	clusterScoped := map[string]bool{"nodes": true, "nodeobservations": true, "nodeobservations/status": true, "vmincidents": true, "vmincidents/status": true, "tokenreviews": true, "subjectaccessreviews": true}
	n := 0
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					n++
					if clusterScoped[res] {
						if !allowed("", g, res, v) {
							t.Errorf("%s may not %s %s.%s cluster-wide", user, v, res, g)
						}
						continue
					}
					if !allowed(watched, g, res, v) {
						t.Errorf("%s may not %s %s.%s in the watched namespace %s", user, v, res, g, watched)
					}
					if allowed(other, g, res, v) {
						t.Errorf("%s may %s %s.%s in %s, which it does not watch", user, v, res, g, other)
					}
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("role.yaml has %d rules", n)
	}
}

// helmControlPlane starts a test control plane for `helm install` and
// writes a kubeconfig for it.
func helmControlPlane(t *testing.T) (*testenv.Env, client.Client, string) {
	t.Helper()
	env, admin := testenv.StartForTest(t, testenv.Options{})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.Kubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	return env, admin, kubeconfig
}
