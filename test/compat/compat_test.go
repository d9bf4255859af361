// Package compat runs a VM's everyday life (support.EverydayLife: boot,
// live migration, a failed migration, a drain that cannot migrate it, a
// VMI failure, a stop) on the CRDs of every KubeVirt release vmobs
// supports, with the simulator playing what that release writes
// (docs/compatibility.md). The API server prunes what an
// older release's schema does not know, as a cluster of that release would,
// so a rule that leans on a newer field shows here as a wrong verdict.
package compat

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/test/support"
)

// newIn is the first release whose VMI schema has the field: the check
// that the control plane runs the release's CRDs, not the newest.
var newIn = map[string]string{
	"changedBlockTracking": "v1.7", // kv:staging/src/kubevirt.io/api/core/v1/types.go@v1.7.0
}

func TestKubeVirtReleases(t *testing.T) {
	if err := testenv.CheckAssets(); err != nil {
		t.Fatal(err)
	}
	for _, release := range testenv.KubeVirtReleases {
		t.Run(release, func(t *testing.T) { everydayLife(t, release) })
	}
}

func everydayLife(t *testing.T, release string) {
	g := support.NewG(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	env, k8s := testenv.StartForTest(t, testenv.Options{KubeVirt: release})

	for field, since := range newIn {
		_, has := vmiStatusProperty(ctx, g, k8s, field)
		g.Expect(has).To(Equal(!simulator.ReleaseOlder(release, since)),
			"the VMI CRD of %s has status.%s = %v: is test/crds/kubevirt-%s installed?", release, field, has, release)
	}

	support.EverydayLife(t, env.Config, k8s, release)
}

// vmiStatusProperty reads the installed VMI CRD's schema of status.field.
func vmiStatusProperty(ctx context.Context, g Gomega, c client.Client, field string) (any, bool) {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	g.Expect(c.Get(ctx, client.ObjectKey{Name: "virtualmachineinstances.kubevirt.io"}, crd)).To(Succeed())
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	g.Expect(versions).NotTo(BeEmpty())
	v, _ := versions[0].(map[string]any)
	p, found, _ := unstructured.NestedFieldNoCopy(v, "schema", "openAPIV3Schema", "properties", "status", "properties", field)
	return p, found
}
