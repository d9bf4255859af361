package packaging

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// TestHelmInstallOnAPIServer installs the chart with the real helm onto a
// real kube-apiserver the way docs/helm.md tells a user to, checks that the
// API server holds every object of the release, has the restricted Pod
// Security admission judge the manager's pod, runs the manager with a token
// of the chart's ServiceAccount through a VM's life, and uninstalls.
func TestHelmInstallOnAPIServer(t *testing.T) {
	start := time.Now()
	env, admin, kubeconfig := helmControlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	// testenv installs our CRD for every suite: remove it, so that Helm
	// installs the chart's own (crds/) and the API server judges it.
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	crd.SetName("vmobservations.observability.vmobs.io")
	if err := admin.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := admin.Get(ctx, client.ObjectKeyFromObject(crd), crd.DeepCopy())
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}); err != nil {
		t.Fatalf("the CRD testenv installed is still there: %v", err)
	}

	// The ServiceMonitor and the PrometheusRule need the Prometheus
	// Operator's CRDs: with them under test/crds, the API server judges
	// those two too; without them, TestHelmChartMatchesKustomize and
	// TestHelmTemplateAllOptions check them as helm template renders them.
	monitoring := "prometheus.serviceMonitor.enabled=false,prometheus.rule.enabled=false"
	if files := prometheusOperatorCRDs(t); len(files) == 2 {
		for _, f := range files {
			if out, err := testenv.Kubectl(kubeconfig, "apply", "--server-side", "-f", f); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		}
		monitoring = "prometheus.serviceMonitor.enabled=true,prometheus.rule.enabled=true"
	} else {
		t.Log("no ServiceMonitor and PrometheusRule CRDs under test/crds: the release leaves them out")
	}

	// The namespace, labelled for the restricted Pod Security Standard as
	// docs/helm.md says.
	support.MustCreate(ctx, t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   support.SystemNS,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}})
	out, err := runHelm(t, "install", helmRelease, chartDir, "--namespace", support.SystemNS, "--kubeconfig", kubeconfig, "--set", monitoring)
	if err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	t.Logf("helm install %s --namespace %s:\n%s", helmRelease, support.SystemNS, out)

	t.Run("ObjectsAccepted", func(t *testing.T) {
		got := kindNames(releaseObjects(ctx, t, admin, kubeconfig, helmRelease, support.SystemNS))
		want := kindNames(helmTemplate(t, helmRelease, support.SystemNS, "--set", monitoring))
		for k := range want {
			if strings.HasPrefix(k, "CustomResourceDefinition/") {
				delete(want, k) // not part of the release: crds/
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("the release has %v, helm template renders %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			t.Fatalf("Helm did not install the chart's CRD: %v", err)
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		established := false
		for _, c := range conds {
			c := c.(map[string]any)
			established = established || (c["type"] == "Established" && c["status"] == "True")
		}
		if !established {
			t.Errorf("the chart's CRD is not Established: %v", conds)
		}
	})

	// Every value set, as a second release in a namespace of its own:
	// the API server must accept what each value renders.
	t.Run("AllOptionsAccepted", func(t *testing.T) {
		const ns = "vmobs-full"
		out, err := runHelm(t, "install", "full", chartDir, "--namespace", ns, "--create-namespace", "--kubeconfig", kubeconfig,
			"--values", allOptionsValues, "--set", monitoring)
		if err != nil {
			t.Fatalf("helm install --values %s: %v\n%s", allOptionsValues, err, out)
		}
		releaseObjects(ctx, t, admin, kubeconfig, "full", ns)
	})

	t.Run("PodSecurityRestricted", func(t *testing.T) {
		testPodSecurity(ctx, t, admin, managerDeployment(t, helmTemplate(t, helmRelease, support.SystemNS)))
	})

	// The manager authenticates as a pod of the Deployment would: with a
	// token the API server issued for the chart's ServiceAccount, which
	// it checks exists.
	t.Run("ManagerAsServiceAccount", func(t *testing.T) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: support.SystemNS, Name: support.ServiceAccount}}
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
		if err := admin.SubResource("token").Create(ctx, sa, tr); err != nil {
			t.Fatalf("a token for ServiceAccount %s/%s: %v", support.SystemNS, support.ServiceAccount, err)
		}
		cfg := rest.AnonymousClientConfig(env.Config)
		cfg.BearerToken = tr.Status.Token
		testManagerAsServiceAccount(ctx, t, admin, cfg)
	})

	// helm uninstall removes the release and keeps the CRD (Helm never
	// deletes what crds/ installed), hence the users' VMObservations.
	t.Run("Uninstall", func(t *testing.T) {
		if out, err := runHelm(t, "uninstall", helmRelease, "--namespace", support.SystemNS, "--kubeconfig", kubeconfig, "--wait"); err != nil {
			t.Fatalf("helm uninstall: %v\n%s", err, out)
		}
		dep := &unstructured.Unstructured{}
		dep.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
		if err := admin.Get(ctx, client.ObjectKey{Namespace: support.SystemNS, Name: "vmobs-controller-manager"}, dep); !apierrors.IsNotFound(err) {
			t.Errorf("the Deployment after helm uninstall: %v", err)
		}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			t.Errorf("the CRD after helm uninstall: %v", err)
		}
	})
	t.Logf("chart installed, run and uninstalled in %s", time.Since(start).Round(time.Millisecond))
}

// releaseObjects reads the release's manifest (`helm get manifest`) and
// checks that the API server holds each of its objects.
func releaseObjects(ctx context.Context, t *testing.T, admin client.Client, kubeconfig, release, ns string) []*unstructured.Unstructured {
	t.Helper()
	manifest, err := runHelm(t, "get", "manifest", release, "--namespace", ns, "--kubeconfig", kubeconfig)
	if err != nil {
		t.Fatalf("helm get manifest %s: %v", release, err)
	}
	objs := decodeManifests(t, manifest)
	for _, o := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		if err := admin.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
			t.Errorf("%s %s/%s of release %s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), release, err)
		}
	}
	return objs
}

// prometheusOperatorCRDs finds the ServiceMonitor and PrometheusRule CRDs
// among the third-party CRDs pinned for tests under test/crds.
func prometheusOperatorCRDs(t *testing.T) []string {
	t.Helper()
	var files []string
	root := filepath.Join(support.RepoRoot(t), "test", "crds")
	eachYAMLFile(t, root, func(path string, b []byte) {
		var crd struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if yaml.Unmarshal(b, &crd) == nil && crd.Kind == "CustomResourceDefinition" &&
			(crd.Metadata.Name == "servicemonitors.monitoring.coreos.com" || crd.Metadata.Name == "prometheusrules.monitoring.coreos.com") {
			files = append(files, path)
		}
	})
	return files
}
