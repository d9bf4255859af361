package shard

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/controllers"
	"github.com/vmobs/vmobs/internal/app"
	"github.com/vmobs/vmobs/internal/simulator"
	"github.com/vmobs/vmobs/test/support"
)

// runningVM creates a VM whose own labels put it in shard value, with
// templateShard on its template (so on its VMI and launcher pod; "" for
// none), and boots it on node.
func runningVM(ns, name, node, value, templateShard string) {
	spec := simulator.VMSpec{Namespace: ns, Name: name, GuestAgent: true}
	if templateShard != "" {
		spec.Labels = map[string]string{shardLabel: templateShard}
	}
	Expect(suite.Sim.CreateVM(suite.Ctx, spec)).To(Succeed())
	if value != "" {
		labelVM(ns, name, value)
	}
	Expect(suite.Sim.Boot(suite.Ctx, ns, name, node)).To(Succeed())
}

// noDeletes watches the namespace's VMObservations and fails the spec at
// its end if one was deleted: a hand-over must leave no gap.
func noDeletes(ns string) {
	w, err := suite.K8s.Watch(suite.Ctx, &v1alpha1.VMObservationList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	deleted := make(chan string, 16)
	go func() {
		for ev := range w.ResultChan() {
			if o, ok := ev.Object.(*v1alpha1.VMObservation); ok && ev.Type == watch.Deleted {
				deleted <- o.Name
			}
		}
		close(deleted)
	}()
	DeferCleanup(func() {
		w.Stop()
		var gone []string
		for n := range deleted {
			gone = append(gone, n)
		}
		Expect(gone).To(BeEmpty(), "VMObservations deleted during the hand-over")
	})
}

// after keeps the writes sent at or after t.
func after(ws []write, t time.Time) []write {
	var out []write
	for _, w := range ws {
		if !w.sent.Before(t) {
			out = append(out, w)
		}
	}
	return out
}

func verbs(ws []write) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.verb
	}
	return out
}

