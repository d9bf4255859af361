package packaging

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/diff"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

// The chart and its values file that sets every value (chart-testing's
// ci/*-values.yaml convention; .helmignore keeps ci/ out of the package).
const (
	chartDir          = "charts/vmobs"
	allOptionsValues  = "charts/vmobs/ci/all-options-values.yaml"
	defaultImageRepo  = "ghcr.io/vmobs/vmobs"
	helmRelease       = "vmobs" // names the objects as config/default does
	kustomizeImage    = "ghcr.io/vmobs/vmobs:latest"
	chartPodUser      = 65532 // the image's nonroot user (internal/release.ImageUser)
	serviceCAAnnotKey = "service.beta.openshift.io/serving-cert-secret-name"
)

// runHelm runs bin/helm (`make helm`) from the repository's root with its
// cache, configuration and data in a directory of the test's own, so that
// it never reads or writes the user's Helm settings and repositories.
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(support.BuiltTool(t, "helm", "HELM"), args...)
	cmd.Dir = support.RepoRoot(t)
	home := t.TempDir()
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), errors.New(strings.TrimSpace(errOut.String() + "\n" + err.Error()))
	}
	return out.String(), nil
}

// helmTemplate renders the chart, CRDs included, as `helm install release
// --namespace ns` would install it (without `helm test`'s hooks), with more
// arguments (--values, --set).
func helmTemplate(t *testing.T, release, ns string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out, err := runHelm(t, append([]string{"template", release, chartDir, "--namespace", ns, "--include-crds", "--skip-tests"}, args...)...)
	if err != nil {
		t.Fatalf("helm template %s: %v", strings.Join(args, " "), err)
	}
	return decodeManifests(t, out)
}

// decodeManifests splits a multi-document YAML stream into objects.
func decodeManifests(t *testing.T, stream string) []*unstructured.Unstructured {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(stream)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

func kindNames(objs []*unstructured.Unstructured) map[string]bool {
	out := map[string]bool{}
	for _, o := range objs {
		out[o.GetKind()+"/"+o.GetName()] = true
	}
	return out
}

// TestHelmChartCopies: the CRDs, the manager's ClusterRole rules and the
// alerts in the chart are config/'s, byte for byte (hack/sync-chart.sh).
func TestHelmChartCopies(t *testing.T) {
	cmd := exec.Command(filepath.Join(support.RepoRoot(t), "hack", "sync-chart.sh"), "--check")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%v:\n%s", err, out)
	}
}

