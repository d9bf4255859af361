// Package compat runs a VM's everyday life — boot, live migration, a failed
// migration, a drain that cannot migrate it, a stop — on the CRDs of every
// KubeVirt release vmobs supports, with the simulator playing what that
// release writes (docs/compatibility.md). The API server prunes what an
// older release's schema does not know, as a cluster of that release would,
// so a rule that leans on a newer field shows here as a wrong verdict.
package compat

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/testenv"
	"github.com/vmobs/vmobs/internal/verdict"
)

const vm = "vm"

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
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	env, k8s := testenv.StartForTest(t, testenv.Options{KubeVirt: release})

	for field, since := range newIn {
		_, has := vmiStatusProperty(ctx, g, k8s, field)
		g.Expect(has).To(Equal(!simulator.ReleaseOlder(release, since)),
			"the VMI CRD of %s has status.%s = %v: is test/crds/kubevirt-%s installed?", release, field, has, release)
	}

	sim := simulator.New(k8s, simulator.WithSeed(7), simulator.WithKubeVirtRelease(release))
	opts := app.InProcessOptions()
	opts.Policy = verdict.DefaultPolicy()
	opts.Policy.HeartbeatTimeout = 10 * time.Second
	mgr, err := app.StartInProcess(ctx, env.Config, opts)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(mgr.Stop()).To(Succeed()) }()

	nodes := []string{"node-a", "node-b"}
	for _, n := range nodes {
		g.Expect(sim.AddNode(ctx, n)).To(Succeed())
	}
	// virt-handler's heartbeat on every node, so the node layer reads the
	// same on every release.
	go sim.RunHeartbeats(ctx, simulator.Heartbeats{Every: time.Second, Nodes: func() []string { return nodes }})

	observation := func(ns string) func() (*v1alpha1.VMObservation, error) {
		return func() (*v1alpha1.VMObservation, error) {
			o := &v1alpha1.VMObservation{}
			return o, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: vm}, o)
		}
	}
	boot := func(ns string, mods ...func(*simulator.VMSpec)) {
		g.Expect(sim.EnsureNamespace(ctx, ns)).To(Succeed())
		spec := simulator.VMSpec{Namespace: ns, Name: vm, GuestAgent: true, Interfaces: 1}
		for _, m := range mods {
			m(&spec)
		}
		g.Expect(sim.CreateVM(ctx, spec)).To(Succeed())
		g.Expect(sim.Boot(ctx, ns, vm, "node-a")).To(Succeed())
		g.Eventually(observation(ns)).Should(verdictIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
	}

	t.Run("boot and live migration", func(t *testing.T) {
		boot("migrate")
		_, err := sim.Migrate(ctx, "migrate", vm, "node-b", simulator.MigrationSucceeds)
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(observation("migrate")).Should(And(
			verdictIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning),
			WithTransform(func(o *v1alpha1.VMObservation) string { return o.Status.VMI.NodeName }, Equal("node-b")),
			WithTransform(func(o *v1alpha1.VMObservation) string { return o.Status.Migration.Phase }, Equal("Succeeded")),
		))
	})

	t.Run("failed migration", func(t *testing.T) {
		boot("migfail")
		_, err := sim.Migrate(ctx, "migfail", vm, "node-b", simulator.MigrationFails)
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(observation("migfail")).Should(verdictIs(v1alpha1.VerdictDegraded, v1alpha1.ReasonMigrationFailed))
	})

	// Before v1.7 virt-controller sets no EvictionRequested condition:
	// status.evacuationNodeName alone says a drain wants the VM gone.
	t.Run("drain of a VM that cannot migrate", func(t *testing.T) {
		boot("evict", func(s *simulator.VMSpec) { s.HostDevice = true })
		g.Expect(sim.Evict(ctx, "evict", vm)).To(Succeed())
		g.Eventually(observation("evict")).Should(And(
			layerIs(v1alpha1.VerdictDegraded, v1alpha1.ReasonEvictionBlocked),
			WithTransform(func(o *v1alpha1.VMObservation) []string { return o.Status.LiveMigratable.Reasons },
				ContainElement("HostDeviceNotLiveMigratable")),
		))
	})

	t.Run("stop", func(t *testing.T) {
		boot("stop")
		g.Expect(sim.Stop(ctx, "stop", vm)).To(Succeed())
		g.Eventually(observation("stop")).Should(verdictIs(v1alpha1.VerdictSuspended, v1alpha1.ReasonStopped))
	})
}

func verdictIs(v v1alpha1.Verdict, reason string) OmegaMatcher {
	return WithTransform(func(o *v1alpha1.VMObservation) string {
		return fmt.Sprintf("%s/%s", o.Status.Verdict, o.Status.Reason)
	}, Equal(fmt.Sprintf("%s/%s", v, reason)))
}

// layerIs matches the control-plane layer's verdict and reason.
func layerIs(v v1alpha1.Verdict, reason string) OmegaMatcher {
	return WithTransform(func(o *v1alpha1.VMObservation) string {
		if o.Status.Layers == nil {
			return "no layers"
		}
		l := o.Status.Layers.ControlPlane
		return fmt.Sprintf("%s/%s", l.Verdict, l.Reason)
	}, Equal(fmt.Sprintf("%s/%s", v, reason)))
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