var _ = Describe("Two shards", func() {
	It("observe every VM in exactly one shard, the one the VM's own labels name", func() {
		ns, node, a, b := world("split")
		sa := startShard("a", a)
		defer sa.stop()
		sb := startShard("b", b)
		defer sb.stop()
		Expect(sa.opts.LeaseName()).NotTo(Equal(sb.opts.LeaseName()), "each shard has a Lease of its own")

		// The template's label reaches the VMI and the launcher pod, the
		// VM's own does not (KubeVirt's SetupVMIFromVM): vm-a1's VMI says
		// shard b, vm-b1's says a; the VM decides.
		runningVM(ns, "vm-a0", node, a, "")
		runningVM(ns, "vm-a1", node, a, b)
		runningVM(ns, "vm-b0", node, b, "")
		runningVM(ns, "vm-b1", node, b, a)
		runningVM(ns, "vm-none", node, "", "")
		Expect(suite.Sim.CreateVM(suite.Ctx, simulator.VMSpec{Namespace: ns, Name: "vmi-b", Standalone: true, Labels: map[string]string{shardLabel: b}})).To(Succeed())
		Expect(suite.Sim.Boot(suite.Ctx, ns, "vmi-b", node)).To(Succeed())

		own := map[string][]string{a: {"vm-a0", "vm-a1"}, b: {"vm-b0", "vm-b1", "vmi-b"}}
		for value, names := range own {
			for _, name := range names {
				Eventually(suite.Observation(ns, name)).Should(And(
					WithTransform(support.ReasonOf, Equal("Healthy/Running")),
					WithTransform(shardOf, Equal(value)),
				), name)
			}
		}
		Consistently(func() bool {
			_, err := suite.Observation(ns, "vm-none")()
			return apierrors.IsNotFound(err)
		}, 2*time.Second).Should(BeTrue(), "a VM in no shard is observed by nobody")

		for _, s := range []struct {
			in          *instance
			mine, other []string
		}{{sa, own[a], own[b]}, {sb, own[b], own[a]}} {
			Expect(s.in.counter.ObjectWrites("vmobservations", ns, "")).To(HaveKeyWithValue("create vmobservations", len(s.mine)), "shard %s creates its own", s.in.name)
			for _, name := range s.mine {
				Expect(s.in.counter.ObjectWrites("vmobservations", ns, name)).To(HaveKeyWithValue("apply vmobservations/status", BeNumerically(">=", 1)), "shard %s writes %s", s.in.name, name)
			}
			for _, name := range append(s.other, "vm-none") {
				Expect(s.in.counter.ObjectWrites("vmobservations", ns, name)).To(BeEmpty(), "shard %s never writes %s", s.in.name, name)
			}
		}
	})

	It("hand a relabelled VM over with no gap and no double writes", func() {
		ns, node, a, b := world("handover")
		sa := startShard("a", a)
		defer sa.stop()
		sb := startShard("b", b)
		defer sb.stop()
		runningVM(ns, "vm1", node, a, "")
		Expect(suite.Sim.CreateVM(suite.Ctx, simulator.VMSpec{Namespace: ns, Name: "stopped", RunStrategy: kubevirtv1.RunStrategyHalted})).To(Succeed())
		labelVM(ns, "stopped", a)
		Eventually(suite.Observation(ns, "vm1")).Should(WithTransform(support.ReasonOf, Equal("Healthy/Running")))
		Eventually(suite.Observation(ns, "stopped")).Should(WithTransform(shardOf, Equal(a)))
		uid := map[string]types.UID{}
		for _, name := range []string{"vm1", "stopped"} {
			o, err := suite.Observation(ns, name)()
			Expect(err).NotTo(HaveOccurred())
			uid[name] = o.UID
		}
		noDeletes(ns)

		relabelled := time.Now()
		labelVM(ns, "vm1", b)
		labelVM(ns, "stopped", b)
		for _, name := range []string{"vm1", "stopped"} {
			Eventually(suite.Observation(ns, name)).Should(WithTransform(shardOf, Equal(b)), name)
		}
		handedOver := time.Since(relabelled)
		// The new owner writes what changes from now on.
		Expect(suite.Sim.Pause(suite.Ctx, ns, "vm1", simulator.PausedByUser)).To(Succeed())
		Eventually(suite.Observation(ns, "vm1")).Should(WithTransform(support.ReasonOf, Equal("Suspended/PausedByUser")))
		Expect(suite.Sim.Start(suite.Ctx, ns, "stopped")).To(Succeed())
		Expect(suite.Sim.Boot(suite.Ctx, ns, "stopped", node)).To(Succeed())
		Eventually(suite.Observation(ns, "stopped")).Should(WithTransform(support.ReasonOf, Equal("Healthy/Running")))

		for _, name := range []string{"vm1", "stopped"} {
			o, err := suite.Observation(ns, name)()
			Expect(err).NotTo(HaveOccurred())
			Expect(o.UID).To(Equal(uid[name]), "%s: the same VMObservation, never recreated", name)

			aw, bw := after(sa.writes.of(ns, name), relabelled), sb.writes.of(ns, name)
			GinkgoWriter.Printf("%s after the relabel:\n  a: %v\n  b: %v\n", name, aw, bw)
			// The old shard released it (one label patch) and wrote nothing
			// else; the new one found it released and wrote the status.
			Expect(verbs(aw)).To(Equal([]string{"patch vmobservations"}), "%s: shard a only releases", name)
			Expect(verbs(bw)).To(ContainElement("apply vmobservations/status"))
			Expect(verbs(bw)).NotTo(ContainElement("patch vmobservations"), "%s: released, not taken", name)
			for _, w := range bw {
				Expect(w.sent).To(BeTemporally(">", aw[len(aw)-1].done), "%s: shard b wrote (%v) before shard a let go (%v)", name, w, aw[len(aw)-1])
			}
			Expect(sa.counter.ObjectWrites("vmobservations", ns, name)).NotTo(HaveKey("delete vmobservations"))
		}
		GinkgoWriter.Printf("HANDOVER: both VMObservations relabelled %s after the VMs\n", handedOver)
		AddReportEntry("handover", handedOver.String())
	})

	It("never delete another shard's orphaned VMObservation", func() {
		ns, node, a, b := world("orphan")
		sa := startShard("a", a)
		sb := startShard("b", b)
		defer sb.stop()
		runningVM(ns, "vm-a", node, a, "")
		runningVM(ns, "vm-b", node, b, "")
		Eventually(suite.Observation(ns, "vm-a")).Should(WithTransform(support.ReasonOf, Equal("Healthy/Running")))
		Eventually(suite.Observation(ns, "vm-b")).Should(WithTransform(support.ReasonOf, Equal("Healthy/Running")))

		// Shard a is down while its VM is deleted: the VMI's and the
		// launcher pod's events (cached whole) bring the key to shard b.
		sa.stop()
		Expect(suite.Sim.DeleteVM(suite.Ctx, ns, "vm-a")).To(Succeed())
		Expect(suite.Sim.DeleteVM(suite.Ctx, ns, "vm-b")).To(Succeed())
		Eventually(func() bool {
			_, err := suite.Observation(ns, "vm-b")()
			return apierrors.IsNotFound(err)
		}).Should(BeTrue(), "shard b deletes its own orphan")
		Consistently(suite.Observation(ns, "vm-a"), 3*time.Second).Should(WithTransform(shardOf, Equal(a)), "shard b leaves shard a's")
		Expect(sb.counter.ObjectWrites("vmobservations", ns, "vm-a")).To(BeEmpty())

		// Its own shard, back, deletes it.
		sa = startShard("a", a)
		defer sa.stop()
		Eventually(func() bool {
			_, err := suite.Observation(ns, "vm-a")()
			return apierrors.IsNotFound(err)
		}).Should(BeTrue(), "shard a deletes its orphan")
		// The counter hears of the delete when its answer is back, which
		// may be after another client already reads the object gone.
		Eventually(func() map[string]int { return sa.counter.ObjectWrites("vmobservations", ns, "vm-a") }).Should(HaveKey("delete vmobservations"))
	})

	It("take over a VMObservation whose shard is gone after the grace, and an unlabelled one at once", func() {
		ns, node, a, b := world("gone")
		sa := startShard("a", a)
		sb := startShard("b", b)
		defer sb.stop()
		runningVM(ns, "vm1", node, a, "")
		Eventually(suite.Observation(ns, "vm1")).Should(WithTransform(support.ReasonOf, Equal("Healthy/Running")))
		o, err := suite.Observation(ns, "vm1")()
		Expect(err).NotTo(HaveOccurred())
		sa.stop()
		noDeletes(ns)

		relabelled := time.Now()
		labelVM(ns, "vm1", b)
		Eventually(suite.Observation(ns, "vm1"), 3*controllers.DefaultHandoverGrace).Should(WithTransform(shardOf, Equal(b)))
		took := time.Since(relabelled)
		GinkgoWriter.Printf("TAKEOVER of an unreleased VMObservation after %s\n", took)
		Expect(took).To(BeNumerically(">=", controllers.DefaultHandoverGrace-time.Second), "shard b waited for a release first")
		Expect(suite.Sim.Pause(suite.Ctx, ns, "vm1", simulator.PausedByUser)).To(Succeed())
		Eventually(suite.Observation(ns, "vm1")).Should(WithTransform(support.ReasonOf, Equal("Suspended/PausedByUser")))
		now, err := suite.Observation(ns, "vm1")()
		Expect(err).NotTo(HaveOccurred())
		Expect(now.UID).To(Equal(o.UID))

		// A VMObservation without the shard label (declared by hand, or
		// written before sharding) is nobody's: taken at once.
		declared := &v1alpha1.VMObservation{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vm2"},
			Spec:       v1alpha1.VMObservationSpec{VMName: "vm2"},
		}
		Expect(suite.K8s.Create(suite.Ctx, declared)).To(Succeed())
		start := time.Now()
		runningVM(ns, "vm2", node, b, "")
		Eventually(suite.Observation(ns, "vm2")).Should(And(
			WithTransform(shardOf, Equal(b)),
			WithTransform(support.ReasonOf, Equal("Healthy/Running")),
		))
		Expect(time.Since(start)).To(BeNumerically("<", controllers.DefaultHandoverGrace))
		now, err = suite.Observation(ns, "vm2")()
		Expect(err).NotTo(HaveOccurred())
		Expect(now.UID).To(Equal(declared.UID), "adopted, not recreated")
	})
})