// TestHelmLint runs `helm lint --strict`, which fails on warnings too, with
// the default values and with every value set.
func TestHelmLint(t *testing.T) {
	for _, args := range [][]string{nil, {"--values", allOptionsValues}, {"--set", "openshift=true"}} {
		out, err := runHelm(t, append([]string{"lint", "--strict", chartDir}, args...)...)
		if err != nil || !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") {
			t.Errorf("helm lint --strict %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// deliberateDifferences are what the chart, rendered with its default
// values as release "vmobs" in vmobs-system, does differently from
// `kustomize build config/default` (and config/prometheus), on purpose.
// Everything else must be the same; docs/helm.md lists these too.
var deliberateDifferences = map[string]string{
	"Namespace/vmobs-system": "Helm installs into the release's namespace and does not own it " +
		"(`helm install --create-namespace`); docs/helm.md labels it for the restricted Pod Security Standard",
	"image": "the chart's default image is " + defaultImageRepo + ":<appVersion>, config/manager's " +
		kustomizeImage + ", whose tag a release pins",
	"pod securityContext": "the chart fixes runAsUser and runAsGroup to the image's nonroot user, " +
		"which openshift=true leaves to the SecurityContextConstraints",
	"labels": "the chart labels objects as Helm charts do (helm.sh/chart, app.kubernetes.io/instance, " +
		"managed-by Helm), and the Deployment and Service select app.kubernetes.io/instance too, " +
		"so that two releases never select each other's pods",
	"monitoring": "ServiceMonitor and PrometheusRule are off by default (prometheus.*.enabled), " +
		"as config/prometheus is a kustomization of its own",
}

// TestHelmChartMatchesKustomize keeps the chart in step with config/: the
// same objects, RBAC rules, CRDs, pod spec (hence container arguments) and
// monitoring, except for deliberateDifferences.
func TestHelmChartMatchesKustomize(t *testing.T) {
	for what, why := range deliberateDifferences {
		t.Logf("deliberate difference, %s: %s", what, why)
	}
	chart := helmTemplate(t, helmRelease, support.SystemNS)
	kust := render(t, "config/default")

	t.Run("Objects", func(t *testing.T) {
		want, got := kindNames(kust), kindNames(chart)
		for kn := range want {
			if !got[kn] && deliberateDifferences[kn] == "" {
				t.Errorf("config/default has %s, the chart does not", kn)
			}
		}
		for kn := range got {
			if !want[kn] {
				t.Errorf("the chart has %s, config/default does not", kn)
			}
		}
		for _, o := range chart {
			clusterScoped := slices.Contains([]string{"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}, o.GetKind())
			if ns := o.GetNamespace(); clusterScoped != (ns == "") || (!clusterScoped && ns != support.SystemNS) {
				t.Errorf("%s/%s is in namespace %q", o.GetKind(), o.GetName(), ns)
			}
			// Helm installs crds/ as they are, without templating: the
			// CRD has config/crd/bases' labels, and kustomize's part-of.
			if o.GetKind() != "CustomResourceDefinition" && o.GetLabels()["app.kubernetes.io/part-of"] != "vmobs" {
				t.Errorf("%s/%s lacks app.kubernetes.io/part-of=vmobs", o.GetKind(), o.GetName())
			}
		}
		for _, k := range kust {
			if c := find(chart, k.GetKind(), k.GetName()); c != nil {
				checkMetadata(t, k, c)
			}
		}
	})

	t.Run("CRDs", func(t *testing.T) {
		for _, k := range kust {
			if k.GetKind() != "CustomResourceDefinition" {
				continue
			}
			want := convert[apiextensionsv1.CustomResourceDefinition](t, k)
			got := convert[apiextensionsv1.CustomResourceDefinition](t, mustFind(t, chart, k.GetKind(), k.GetName()))
			if !equality.Semantic.DeepEqual(got.Spec, want.Spec) || !maps.Equal(got.Annotations, want.Annotations) {
				t.Errorf("CRD %s differs from config/crd: %s", k.GetName(), diff.Diff(want, got))
			}
		}
	})

	t.Run("RBAC", func(t *testing.T) {
		for _, k := range kust {
			c := mustFindOrSkip(t, chart, k)
			if c == nil {
				continue
			}
			switch k.GetKind() {
			case "ClusterRole":
				want, got := convert[rbacv1.ClusterRole](t, k), convert[rbacv1.ClusterRole](t, c)
				if !equality.Semantic.DeepEqual(got.Rules, want.Rules) || !equality.Semantic.DeepEqual(got.AggregationRule, want.AggregationRule) {
					t.Errorf("ClusterRole %s: %s", k.GetName(), diff.Diff(want.Rules, got.Rules))
				}
			case "Role":
				want, got := convert[rbacv1.Role](t, k), convert[rbacv1.Role](t, c)
				if !equality.Semantic.DeepEqual(got.Rules, want.Rules) {
					t.Errorf("Role %s: %s", k.GetName(), diff.Diff(want.Rules, got.Rules))
				}
			case "ClusterRoleBinding":
				want, got := convert[rbacv1.ClusterRoleBinding](t, k), convert[rbacv1.ClusterRoleBinding](t, c)
				if got.RoleRef != want.RoleRef || !equality.Semantic.DeepEqual(got.Subjects, want.Subjects) {
					t.Errorf("ClusterRoleBinding %s: %s", k.GetName(), diff.Diff(want, got))
				}
			case "RoleBinding":
				want, got := convert[rbacv1.RoleBinding](t, k), convert[rbacv1.RoleBinding](t, c)
				if got.RoleRef != want.RoleRef || !equality.Semantic.DeepEqual(got.Subjects, want.Subjects) {
					t.Errorf("RoleBinding %s: %s", k.GetName(), diff.Diff(want, got))
				}
			}
		}
	})

	t.Run("Deployment", func(t *testing.T) {
		want, got := managerDeployment(t, kust), managerDeployment(t, chart)
		if *got.Spec.Replicas != *want.Spec.Replicas {
			t.Errorf("replicas %d, config/manager %d", *got.Spec.Replicas, *want.Spec.Replicas)
		}
		for k, v := range want.Spec.Selector.MatchLabels {
			if got.Spec.Selector.MatchLabels[k] != v {
				t.Errorf("the chart's Deployment does not select %s=%s: %v", k, v, got.Spec.Selector.MatchLabels)
			}
		}
		for k, v := range want.Spec.Template.Annotations {
			if got.Spec.Template.Annotations[k] != v {
				t.Errorf("pod annotation %s=%q, config/manager %q", k, got.Spec.Template.Annotations[k], v)
			}
		}
		gotPod, wantPod := got.Spec.Template.Spec.DeepCopy(), want.Spec.Template.Spec.DeepCopy()
		chartVersion := chartMetadata(t)
		if img := gotPod.Containers[0].Image; img != defaultImageRepo+":"+chartVersion.AppVersion {
			t.Errorf("image %q, want %s:<appVersion %s>", img, defaultImageRepo, chartVersion.AppVersion)
		}
		if img := wantPod.Containers[0].Image; img != kustomizeImage {
			t.Errorf("config/manager's image is %q: update deliberateDifferences", img)
		}
		gotPod.Containers[0].Image, wantPod.Containers[0].Image = "", ""
		if sc := gotPod.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != chartPodUser || sc.RunAsGroup == nil || *sc.RunAsGroup != chartPodUser {
			t.Errorf("pod securityContext %+v: want runAsUser and runAsGroup %d", sc, chartPodUser)
		} else {
			sc.RunAsUser, sc.RunAsGroup = nil, nil
		}
		// Helm writes the pull policy the chart sets; kustomize leaves the
		// API server's default (IfNotPresent for a tag other than latest).
		if p := gotPod.Containers[0].ImagePullPolicy; p != corev1.PullIfNotPresent {
			t.Errorf("imagePullPolicy %q", p)
		}
		gotPod.Containers[0].ImagePullPolicy = wantPod.Containers[0].ImagePullPolicy
		if !equality.Semantic.DeepEqual(gotPod, wantPod) {
			t.Errorf("the chart's pod spec differs from config/manager's (- config, + chart):\n%s", diff.Diff(wantPod, gotPod))
		}
	})

	t.Run("MetricsService", func(t *testing.T) {
		want := convert[corev1.Service](t, mustFind(t, kust, "Service", "vmobs-controller-manager-metrics"))
		got := convert[corev1.Service](t, mustFind(t, chart, "Service", "vmobs-controller-manager-metrics"))
		if !equality.Semantic.DeepEqual(got.Spec.Ports, want.Spec.Ports) {
			t.Errorf("ports: %s", diff.Diff(want.Spec.Ports, got.Spec.Ports))
		}
		pods := managerDeployment(t, chart).Spec.Template.Labels
		for k, v := range want.Spec.Selector {
			if got.Spec.Selector[k] != v {
				t.Errorf("the chart's Service does not select %s=%s: %v", k, v, got.Spec.Selector)
			}
		}
		for k, v := range got.Spec.Selector {
			if pods[k] != v {
				t.Errorf("the Service selects %s=%s, which the manager's pods lack", k, v)
			}
		}
		if _, ok := got.Annotations[serviceCAAnnotKey]; ok {
			t.Errorf("the service-CA annotation is set without openshift=true")
		}
	})

	t.Run("Monitoring", func(t *testing.T) {
		for _, o := range chart {
			if o.GetKind() == "ServiceMonitor" || o.GetKind() == "PrometheusRule" {
				t.Errorf("%s/%s is rendered with the default values: it needs the Prometheus Operator", o.GetKind(), o.GetName())
			}
		}
		prom := render(t, "config/prometheus")
		on := helmTemplate(t, helmRelease, support.SystemNS, "--set", "prometheus.serviceMonitor.enabled=true,prometheus.rule.enabled=true")
		if want, got := len(kindNames(prom)), len(kindNames(on))-len(kindNames(chart)); got != want {
			t.Errorf("enabling prometheus.* adds %d objects; config/prometheus has %d", got, want)
		}
		for _, p := range prom {
			c := mustFind(t, on, p.GetKind(), p.GetName())
			switch p.GetKind() {
			case "ServiceMonitor":
				// The selector differs (deliberateDifferences["labels"]):
				// checkSelects checks that it selects the chart's Service.
				want, _, _ := unstructured.NestedMap(p.Object, "spec")
				got, _, _ := unstructured.NestedMap(c.Object, "spec")
				delete(want, "selector")
				delete(got, "selector")
				if !equality.Semantic.DeepEqual(got, want) {
					t.Errorf("ServiceMonitor spec: %s", diff.Diff(want, got))
				}
				checkSelects(t, c, convert[corev1.Service](t, mustFind(t, on, "Service", "vmobs-controller-manager-metrics")))
			case "PrometheusRule":
				if !equality.Semantic.DeepEqual(c.Object["spec"], p.Object["spec"]) {
					t.Errorf("PrometheusRule spec: %s", diff.Diff(p.Object["spec"], c.Object["spec"]))
				}
			case "ServiceAccount":
				// The scrape identity: its name and namespace are what the
				// binding and the Secret refer to, checked below.
				if c.GetNamespace() != p.GetNamespace() {
					t.Errorf("ServiceAccount %s in namespace %q, config/prometheus %q", c.GetName(), c.GetNamespace(), p.GetNamespace())
				}
			case "Secret":
				// The token Secret: its type and the annotation naming the
				// ServiceAccount (checkMetadata) make the token controller fill it.
				want, got := convert[corev1.Secret](t, p), convert[corev1.Secret](t, c)
				if got.Type != want.Type || !equality.Semantic.DeepEqual(got.Data, want.Data) || !maps.Equal(got.StringData, want.StringData) {
					t.Errorf("Secret %s: %s", p.GetName(), diff.Diff(want, got))
				}
			case "ClusterRoleBinding":
				want, got := convert[rbacv1.ClusterRoleBinding](t, p), convert[rbacv1.ClusterRoleBinding](t, c)
				if got.RoleRef != want.RoleRef || !equality.Semantic.DeepEqual(got.Subjects, want.Subjects) {
					t.Errorf("ClusterRoleBinding %s: %s", p.GetName(), diff.Diff(want, got))
				}
			default:
				t.Errorf("config/prometheus has a %s: compare it here", p.GetKind())
			}
			checkMetadata(t, p, c)
		}
	})
}

// mustFindOrSkip finds the chart's object of the same kind and name as a
// kustomize one; deliberately missing objects are nil.
func mustFindOrSkip(t *testing.T, chart []*unstructured.Unstructured, k *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	if deliberateDifferences[k.GetKind()+"/"+k.GetName()] != "" {
		return nil
	}
	return mustFind(t, chart, k.GetKind(), k.GetName())
}

// checkMetadata fails unless the chart's object has the labels and
// annotations of config/'s, but for the app.kubernetes.io/ labels, which the
// chart sets as Helm charts do (deliberateDifferences["labels"]): labels
// such as an aggregated ClusterRole's rbac.authorization.k8s.io/aggregate-to-*
// or a Namespace's Pod Security level change what an object does.
func checkMetadata(t *testing.T, want, got *unstructured.Unstructured) {
	t.Helper()
	for k, v := range want.GetLabels() {
		if g, ok := got.GetLabels()[k]; !strings.HasPrefix(k, "app.kubernetes.io/") && (!ok || g != v) {
			t.Errorf("%s/%s: label %s=%q, config/ has %q", got.GetKind(), got.GetName(), k, g, v)
		}
	}
	for k, v := range want.GetAnnotations() {
		if g, ok := got.GetAnnotations()[k]; !ok || g != v {
			t.Errorf("%s/%s: annotation %s=%q, config/ has %q", got.GetKind(), got.GetName(), k, g, v)
		}
	}
}

// configCoverage says, for each directory of config/, how the chart
// carries it: compared with it by TestHelmChartMatchesKustomize, or left
// out on purpose. TestHelmChartCoversConfig fails on a directory that is
// not here, so that a new overlay or component is either carried by the
// chart (and compared) or left out with a reason written down.
var configCoverage = map[string]struct {
	compared bool
	why      string
}{
	"default":            {true, "rendered and compared with the chart's default values"},
	"crd":                {true, "through config/default; crds/ is a copy of config/crd/bases (hack/sync-chart.sh)"},
	"rbac":               {true, "through config/default; files/role.yaml is a copy of config/rbac/role.yaml"},
	"manager":            {true, "through config/default"},
	"prometheus":         {true, "rendered and compared with prometheus.serviceMonitor and prometheus.rule enabled"},
	"samples":            {false, "an example VMObservation and VMObservationPolicy for users to copy next to their VMs"},
	"shards":             {false, "with Helm, one release per shard: vmSelector (docs/helm.md)"},
	"argocd":             {false, "Argo CD's health check, which goes into Argo CD's configuration (docs/argocd.md)"},
	"kube-state-metrics": {false, "kube-state-metrics' configuration for its own deployment"},
	"kube-prometheus-stack": {false, "config/prometheus with the release label; the chart's " +
		"prometheus.additionalLabels (release: <kube-prometheus-stack's release>) does the same (docs/helm.md)"},
	"grafana": {false, "the dashboards' ConfigMap for Grafana's sidecar; the chart carries the same " +
		"dashboards with grafana.dashboards.* (off by default), compared by TestHelmGrafanaDashboards"},
	"components": {false, "metrics-cert, the kustomize component config/certmanager and the OpenShift overlays " +
		"use to mount a metrics certificate, and openshift-service-ca, their service-CA certificate; with Helm: " +
		"extraVolumes, extraVolumeMounts and flags.metrics-cert-dir, and openshift=true (docs/helm.md)"},
	"certmanager": {false, "cert-manager's Issuer and Certificate and the ServiceMonitor trusting them: " +
		"kustomize-only, with Helm the same by hand from docs/helm.md"},
	"openshift": {false, "platform monitoring on OpenShift (namespace label, a Role for prometheus-k8s, " +
		"the service CA bundle): kustomize-only; the chart's openshift=true covers the security context " +
		"and the service-CA certificate (docs/helm.md)"},
	"openshift-user-workload": {false, "user-workload monitoring on OpenShift (the rules reading exported_namespace, " +
		"the domain stats from thanos-querier): kustomize-only, like openshift; with Helm, the chart's flags and " +
		"openshift=true (docs/helm.md, docs/monitoring.md)"},
}

// TestHelmChartCoversConfig fails when config/ gains a directory that
// configCoverage does not decide, or when a directory the chart carries
// gains an object the chart lacks, even one its kustomization.yaml does
// not list yet.
func TestHelmChartCoversConfig(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(support.RepoRoot(t), "config"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dirs = append(dirs, e.Name())
		if _, ok := configCoverage[e.Name()]; !ok {
			t.Errorf("config/%s is new: compare it with the chart, or say why the chart leaves it out, in configCoverage", e.Name())
		}
	}
	for dir := range configCoverage {
		if !slices.Contains(dirs, dir) {
			t.Errorf("configCoverage names config/%s, which is gone", dir)
		}
	}

	chart := helmTemplate(t, helmRelease, support.SystemNS, "--set", "prometheus.serviceMonitor.enabled=true,prometheus.rule.enabled=true")
	n := 0
	for dir, c := range configCoverage {
		if !c.compared {
			continue
		}
		eachYAMLFile(t, filepath.Join(support.RepoRoot(t), "config", dir), func(path string, b []byte) {
			if filepath.Base(path) == "kustomization.yaml" {
				return // kustomize's own file, not an object it applies
			}
			rel, _ := filepath.Rel(support.RepoRoot(t), path)
			for _, o := range decodeManifests(t, string(b)) {
				if o.GetKind() == "" || o.GetAPIVersion() == "" {
					continue // not an object: a promtool test, a patch
				}
				// config/default and config/prometheus prefix every name
				// but the CRDs' with vmobs-.
				name := o.GetName()
				if o.GetKind() != "CustomResourceDefinition" {
					name = "vmobs-" + name
				}
				n++
				if find(chart, o.GetKind(), name) == nil && deliberateDifferences[o.GetKind()+"/"+name] == "" {
					t.Errorf("%s has %s/%s, the chart does not", rel, o.GetKind(), name)
				}
			}
		})
	}
	if n < 10 {
		t.Errorf("found %d objects in the directories of config/ the chart carries", n)
	}
}

// checkSelects fails unless the ServiceMonitor selects the Service, in its
// namespace, by the name of a port it has.
func checkSelects(t *testing.T, sm *unstructured.Unstructured, svc *corev1.Service) {
	t.Helper()
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if len(sel) == 0 {
		t.Errorf("ServiceMonitor %s selects nothing", sm.GetName())
	}
	for k, v := range sel {
		if svc.Labels[k] != v {
			t.Errorf("ServiceMonitor %s selects %s=%s, which Service %s lacks (%v)", sm.GetName(), k, v, svc.Name, svc.Labels)
		}
	}
	if sm.GetNamespace() != svc.Namespace {
		t.Errorf("ServiceMonitor in %q, Service in %q", sm.GetNamespace(), svc.Namespace)
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	for _, ep := range eps {
		port := ep.(map[string]any)["port"]
		if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == port }) {
			t.Errorf("ServiceMonitor scrapes port %v, which Service %s lacks", port, svc.Name)
		}
	}
}

type chartYAML struct {
	Version    string `json:"version"`
	AppVersion string `json:"appVersion"`
}

func chartMetadata(t *testing.T) chartYAML {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(support.RepoRoot(t), chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c chartYAML
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// managerFlags are the flags `vmobs manager -h` lists, from the real
// binary, built once per test process.
var managerFlags = sync.OnceValues(func() (map[string]bool, error) {
	dir, err := os.MkdirTemp("", "vmobs-flags-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin := filepath.Join(dir, "vmobs")
	build := exec.Command("go", "build", "-o", bin, "./cmd/vmobs")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return nil, errors.New(err.Error() + ": " + string(out))
	}
	// -h makes the flag package print the flags and exit 2.
	out, _ := exec.Command(bin, "manager", "-h").CombinedOutput()
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if len(flags) < 10 {
		return nil, errors.New("`vmobs manager -h` lists no flags:\n" + string(out))
	}
	return flags, nil
})

// TestHelmTemplateAllOptions renders the chart with every value set
// (ci/all-options-values.yaml) and checks that each one reaches its object;
// every object decodes strictly into its Go type, so a field in the wrong
// place fails.
func TestHelmTemplateAllOptions(t *testing.T) {
	const ns = "vmobs-full"
	objs := helmTemplate(t, "full", ns, "--values", allOptionsValues)
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			convert[appsv1.Deployment](t, o)
		case "Service":
			convert[corev1.Service](t, o)
		case "ServiceAccount":
			convert[corev1.ServiceAccount](t, o)
		case "ClusterRole":
			convert[rbacv1.ClusterRole](t, o)
		case "ClusterRoleBinding":
			convert[rbacv1.ClusterRoleBinding](t, o)
		case "Role":
			convert[rbacv1.Role](t, o)
		case "RoleBinding":
			convert[rbacv1.RoleBinding](t, o)
		case "CustomResourceDefinition":
			convert[apiextensionsv1.CustomResourceDefinition](t, o)
		case "PodDisruptionBudget": // replicaCount 2
			convert[policyv1.PodDisruptionBudget](t, o)
		case "ServiceMonitor", "PrometheusRule":
		default:
			t.Errorf("unexpected %s/%s: check it here", o.GetKind(), o.GetName())
		}
	}
	// fullnameOverride "obs" names every object.
	wantNames := []string{
		"ServiceAccount/vmobs-manager", // serviceAccount.name
		"Deployment/obs-controller-manager", "Service/obs-controller-manager-metrics",
		"ClusterRole/obs-manager-role", "ClusterRoleBinding/obs-manager-rolebinding",
		"Role/obs-leader-election-role", "RoleBinding/obs-leader-election-rolebinding",
		"ClusterRole/obs-metrics-reader", "ClusterRoleBinding/obs-metrics-reader",
		"ServiceMonitor/obs-controller-manager-metrics-monitor", "PrometheusRule/obs-alerts",
		"PodDisruptionBudget/obs-controller-manager",
		"CustomResourceDefinition/vmobservations.observability.vmobs.io",
		"CustomResourceDefinition/vmobservationpolicies.observability.vmobs.io",
		"CustomResourceDefinition/nodeobservations.observability.vmobs.io",
		"CustomResourceDefinition/vmincidents.observability.vmobs.io",
	}
	if got := slices.Sorted(maps.Keys(kindNames(objs))); !slices.Equal(got, slices.Sorted(slices.Values(wantNames))) {
		t.Errorf("objects %v, want %v", got, wantNames)
	}

	dep := convert[appsv1.Deployment](t, mustFind(t, objs, "Deployment", "obs-controller-manager"))
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	wantArgs := []string{
		"manager", "--leader-elect", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8443",
		"--auto-create=false", "--domain-stats-interval=2m", "--kube-api-qps=7.5",
		"--max-concurrent-reconciles=1000000", "--namespace=vms-prod", "--namespace=vms-dev",
		"--prometheus-url=http://prometheus-operated.monitoring:9090", "--vm-selector=tier in (gold,silver)",
		"--zap-log-level=debug", // heartbeat-timeout: null is left out
	}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args:\n%q\nwant\n%q", c.Args, wantArgs)
	}
	flags, err := managerFlags()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range c.Args[1:] {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !flags[name] {
			t.Errorf("%s: `vmobs manager` has no flag %q", a, name)
		}
	}

	type check struct {
		what      string
		got, want any
	}
	checks := []check{
		{"replicas", *dep.Spec.Replicas, int32(2)},
		{"image", c.Image, "registry.example.com/virt/vmobs@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{"imagePullPolicy", c.ImagePullPolicy, corev1.PullAlways},
		{"imagePullSecrets", pod.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "registry-example-com"}}},
		{"serviceAccountName", pod.ServiceAccountName, "vmobs-manager"},
		{"memory limit", c.Resources.Limits.Memory().String(), "512Mi"},
		{"cpu request", c.Resources.Requests.Cpu().String(), "50m"},
		{"env", envNames(c.Env), []string{"GOMEMLIMIT", "GODEBUG"}},
		// openshift=true drops even the UID, GID and fsGroup the values set.
		{"pod runAsUser", pod.SecurityContext.RunAsUser, (*int64)(nil)},
		{"pod runAsGroup", pod.SecurityContext.RunAsGroup, (*int64)(nil)},
		{"pod fsGroup", pod.SecurityContext.FSGroup, (*int64)(nil)},
		{"pod runAsNonRoot", *pod.SecurityContext.RunAsNonRoot, true},
		{"readOnlyRootFilesystem", *c.SecurityContext.ReadOnlyRootFilesystem, true},
		{"pod annotation", dep.Spec.Template.Annotations["example.com/team"], "virt"},
		{"default container", dep.Spec.Template.Annotations["kubectl.kubernetes.io/default-container"], "manager"},
		{"pod label", dep.Spec.Template.Labels["example.com/cost-center"], "42"},
		{"pod name label", dep.Spec.Template.Labels["app.kubernetes.io/name"], "vmo"},
		{"priorityClassName", pod.PriorityClassName, "system-cluster-critical"},
		{"nodeSelector", pod.NodeSelector, map[string]string{"node-role.kubernetes.io/control-plane": ""}},
		{"tolerations", len(pod.Tolerations), 1},
		{"affinity", pod.Affinity != nil && pod.Affinity.PodAntiAffinity != nil, true},
		{"topologySpreadConstraints", len(pod.TopologySpreadConstraints), 1},
		{"volumes", len(pod.Volumes), 1},
		{"volumeMounts", c.VolumeMounts, []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}},
	}
	sa := mustFind(t, objs, "ServiceAccount", "vmobs-manager")
	checks = append(checks, check{"ServiceAccount annotation", sa.GetAnnotations()["example.com/owner"], "platform"})
	svc := convert[corev1.Service](t, mustFind(t, objs, "Service", "obs-controller-manager-metrics"))
	checks = append(checks,
		check{"Service annotation", svc.Annotations["example.com/scrape"], "true"},
		check{"service-CA annotation", svc.Annotations[serviceCAAnnotKey], "obs-controller-manager-metrics-cert"})
	for _, kn := range []string{"ClusterRoleBinding/obs-manager-rolebinding", "RoleBinding/obs-leader-election-rolebinding"} {
		kind, name, _ := strings.Cut(kn, "/")
		subjects, _, _ := unstructured.NestedSlice(mustFind(t, objs, kind, name).Object, "subjects")
		checks = append(checks, check{kn + " subjects", subjects, []any{map[string]any{"kind": "ServiceAccount", "name": "vmobs-manager", "namespace": ns}}})
	}
	reader := convert[rbacv1.ClusterRoleBinding](t, mustFind(t, objs, "ClusterRoleBinding", "obs-metrics-reader"))
	checks = append(checks,
		check{"metrics reader roleRef", reader.RoleRef.Name, "obs-metrics-reader"},
		check{"metrics reader subjects", reader.Subjects, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus-k8s", Namespace: "monitoring"}}})

	sm := mustFind(t, objs, "ServiceMonitor", "obs-controller-manager-metrics-monitor")
	checkSelects(t, sm, svc)
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v", eps)
	}
	ep := eps[0].(map[string]any)
	checks = append(checks,
		check{"ServiceMonitor release label", sm.GetLabels()["release"], "kube-prometheus-stack"},
		check{"ServiceMonitor label", sm.GetLabels()["team"], "virt"},
		check{"interval", ep["interval"], "15s"},
		check{"scrapeTimeout", ep["scrapeTimeout"], "10s"},
		check{"honorLabels", ep["honorLabels"], true},
		check{"bearerTokenFile", ep["bearerTokenFile"], nil},
		check{"authorization", ep["authorization"], map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "vmobs-metrics-reader-token", "key": "token"}}},
		check{"tlsConfig serverName", nested(ep, "tlsConfig", "serverName"), "obs-controller-manager-metrics.vmobs-system.svc"},
		// The chart's own first (job="vmobs" whatever nameOverride
		// makes of the Service's name label), then the values' one.
		check{"relabelings", len(ep["relabelings"].([]any)), 2},
		check{"job relabeling", ep["relabelings"].([]any)[0], map[string]any{"action": "replace", "targetLabel": "job", "replacement": "vmobs"}},
		check{"metricRelabelings", len(ep["metricRelabelings"].([]any)), 1},
	)
	rule := mustFind(t, objs, "PrometheusRule", "obs-alerts")
	checks = append(checks,
		check{"PrometheusRule release label", rule.GetLabels()["release"], "kube-prometheus-stack"},
		check{"PrometheusRule label over the file's", rule.GetLabels()["prometheus"], "platform"},
		check{"PrometheusRule managed-by", rule.GetLabels()["app.kubernetes.io/managed-by"], "Helm"},
	)
	for _, c := range checks {
		if !equality.Semantic.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.what, c.got, c.want)
		}
	}
}

