package support

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/internal/verdict"
)

// NewG is a Gomega for t that waits up to 30 seconds, polling every 100ms,
// for what the manager writes: the plain `go test` tests' timing (the
// ginkgo suites set theirs with RunSpecs).
func NewG(t *testing.T) *gomega.WithT {
	g := gomega.NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	return g
}

// EverydayLife runs the manager on the API server of cfg, with the
// simulator playing what KubeVirt release writes, and plays a VM's
// everyday life, one subtest each: a boot and a live migration, a failed
// migration, a drain of a VM that cannot migrate, a stop. Each must give
// the verdict it gives on the newest release and the test control plane's
// Kubernetes: test/compat runs it on every KubeVirt release's CRDs,
// test/minkube on the oldest Kubernetes vmobs supports
// (docs/compatibility.md).
func EverydayLife(t *testing.T, cfg *rest.Config, k8s client.Client, release string) {
	t.Helper()
	g := NewG(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	sim := simulator.New(k8s, simulator.WithSeed(7), simulator.WithKubeVirtRelease(release))
	opts := app.InProcessOptions()
	opts.Policy = verdict.DefaultPolicy()
	opts.Policy.HeartbeatTimeout = 10 * time.Second
	mgr, err := app.StartInProcess(ctx, cfg, opts)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	defer func() { g.Expect(mgr.Stop()).To(gomega.Succeed()) }()

	nodes := []string{"node-a", "node-b"}
	for _, n := range nodes {
		g.Expect(sim.AddNode(ctx, n)).To(gomega.Succeed())
	}
	// virt-handler's heartbeat on every node, so the node layer reads the
	// same on every release.
	go sim.RunHeartbeats(ctx, simulator.Heartbeats{Every: time.Second, Nodes: func() []string { return nodes }})

	const vm = "vm"
	observation := func(ns string) func() (*v1alpha1.VMObservation, error) {
		return func() (*v1alpha1.VMObservation, error) {
			o := &v1alpha1.VMObservation{}
			return o, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: vm}, o)
		}
	}
	// boot starts the VM in ns and waits for it to run Healthy; g is the
	// subtest's.
	boot := func(g *gomega.WithT, ns string, mods ...func(*simulator.VMSpec)) {
		g.Expect(sim.EnsureNamespace(ctx, ns)).To(gomega.Succeed())
		spec := simulator.VMSpec{Namespace: ns, Name: vm, GuestAgent: true, Interfaces: 1}
		for _, m := range mods {
			m(&spec)
		}
		g.Expect(sim.CreateVM(ctx, spec)).To(gomega.Succeed())
		g.Expect(sim.Boot(ctx, ns, vm, "node-a")).To(gomega.Succeed())
		g.Eventually(observation(ns)).Should(VerdictIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
	}

	t.Run("boot and live migration", func(t *testing.T) {
		g := NewG(t)
		boot(g, "migrate")
		// The node's own observation is written too.
		g.Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Name: "node-a"}, &v1alpha1.NodeObservation{})
		}).Should(gomega.Succeed())
		_, err := sim.Migrate(ctx, "migrate", vm, "node-b", simulator.MigrationSucceeds)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Eventually(observation("migrate")).Should(gomega.And(
			VerdictIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning),
			gomega.WithTransform(func(o *v1alpha1.VMObservation) string { return o.Status.VMI.NodeName }, gomega.Equal("node-b")),
			gomega.WithTransform(func(o *v1alpha1.VMObservation) string { return o.Status.Migration.Phase }, gomega.Equal("Succeeded")),
		))
	})

	t.Run("failed migration", func(t *testing.T) {
		g := NewG(t)
		boot(g, "migfail")
		_, err := sim.Migrate(ctx, "migfail", vm, "node-b", simulator.MigrationFails)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Eventually(observation("migfail")).Should(VerdictIs(v1alpha1.VerdictDegraded, v1alpha1.ReasonMigrationFailed))
	})

	// Before v1.7 virt-controller sets no EvictionRequested condition:
	// status.evacuationNodeName alone says a drain wants the VM gone.
	t.Run("drain of a VM that cannot migrate", func(t *testing.T) {
		g := NewG(t)
		boot(g, "evict", func(s *simulator.VMSpec) { s.HostDevice = true })
		g.Expect(sim.Evict(ctx, "evict", vm)).To(gomega.Succeed())
		g.Eventually(observation("evict")).Should(gomega.And(
			controlPlaneIs(v1alpha1.VerdictDegraded, v1alpha1.ReasonEvictionBlocked),
			gomega.WithTransform(func(o *v1alpha1.VMObservation) []string { return o.Status.LiveMigratable.Reasons },
				gomega.ContainElement("HostDeviceNotLiveMigratable")),
		))
	})

	t.Run("VMI failure", func(t *testing.T) {
		g := NewG(t)
		boot(g, "fail")
		g.Expect(sim.FailVMI(ctx, "fail", vm)).To(gomega.Succeed())
		g.Eventually(observation("fail")).Should(VerdictIs(v1alpha1.VerdictFailed, v1alpha1.ReasonVMIFailed))
	})

	t.Run("stop", func(t *testing.T) {
		g := NewG(t)
		boot(g, "stop")
		g.Expect(sim.Stop(ctx, "stop", vm)).To(gomega.Succeed())
		g.Eventually(observation("stop")).Should(VerdictIs(v1alpha1.VerdictSuspended, v1alpha1.ReasonStopped))
	})
}

// VerdictIs matches a VMObservation's verdict and reason.
func VerdictIs(v v1alpha1.Verdict, reason string) gomega.OmegaMatcher {
	return gomega.WithTransform(func(o *v1alpha1.VMObservation) string {
		return fmt.Sprintf("%s/%s", o.Status.Verdict, o.Status.Reason)
	}, gomega.Equal(fmt.Sprintf("%s/%s", v, reason)))
}

// controlPlaneIs matches the control-plane layer's verdict and reason.
func controlPlaneIs(v v1alpha1.Verdict, reason string) gomega.OmegaMatcher {
	return gomega.WithTransform(func(o *v1alpha1.VMObservation) string {
		if o.Status.Layers == nil {
			return "no layers"
		}
		l := o.Status.Layers.ControlPlane
		return fmt.Sprintf("%s/%s", l.Verdict, l.Reason)
	}, gomega.Equal(fmt.Sprintf("%s/%s", v, reason)))
}
