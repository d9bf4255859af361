package packaging

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

// appliedOverlays are the kustomizations a user applies, in an order that
// works (the CRD and namespace first); bases holds the ones that are only
// part of another, each with the overlay it is applied through.
var (
	appliedOverlays = []string{"crd", "default", "prometheus", "kube-prometheus-stack", "certmanager", "openshift-user-workload", "openshift", "grafana", "shards", "samples"}
	bases           = map[string]string{
		"manager": "default", "rbac": "default", "components/metrics-cert": "certmanager",
		"components/openshift-service-ca": "openshift", "shards/shard-a": "shards", "shards/shard-b": "shards",
	}
)

// TestOverlaysOnAPIServer applies every kustomization under config/ with
// the real kubectl (`kubectl apply --server-side --validate=strict -k`) on
// a real kube-apiserver that serves prometheus-operator's and cert-manager's
// CRDs, generated from their API types (test/crds, hack/monitoring-crds.sh):
// the API server must accept every object, and strict validation refuses
// any field the CRDs' schemas do not know rather than dropping it.
func TestOverlaysOnAPIServer(t *testing.T) {
	root := support.RepoRoot(t)
	var found []string
	err := filepath.WalkDir(filepath.Join(root, "config"), func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "kustomization.yaml" {
			rel, _ := filepath.Rel(filepath.Join(root, "config"), filepath.Dir(path))
			found = append(found, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range found {
		if !slices.Contains(appliedOverlays, dir) && bases[dir] == "" {
			t.Errorf("config/%s is neither applied by this test nor a base of an applied overlay: add it to appliedOverlays or bases", dir)
		}
	}

	env, admin := testenv.StartForTest(t, testenv.Options{ExtraCRDDirs: testenv.MonitoringCRDDirs()})
	ctx := context.Background()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.Kubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	// The samples' namespace.
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vms-prod"}}); err != nil {
		t.Fatal(err)
	}
	apply := func(args ...string) (string, error) {
		return testenv.Kubectl(kubeconfig, append([]string{"apply", "--server-side", "--force-conflicts", "--field-manager=vmobs-test", "--validate=strict"}, args...)...)
	}
	for _, dir := range appliedOverlays {
		out, err := apply("-k", filepath.Join(root, "config", dir))
		if err != nil {
			t.Errorf("kubectl apply -k config/%s: %v\n%s", dir, err, out)
			continue
		}
		t.Logf("config/%s:\n%s", dir, strings.TrimSpace(out))
	}

	// What the API server stored is what we wrote: the scrape's token from
	// the Secret (never a file), the TLS of the last overlay applied
	// (config/openshift: the service CA's bundle), the Secret's type.
	sm := &unstructured.Unstructured{}
	sm.SetGroupVersionKind(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"})
	if err := admin.Get(ctx, client.ObjectKey{Namespace: support.SystemNS, Name: "vmobs-controller-manager-metrics-monitor"}, sm); err != nil {
		t.Fatal(err)
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("ServiceMonitor endpoints: %v", eps)
	}
	ep := eps[0].(map[string]any)
	if _, ok := ep["bearerTokenFile"]; ok {
		t.Error("the ServiceMonitor uses bearerTokenFile, which OpenShift's user-workload monitoring refuses")
	}
	if name, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "name"); name != "vmobs-metrics-reader-token" {
		t.Errorf("ServiceMonitor authorization credentials %q", name)
	}
	if cm, _, _ := unstructured.NestedString(ep, "tlsConfig", "ca", "configMap", "name"); cm != "vmobs-service-ca" {
		t.Errorf("ServiceMonitor tlsConfig after config/openshift: %v", ep["tlsConfig"])
	}
	secret := &corev1.Secret{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: support.SystemNS, Name: "vmobs-metrics-reader-token"}, secret); err != nil {
		t.Fatal(err)
	}
	if secret.Type != corev1.SecretTypeServiceAccountToken || secret.Annotations[corev1.ServiceAccountNameKey] != "vmobs-metrics-reader" {
		t.Errorf("token Secret: type %s, annotations %v", secret.Type, secret.Annotations)
	}

	// The schemas are enforced: a misspelt field and a malformed duration
	// are refused, not dropped.
	for name, doc := range map[string]string{
		"unknown ServiceMonitor field": `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: typo, namespace: vmobs-system}
spec:
  selector: {matchLabels: {app: x}}
  endpoints:
  - port: https
    tlsConfig: {insecureSkipVerifyy: true}
`,
		"PrometheusRule with a malformed for": `apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: malformed, namespace: vmobs-system}
spec:
  groups:
  - name: g
    rules:
    - alert: A
      expr: vector(1)
      for: 5 minutes
`,
	} {
		f := filepath.Join(t.TempDir(), "bad.yaml")
		if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := apply("-f", f); err == nil {
			t.Errorf("%s: accepted\n%s", name, out)
		} else {
			t.Logf("%s: refused as expected: %v", name, err)
		}
	}
}