func envNames(env []corev1.EnvVar) []string {
	var out []string
	for _, e := range env {
		out = append(out, e.Name)
	}
	return out
}

// TestHelmTemplateModes renders the chart in the modes a value switches
// and checks what each one changes.
func TestHelmTemplateModes(t *testing.T) {
	tests := []struct {
		name    string
		release string
		set     string
		check   func(t *testing.T, objs []*unstructured.Unstructured)
	}{{
		name: "release name without vmobs prefixes it", release: "prod",
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			dep := convert[appsv1.Deployment](t, mustFind(t, objs, "Deployment", "prod-vmobs-controller-manager"))
			if dep.Spec.Template.Spec.ServiceAccountName != "prod-vmobs-controller-manager" {
				t.Errorf("serviceAccountName %q", dep.Spec.Template.Spec.ServiceAccountName)
			}
			mustFind(t, objs, "ClusterRole", "prod-vmobs-manager-role")
			if dep.Spec.Selector.MatchLabels["app.kubernetes.io/instance"] != "prod" {
				t.Errorf("selector %v", dep.Spec.Selector.MatchLabels)
			}
		},
	}, {
		name: "no RBAC", set: "rbac.create=false",
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			for _, o := range objs {
				if o.GroupVersionKind().Group == rbacv1.GroupName {
					t.Errorf("%s/%s rendered with rbac.create=false", o.GetKind(), o.GetName())
				}
			}
			mustFind(t, objs, "ServiceAccount", "vmobs-controller-manager")
		},
	}, {
		name: "no aggregated roles", set: "rbac.aggregatedRoles=false",
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			for _, o := range objs {
				for k := range o.GetLabels() {
					if strings.HasPrefix(k, "rbac.authorization.k8s.io/aggregate-to-") {
						t.Errorf("%s/%s (%s) rendered with rbac.aggregatedRoles=false", o.GetKind(), o.GetName(), k)
					}
				}
			}
			mustFind(t, objs, "ClusterRole", "vmobs-manager-role")
		},
	}, {
		name: "ServiceMonitor's own scrape identity", release: "prod",
		set: "prometheus.serviceMonitor.enabled=true,metrics.readerSubjects[0].kind=Group,metrics.readerSubjects[0].name=scrapers",
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			mustFind(t, objs, "ServiceAccount", "prod-vmobs-metrics-reader")
			secret := convert[corev1.Secret](t, mustFind(t, objs, "Secret", "prod-vmobs-metrics-reader-token"))
			if secret.Type != corev1.SecretTypeServiceAccountToken || secret.Annotations[corev1.ServiceAccountNameKey] != "prod-vmobs-metrics-reader" {
				t.Errorf("token Secret: type %s, annotations %v", secret.Type, secret.Annotations)
			}
			b := convert[rbacv1.ClusterRoleBinding](t, mustFind(t, objs, "ClusterRoleBinding", "prod-vmobs-metrics-reader"))
			want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prod-vmobs-metrics-reader", Namespace: support.SystemNS}, {Kind: "Group", Name: "scrapers"}}
			if b.RoleRef.Name != "prod-vmobs-metrics-reader" || !equality.Semantic.DeepEqual(b.Subjects, want) {
				t.Errorf("metrics reader binding: roleRef %s, subjects %+v", b.RoleRef.Name, b.Subjects)
			}
			sm := mustFind(t, objs, "ServiceMonitor", "prod-vmobs-controller-manager-metrics-monitor")
			eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
			if len(eps) != 1 || nested(eps[0].(map[string]any), "authorization", "credentials", "name") != secret.Name {
				t.Errorf("ServiceMonitor endpoints %v: want the credentials of Secret %s", eps, secret.Name)
			}
		},
	}, {
		name: "ServiceMonitor with an authorization of one's own",
		set:  "prometheus.serviceMonitor.enabled=true,prometheus.serviceMonitor.authorization.type=Bearer,prometheus.serviceMonitor.authorization.credentials.name=my-token,prometheus.serviceMonitor.authorization.credentials.key=token",
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			for _, kn := range []string{"ServiceAccount/vmobs-metrics-reader", "Secret/vmobs-metrics-reader-token", "ClusterRoleBinding/vmobs-metrics-reader"} {
				if kindNames(objs)[kn] {
					t.Errorf("%s rendered with an authorization of one's own", kn)
				}
			}
			sm := mustFind(t, objs, "ServiceMonitor", "vmobs-controller-manager-metrics-monitor")
			eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
			if len(eps) != 1 || nested(eps[0].(map[string]any), "authorization", "credentials", "name") != "my-token" {
				t.Errorf("ServiceMonitor endpoints %v: want the credentials of Secret my-token", eps)
			}
		},
	}, {
		name: "existing ServiceAccount", set: "serviceAccount.create=false,serviceAccount.name=vm-observer",
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			if find(objs, "ServiceAccount", "vmobs-controller-manager") != nil || find(objs, "ServiceAccount", "vm-observer") != nil {
				t.Error("a ServiceAccount is rendered with serviceAccount.create=false")
			}
			if n := managerDeployment(t, objs).Spec.Template.Spec.ServiceAccountName; n != "vm-observer" {
				t.Errorf("serviceAccountName %q", n)
			}
			b := convert[rbacv1.ClusterRoleBinding](t, mustFind(t, objs, "ClusterRoleBinding", "vmobs-manager-rolebinding"))
			if len(b.Subjects) != 1 || b.Subjects[0].Name != "vm-observer" || b.Subjects[0].Namespace != support.SystemNS {
				t.Errorf("subjects %+v", b.Subjects)
			}
		},
	}, {
		name: "no leader election", set: "leaderElection.enabled=false",
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			if args := managerDeployment(t, objs).Spec.Template.Spec.Containers[0].Args; slices.Contains(args, "--leader-elect") {
				t.Errorf("args %q", args)
			}
		},
	}, {
		name: "image tag", set: "image.tag=v1.2.3,image.repository=quay.io/example/vmobs",
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			if img := managerDeployment(t, objs).Spec.Template.Spec.Containers[0].Image; img != "quay.io/example/vmobs:v1.2.3" {
				t.Errorf("image %q", img)
			}
		},
	}, {
		name: "GOMEMLIMIT of one's own", set: "env[0].name=GOMEMLIMIT,env[0].value=230MiB",
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			env := managerDeployment(t, objs).Spec.Template.Spec.Containers[0].Env
			if len(env) != 1 || env[0].Name != "GOMEMLIMIT" || env[0].Value != "230MiB" {
				t.Errorf("env %+v", env)
			}
		},
	}, {
		name: "OpenShift", set: "openshift=true",
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			sc := managerDeployment(t, objs).Spec.Template.Spec.SecurityContext
			if sc.RunAsUser != nil || sc.RunAsGroup != nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil {
				t.Errorf("pod securityContext %+v", sc)
			}
			svc := convert[corev1.Service](t, mustFind(t, objs, "Service", "vmobs-controller-manager-metrics"))
			if svc.Annotations[serviceCAAnnotKey] != "vmobs-controller-manager-metrics-cert" {
				t.Errorf("Service annotations %v", svc.Annotations)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := tt.release
			if release == "" {
				release = helmRelease
			}
			var args []string
			if tt.set != "" {
				args = []string{"--set", tt.set}
			}
			tt.check(t, helmTemplate(t, release, support.SystemNS, args...))
		})
	}
}