var _ = Describe("An instance limited to namespaces (--namespace)", func() {
	It("observes the VMs of its namespaces, every layer read from each namespace's cache, and no other", func() {
		nsA, node, _, _ := world("ns-a")
		nsB, _, _, _ := world("ns-b")
		nsOut, _, _, _ := world("ns-out")
		opts := app.InProcessOptions()
		opts.Namespaces = []string{nsA, nsB}
		in, err := app.StartInProcess(suite.Ctx, suite.Env.Config, opts)
		Expect(err).NotTo(HaveOccurred(), "a cache limited to namespaces still gives the controller its stores")
		defer func() { Expect(in.Stop()).To(Succeed()) }()

		for _, ns := range []string{nsA, nsB, nsOut} {
			runningVM(ns, "vm", node, "", "")
		}
		// Running, and the node layer read through the Node store (cluster-
		// scoped, a cache of its own beside the namespaces').
		for _, ns := range []string{nsA, nsB} {
			Eventually(suite.Observation(ns, "vm")).Should(And(
				WithTransform(support.ReasonOf, Equal("Healthy/Running")),
				WithTransform(func(o *v1alpha1.VMObservation) string {
					if o.Status.Layers == nil {
						return ""
					}
					return string(o.Status.Layers.Node.Verdict) + "/" + o.Status.Layers.Node.Reason
				}, Equal("Healthy/"+v1alpha1.ReasonLauncherRunning)),
			), ns)
		}
		Consistently(func() bool {
			_, err := suite.Observation(nsOut, "vm")()
			return apierrors.IsNotFound(err)
		}, 2*time.Second).Should(BeTrue(), "a VM outside the namespaces is not observed")
	})
})
