// Package minkube runs vmobs on the oldest Kubernetes it supports
// (docs/compatibility.md): kube-apiserver of the release the Helm chart's
// kubeVersion names, built by `make test-min-kube`, with vmobs' CRDs and
// those of the oldest KubeVirt release it supports. It checks that the API
// server serves and enforces what vmobs installs, and that the manager
// gives a VM's everyday life (support.EverydayLife) the verdicts it gives
// on the test control plane's release.
package minkube

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/yaml"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

// assetsEnv names the directory of the old control plane, which `make
// test-min-kube` builds and sets.
const assetsEnv = "MIN_KUBE_ASSETS"

func TestMinimumKubernetes(t *testing.T) {
	dir := os.Getenv(assetsEnv)
	if dir == "" {
		t.Skipf("%s is not set: `make test-min-kube` builds the oldest supported kube-apiserver and runs this test", assetsEnv)
	}
	t.Setenv("KUBEBUILDER_ASSETS", dir)
	g := support.NewG(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	oldest := testenv.KubeVirtReleases[0]
	env, k8s := testenv.StartForTest(t, testenv.Options{KubeVirt: oldest})

	// The API server is the release the chart names as its minimum.
	minimum := chartMinimum(t)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	v, err := dc.ServerVersion()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v.Major+"."+v.Minor).To(Equal(minimum), "kube-apiserver %s in %s, the chart's kubeVersion says %s", v.GitVersion, dir, minimum)
	t.Logf("kube-apiserver %s", v.GitVersion)

	// Every CRD of config/crd is served.
	for _, kind := range crdKinds(t) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(kind)
		g.Expect(k8s.List(ctx, list)).To(Succeed(), "listing %s", kind)
	}

	// The CRD's CEL rule is enforced.
	g.Expect(k8s.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "cel"},
	}})).To(Succeed())
	bad := &v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Namespace: "cel", Name: "vm1"}, Spec: v1alpha1.VMObservationSpec{VMName: "vm2"}}
	err = k8s.Create(ctx, bad)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "a VMObservation whose vmName differs from its name: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.vmName must equal metadata.name"))

	// The manager on a VM's everyday life, with the simulator playing the
	// oldest KubeVirt release.
	support.EverydayLife(t, env.Config, k8s, oldest)
}

// crdKinds are the list kinds of the CRDs in config/crd/bases, each at
// its served versions.
func crdKinds(t *testing.T) []schema.GroupVersionKind {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	var out []schema.GroupVersionKind
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(b, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Served {
				out = append(out, schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.ListKind})
			}
		}
	}
	return out
}

// chartMinimum is the major.minor of the Helm chart's kubeVersion
// (">=1.30.0-0"), the minimum docs/compatibility.md states.
func chartMinimum(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "charts", "vmobs", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		KubeVersion string `json:"kubeVersion"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^>=\s*(\d+\.\d+)\.\d+(-0)?$`).FindStringSubmatch(chart.KubeVersion)
	if m == nil {
		t.Fatalf("Chart.yaml's kubeVersion %q is not >=X.Y.Z", chart.KubeVersion)
	}
	return m[1]
}