// TestHelmMetricsCertificateAsDocumented renders the chart with the values
// docs/helm.md gives for a metrics certificate (config/certmanager and
// config/openshift are kustomize-only): the manager serves the Secret's
// certificate as config/components/metrics-cert has it, and the
// ServiceMonitor verifies it as config/certmanager's does.
func TestHelmMetricsCertificateAsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(support.RepoRoot(t), "docs", "helm.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Metrics certificate\n")
	_, block, ok2 := strings.Cut(section, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/helm.md has no yaml block under \"## Metrics certificate\"")
	}
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	chart := helmTemplate(t, helmRelease, support.SystemNS, "--values", values)
	kust := render(t, "config/certmanager")
	secret := str(mustFind(t, kust, "Certificate", "vmobs-metrics-cert"), "spec", "secretName")
	servesCertFrom(t, kust, secret)
	servesCertFrom(t, chart, secret)
	if want, got := endpoint(t, kust)["tlsConfig"], endpoint(t, chart)["tlsConfig"]; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("ServiceMonitor tlsConfig: %s", diff.Diff(want, got))
	}
}

// TestHelmTemplateRefuses: values the chart must refuse, with a message
// that names the value, from the schema (values.schema.json) or from the
// templates.
func TestHelmTemplateRefuses(t *testing.T) {
	tests := []struct {
		name, set, want string
	}{
		{"a typo", "replicas=2", "replicas"},
		{"two managers without a leader", "replicaCount=2,leaderElection.enabled=false", "replicaCount above 1 needs leaderElection.enabled"},
		{"a flag the chart sets", "flags.leader-elect=true", "the chart sets --leader-elect itself"},
		{"a flag with its dashes", "flags.--zap-log-level=debug", "--zap-log-level"},
		{"a pull policy", "image.pullPolicy=Sometimes", "pullPolicy"},
		{"a negative replica count", "replicaCount=-1", "replicaCount"},
		{"an unnamed variable", "env[0].value=1", "/env/0"},
		{"a nested typo", "prometheus.serviceMonitor.enable=true", "enable"},
		{"a bad digest", "image.digest=latest", "digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runHelm(t, "template", helmRelease, chartDir, "--namespace", support.SystemNS, "--set", tt.set)
			if err == nil {
				t.Fatalf("helm template --set %s succeeded:\n%s", tt.set, out)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("helm template --set %s: %v; want a message with %q", tt.set, err, tt.want)
			}
		})
	}
}
