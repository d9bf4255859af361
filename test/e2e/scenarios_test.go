package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/controllers"
	"github.com/vmobs/vmobs/internal/simulator"
)

const vm = "vm1"

// bootHealthy creates a VM with a guest agent and boots it on node.
func bootHealthy(ns, node string, mods ...func(*simulator.VMSpec)) {
	spec := simulator.VMSpec{Namespace: ns, Name: vm, GuestAgent: true, Interfaces: 2}
	for _, m := range mods {
		m(&spec)
	}
	Expect(sim.CreateVM(ctx, spec)).To(Succeed())
	Expect(sim.Boot(ctx, ns, vm, node)).To(Succeed())
	Eventually(suite.Observation(ns, vm)).Should(overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
}

// migrationWorld is newWorld with a second node, the migration target, and
// the VM booted healthy on the first.
func migrationWorld(name string) (ns, target string) {
	ns, node := newWorld(name)
	target = node + "-b"
	Expect(sim.AddNode(ctx, target)).To(Succeed())
	track(target)
	bootHealthy(ns, node)
	return ns, target
}

// settle waits until the VM's status writes stop changing for two seconds
// (held writes, coalesced progress), so counts that follow are stable.
func settle(ns string) int {
	last := -1
	Eventually(func() bool {
		n := statusWrites(ns, vm)
		stable := n == last
		last = n
		return stable
	}, 30*time.Second, 2*time.Second).Should(BeTrue())
	return last
}

// writesReport prints the writes a scenario cost, for the issue note.
func writesReport(ns, scenario string) {
	w := counter.ObjectWrites("vmobservations", ns, vm)
	GinkgoWriter.Printf("WRITES %-28s create=%d status=%d other=%v\n", scenario, creates(ns), w["apply vmobservations/status"], w)
	AddReportEntry("writes "+scenario, fmt.Sprintf("create=%d status=%d", creates(ns), w["apply vmobservations/status"]))
}

var _ = Describe("A VM's life, observed", func() {
	It("boots to Healthy for one create and at most one status write per boot stage", func() {
		ns, node := newWorld("boot")
		bootHealthy(ns, node)
		o, err := suite.Observation(ns, vm)()
		Expect(err).NotTo(HaveOccurred())
		Expect(o).To(layerIs("node", v1alpha1.VerdictHealthy, v1alpha1.ReasonLauncherRunning))
		Expect(o).To(layerIs("guest", v1alpha1.VerdictHealthy, v1alpha1.ReasonGuestAgentConnected))
		Expect(o).To(conditionIs(v1alpha1.ConditionReady, metav1.ConditionTrue))
		Expect(o.Status.ObservedGeneration).To(Equal(o.Generation))
		Expect(o.OwnerReferences).To(HaveLen(1))
		Expect(o.OwnerReferences[0].Kind).To(Equal("VirtualMachine"))
		Expect(o.Status.LauncherPods).To(HaveLen(1))
		Expect(o.Status.Interfaces).To(HaveLen(2))

		// Let anything in flight land before counting.
		settle(ns)
		writesReport(ns, "boot")
		Expect(creates(ns)).To(Equal(1))
		// Progress is coalesced, so a quiet machine sees two or three writes;
		// on a loaded one the hold can end between boot stages (the VMI
		// without status, Pending, Running, the agent connected), each a
		// different status: never more than one write per stage.
		Expect(statusWrites(ns, vm)).To(BeNumerically("<=", 4))
	})

	It("stays quiet at idle: heartbeats every second cost no write at all", func() {
		ns, node := newWorld("idle")
		bootHealthy(ns, node)
		settle(ns)
		before := statusWrites(ns, vm)
		idle := 60 * time.Second
		Consistently(suite.Observation(ns, vm), idle, time.Second).Should(overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
		writes := statusWrites(ns, vm) - before
		GinkgoWriter.Printf("WRITES idle %s with heartbeats every %s: %d\n", idle, heartbeatEvery, writes)
		AddReportEntry("writes idle 60s", writes)
		Expect(writes).To(BeZero())
	})

	It("turns the node layer Unknown at the heartbeat deadline, with no other event", func() {
		ns, node := newWorld("heartbeat")
		bootHealthy(ns, node)
		silence(node)
		start := time.Now()
		Eventually(suite.Observation(ns, vm), 20*time.Second).Should(layerIs("node", v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale))
		took := time.Since(start)
		GinkgoWriter.Printf("node layer Unknown %s after the last heartbeat (timeout %s)\n", took, policy.HeartbeatTimeout)
		Expect(took).To(BeNumerically("<", policy.HeartbeatTimeout+5*time.Second))
		o, _ := suite.Observation(ns, vm)()
		Expect(o).To(overallIs(v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale))
		unsilence(node)
		Eventually(suite.Observation(ns, vm)).Should(overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
	})

	It("writes nothing when the controller restarts over an unchanged world", func() {
		ns, node := newWorld("restart")
		bootHealthy(ns, node)
		settle(ns)
		stopManager()
		writes := func() int {
			n := 0
			for _, v := range counter.ObjectWrites("vmobservations", ns, vm) {
				n += v
			}
			return n
		}
		before := writes()
		startManager()
		// Long enough for the new manager to sync and reconcile everything,
		// short of the refresh interval. (VMs of earlier scenarios may get
		// their periodic evidence refresh meanwhile; this VM's is not due.)
		Consistently(func() int { return writes() - before }, 8*time.Second).Should(BeZero())
		AddReportEntry("writes restart", writes()-before)
	})

	It("says Suspended and Ready for a VM stopped as declared", func() {
		ns, _ := newWorld("halted")
		Expect(sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: vm, RunStrategy: kubevirtv1.RunStrategyHalted})).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(And(
			overallIs(v1alpha1.VerdictSuspended, v1alpha1.ReasonStopped),
			conditionIs(v1alpha1.ConditionReady, metav1.ConditionTrue),
		))
		writesReport(ns, "stopped-as-declared")
	})

	It("stops a running VM: Suspended, launcher pods gone", func() {
		ns, node := newWorld("stop")
		bootHealthy(ns, node)
		Expect(sim.Stop(ctx, ns, vm)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(And(
			overallIs(v1alpha1.VerdictSuspended, v1alpha1.ReasonStopped),
			WithTransform(func(o *v1alpha1.VMObservation) int { return len(o.Status.LauncherPods) }, BeZero()),
		))
		writesReport(ns, "stop")
	})

	It("turns a VMI stuck in Scheduling Degraded at the scheduling deadline", func() {
		ns, _ := newWorld("stuck")
		Expect(sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: vm})).To(Succeed())
		Expect(sim.CreateLauncherPod(ctx, ns, vm)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(layerIs("controlPlane", v1alpha1.VerdictProgressing, v1alpha1.ReasonScheduling))
		Eventually(suite.Observation(ns, vm), 20*time.Second).Should(layerIs("controlPlane", v1alpha1.VerdictDegraded, v1alpha1.ReasonStuckScheduling))
		writesReport(ns, "stuck-scheduling")
	})

	It("names an unschedulable launcher pod", func() {
		ns, _ := newWorld("unsched")
		Expect(sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: vm})).To(Succeed())
		Expect(sim.FailScheduling(ctx, ns, vm, simulator.Unschedulable)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(layerIs("controlPlane", v1alpha1.VerdictDegraded, v1alpha1.ReasonUnschedulable))
		writesReport(ns, "unschedulable")
	})

	It("names an image that cannot be pulled", func() {
		ns, _ := newWorld("image")
		Expect(sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: vm})).To(Succeed())
		Expect(sim.FailScheduling(ctx, ns, vm, "ErrImagePull")).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(layerIs("controlPlane", v1alpha1.VerdictDegraded, v1alpha1.ReasonImagePullFailed))
		writesReport(ns, "image-pull-failed")
	})

	It("follows a live migration and names source and target pods", func() {
		ns, target := migrationWorld("migrate")
		seen := recordVerdicts(ns, vm)
		m, err := sim.StartMigration(ctx, ns, vm, simulator.MigrationOptions{TargetNode: target, Outcome: simulator.MigrationSucceeds})
		Expect(err).NotTo(HaveOccurred())
		for m.Phase() != kubevirtv1.MigrationRunning {
			Expect(m.Step(ctx)).To(Succeed())
		}
		Eventually(suite.Observation(ns, vm)).Should(And(
			layerIs("controlPlane", v1alpha1.VerdictProgressing, v1alpha1.ReasonMigrating),
			WithTransform(func(o *v1alpha1.VMObservation) []v1alpha1.LauncherPodRole {
				var roles []v1alpha1.LauncherPodRole
				for _, p := range o.Status.LauncherPods {
					roles = append(roles, p.Role)
				}
				return roles
			}, ConsistOf(v1alpha1.RoleMigrationSource, v1alpha1.RoleMigrationTarget)),
		))
		Expect(m.Run(ctx)).To(Succeed())
		// The finished source pod stays in activePods until it is deleted
		// (kubevirt#12773): a note in the message, the reason stays Running.
		Eventually(suite.Observation(ns, vm)).Should(And(
			overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning),
			WithTransform(func(o *v1alpha1.VMObservation) string { return o.Status.VMI.NodeName }, Equal(target)),
			WithTransform(func(o *v1alpha1.VMObservation) string { return o.Status.Migration.Phase }, Equal("Succeeded")),
		))
		// At the handoff the source launcher completes before the VMI names
		// the target node: status lags, and a successful migration must
		// not flicker through Unknown or Degraded, nor raise a Warning.
		Consistently(suite.Observation(ns, vm), 3*time.Second).Should(overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
		// And back to the node it left: the finished launcher of that first
		// stay is still there and must not stand in for the new one.
		back := strings.TrimSuffix(target, "-b")
		_, err = sim.Migrate(ctx, ns, vm, back, simulator.MigrationSucceeds)
		Expect(err).NotTo(HaveOccurred())
		Eventually(suite.Observation(ns, vm)).Should(And(
			overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning),
			WithTransform(func(o *v1alpha1.VMObservation) string { return o.Status.VMI.NodeName }, Equal(back)),
		))
		Consistently(suite.Observation(ns, vm), 3*time.Second).Should(overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
		for _, v := range seen() {
			Expect(v).NotTo(Or(ContainSubstring("Unknown"), ContainSubstring("Degraded"), ContainSubstring("Failed")),
				"a successful migration went through %s", v)
		}
		Expect(warningEvents(ns)).To(BeEmpty())
		writesReport(ns, "migration-succeeded")
	})

	It("says Degraded, not Failed, when a migration fails and the VM runs on", func() {
		ns, target := migrationWorld("migfail")
		_, err := sim.Migrate(ctx, ns, vm, target, simulator.MigrationFails)
		Expect(err).NotTo(HaveOccurred())
		Eventually(suite.Observation(ns, vm)).Should(And(
			overallIs(v1alpha1.VerdictDegraded, v1alpha1.ReasonMigrationFailed),
			WithTransform(func(o *v1alpha1.VMObservation) string { return o.Status.Migration.FailureReason }, Equal(simulator.DefaultFailureReason)),
		))
		writesReport(ns, "migration-failed")
	})

	It("turns a migration stuck in PreparingTarget Degraded at the phase deadline", func() {
		ns, target := migrationWorld("migstuck")
		m, err := sim.StartMigration(ctx, ns, vm, simulator.MigrationOptions{TargetNode: target, Outcome: simulator.MigrationStuck, At: kubevirtv1.MigrationPreparingTarget})
		Expect(err).NotTo(HaveOccurred())
		Expect(m.Run(ctx)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(layerIs("controlPlane", v1alpha1.VerdictProgressing, v1alpha1.ReasonMigrating))
		Eventually(suite.Observation(ns, vm), 20*time.Second).Should(layerIs("controlPlane", v1alpha1.VerdictDegraded, v1alpha1.ReasonMigrationStuck))
		writesReport(ns, "migration-stuck")
	})

	It("blames storage for a domain paused on I/O errors, and nothing for a user pause", func() {
		ns, node := newWorld("pause")
		bootHealthy(ns, node)
		Expect(sim.Pause(ctx, ns, vm, simulator.PausedByUser)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(overallIs(v1alpha1.VerdictSuspended, v1alpha1.ReasonPausedByUser))
		Expect(sim.Unpause(ctx, ns, vm)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning))
		Expect(sim.Pause(ctx, ns, vm, simulator.PausedIOError)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(layerIs(v1alpha1.LayerStorage, v1alpha1.VerdictDegraded, v1alpha1.ReasonPausedIOError))
		writesReport(ns, "paused")
	})

	It("sees through a VMI that still says Running after its launcher pod died", func() {
		ns, node := newWorld("crash")
		bootHealthy(ns, node)
		Expect(sim.CrashLauncher(ctx, ns, vm, simulator.CrashOOMKilled)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(And(
			WithTransform(func(o *v1alpha1.VMObservation) string { return o.Status.VMI.Phase }, Equal("Running")),
			layerIs("node", v1alpha1.VerdictFailed, v1alpha1.ReasonComputeContainerOOMKilled),
		))
		Expect(sim.FailVMI(ctx, ns, vm)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(WithTransform(func(o *v1alpha1.VMObservation) v1alpha1.Verdict { return o.Status.Verdict }, Equal(v1alpha1.VerdictFailed)))
		writesReport(ns, "launcher-crashed")
	})

	It("degrades the guest layer when an expected agent never connects, and when it disconnects", func() {
		ns, node := newWorld("agent")
		Expect(sim.CreateVM(ctx, simulator.VMSpec{Namespace: ns, Name: vm})).To(Succeed())
		Expect(sim.Boot(ctx, ns, vm, node)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(layerIs("guest", v1alpha1.VerdictProgressing, v1alpha1.ReasonAgentConnecting))
		Eventually(suite.Observation(ns, vm), 20*time.Second).Should(layerIs("guest", v1alpha1.VerdictDegraded, v1alpha1.ReasonAgentNeverConnected))
		Expect(sim.ConnectAgent(ctx, ns, vm)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(layerIs("guest", v1alpha1.VerdictHealthy, v1alpha1.ReasonGuestAgentConnected))
		Expect(sim.DisconnectAgent(ctx, ns, vm)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(layerIs("guest", v1alpha1.VerdictDegraded, v1alpha1.ReasonAgentDisconnected))
		writesReport(ns, "guest-agent")
	})

	It("follows a lost node from a stale heartbeat to a failed VMI", func() {
		ns, node := newWorld("nodelost")
		bootHealthy(ns, node)
		Expect(sim.LoseNode(ctx, node)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(WithTransform(func(o *v1alpha1.VMObservation) v1alpha1.Verdict {
			return o.Status.Layers.Node.Verdict
		}, BeElementOf(v1alpha1.VerdictUnknown, v1alpha1.VerdictDegraded)))
		Expect(sim.NodeUnresponsive(ctx, ns, vm)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(overallIs(v1alpha1.VerdictFailed, v1alpha1.ReasonNodeUnresponsive))
		writesReport(ns, "node-lost")
	})

	It("keeps a memory hotplug waiting for the workload updater's migration Progressing past the hotplug timeout, its first sighting carried", func() {
		ns, node := newWorld("hotplug")
		bootHealthy(ns, node)
		Expect(sim.RequestMemoryHotplug(ctx, ns, vm, resource.MustParse("4Gi"))).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(And(
			layerIs("controlPlane", v1alpha1.VerdictProgressing, v1alpha1.ReasonMemoryHotplugPending),
			WithTransform(func(o *v1alpha1.VMObservation) string { return o.Status.VMI.Memory.Guest.String() }, Equal("4Gi")),
		))
		o, err := suite.Observation(ns, vm)()
		Expect(err).NotTo(HaveOccurred())
		since := o.Status.VMI.HotplugSince
		Expect(since).NotTo(BeNil())
		// HotMemoryChange=True with no failed migration is a hotplug in
		// the workload updater's queue: no deadline (engine review C4).
		Consistently(suite.Observation(ns, vm), 10*time.Second).Should(layerIs("controlPlane", v1alpha1.VerdictProgressing, v1alpha1.ReasonMemoryHotplugPending))
		o, err = suite.Observation(ns, vm)()
		Expect(err).NotTo(HaveOccurred())
		// The first sighting is carried from status to status.
		Expect(o.Status.VMI.HotplugSince.Time).To(BeTemporally("==", since.Time))
		Expect(o.Status.VMI.Memory.GuestRequested.String()).To(Equal("2Gi"))
		writesReport(ns, "memory-hotplug-stuck")
	})

	It("notes frozen filesystems, degrades the guest once they stay frozen past the threshold, and clears both on thaw", func() {
		ns, node := newWorld("frozen")
		bootHealthy(ns, node)
		Expect(sim.FreezeFilesystems(ctx, ns, vm)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(And(
			layerIs("guest", v1alpha1.VerdictHealthy, v1alpha1.ReasonGuestAgentConnected),
			WithTransform(func(o *v1alpha1.VMObservation) string { return o.Status.Layers.Guest.Message }, ContainSubstring(v1alpha1.ReasonFilesystemsFrozen)),
			WithTransform(func(o *v1alpha1.VMObservation) *metav1.Time { return o.Status.VMI.FSFrozenSince }, Not(BeNil())),
		))
		Eventually(suite.Observation(ns, vm), 20*time.Second).Should(And(
			layerIs("guest", v1alpha1.VerdictDegraded, v1alpha1.ReasonFilesystemsFrozen),
			overallIs(v1alpha1.VerdictDegraded, v1alpha1.ReasonFilesystemsFrozen),
		))
		Expect(sim.ThawFilesystems(ctx, ns, vm)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(And(
			overallIs(v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning),
			WithTransform(func(o *v1alpha1.VMObservation) *metav1.Time { return o.Status.VMI.FSFrozenSince }, BeNil()),
		))
		writesReport(ns, "filesystems-frozen")
	})

	It("lists every reason an evicted VM cannot live-migrate", func() {
		ns, node := newWorld("evict")
		bootHealthy(ns, node, func(s *simulator.VMSpec) { s.HostDevice, s.NonSharedDisk = true, true })
		Expect(sim.Evict(ctx, ns, vm)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(And(
			layerIs("controlPlane", v1alpha1.VerdictDegraded, v1alpha1.ReasonEvictionBlocked),
			WithTransform(func(o *v1alpha1.VMObservation) []string { return o.Status.LiveMigratable.Reasons },
				ContainElements("DisksNotLiveMigratable", "HostDeviceNotLiveMigratable")),
		))
		writesReport(ns, "eviction-blocked")
	})

	It("deletes the VMObservation it created once the VM and VMI are gone, and follows a recreated VM", func() {
		ns, node := newWorld("delete")
		bootHealthy(ns, node)
		o, _ := suite.Observation(ns, vm)()
		oldOwner := o.OwnerReferences[0].UID

		Expect(sim.DeleteVM(ctx, ns, vm)).To(Succeed())
		Eventually(func() bool {
			_, err := suite.Observation(ns, vm)()
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())

		bootHealthy(ns, node)
		o, _ = suite.Observation(ns, vm)()
		Expect(o.OwnerReferences).To(HaveLen(1))
		Expect(o.OwnerReferences[0].UID).NotTo(Equal(oldOwner))
	})

	It("recreates a VMObservation a user deleted", func() {
		ns, node := newWorld("userdel")
		bootHealthy(ns, node)
		o, _ := suite.Observation(ns, vm)()
		Expect(k8s.Delete(ctx, o)).To(Succeed())
		Eventually(func() (bool, error) {
			n, err := suite.Observation(ns, vm)()
			if err != nil {
				return false, client.IgnoreNotFound(err)
			}
			return n.UID != o.UID && n.Status.Verdict == v1alpha1.VerdictHealthy, nil
		}).Should(BeTrue())
	})
})

// seriesFor counts the per-VM series (vmobs_verdict, vmobs_layer_*) that
// name one VM, by metric name; a series on another node than node counts
// under its name and node (`vmobs_verdict{node="x"}`), a verdict or reason
// series that is not 1 under its name and value.
func seriesFor(ns, name, node string) map[string]int {
	families, err := registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	out := map[string]int{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] != ns || labels["name"] != name {
				continue
			}
			key := f.GetName()
			if labels["node"] != node {
				key += fmt.Sprintf("{node=%q}", labels["node"])
			}
			if !strings.HasSuffix(key, "_timestamp_seconds") && m.GetGauge().GetValue() != 1 {
				key += fmt.Sprintf(" %v", m.GetGauge().GetValue())
			}
			out[key]++
		}
	}
	return out
}

var _ = Describe("Metrics", func() {
	It("exports the current verdict of the VM and of each layer, on the VM's node, and none once the VM is gone", func() {
		ns, node := newWorld("metrics")
		bootHealthy(ns, node)
		// Only the current verdict of each, always 1, all on the VM's node,
		// and its restarts (0, one series): no other key.
		Eventually(func() map[string]int { return seriesFor(ns, vm, node) }).Should(And(
			HaveKeyWithValue("vmobs_verdict", 1),
			HaveKeyWithValue("vmobs_layer_verdict", 4),
			HaveKeyWithValue("vmobs_layer_reason", 4),
			HaveKeyWithValue("vmobs_vm_restarts 0", 1),
			WithTransform(func(m map[string]int) []string { return slices.Collect(maps.Keys(m)) },
				HaveEach(BeElementOf("vmobs_verdict", "vmobs_layer_verdict", "vmobs_layer_reason",
					"vmobs_layer_evidence_timestamp_seconds", "vmobs_layer_stale_timestamp_seconds", "vmobs_vm_restarts 0"))),
		))
		total := 0
		for _, n := range seriesFor(ns, vm, node) {
			total += n
		}
		fmt.Fprintf(GinkgoWriter, "series for a healthy running VM: %d %v\n", total, seriesFor(ns, vm, node))
		families, err := registry.Gather()
		Expect(err).NotTo(HaveOccurred())
		var transitions float64
		for _, f := range families {
			if f.GetName() == "vmobs_verdict_transitions_total" {
				for _, m := range f.GetMetric() {
					for _, l := range m.GetLabel() {
						Expect(l.GetName()).To(BeElementOf("layer", "from", "to"), "no per-object label on the counter")
					}
					transitions += m.GetCounter().GetValue()
				}
			}
		}
		Expect(transitions).To(BeNumerically(">", 0))

		// The controller's own liveness, one series for the fleet: the
		// tick keeps it within LivenessTick of now.
		Eventually(func() float64 {
			families, err := registry.Gather()
			Expect(err).NotTo(HaveOccurred())
			for _, f := range families {
				if f.GetName() == "vmobs_last_reconcile_timestamp_seconds" {
					Expect(f.GetMetric()).To(HaveLen(1))
					return f.GetMetric()[0].GetGauge().GetValue()
				}
			}
			return 0
		}).Should(BeNumerically(">=", float64(time.Now().Add(-2*controllers.LivenessTick).Unix())))

		Expect(sim.DeleteVM(ctx, ns, vm)).To(Succeed())
		Eventually(func() map[string]int { return seriesFor(ns, vm, node) }).Should(BeEmpty())
	})
})

var _ = Describe("A VMObservation a user declared", func() {
	It("says the VM is missing until it exists, and is adopted (not replaced) once it does", func() {
		ns, node := newWorld("declared")
		declared := &v1alpha1.VMObservation{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: vm},
			Spec:       v1alpha1.VMObservationSpec{VMName: vm},
		}
		Expect(k8s.Create(ctx, declared)).To(Succeed())
		Eventually(suite.Observation(ns, vm)).Should(WithTransform(func(o *v1alpha1.VMObservation) v1alpha1.Verdict { return o.Status.Verdict },
			BeElementOf(v1alpha1.VerdictUnknown, v1alpha1.VerdictSuspended)))

		bootHealthy(ns, node)
		o, err := suite.Observation(ns, vm)()
		Expect(err).NotTo(HaveOccurred())
		Expect(o.UID).To(Equal(declared.UID), "adopted, not replaced")
		Expect(o.Labels).NotTo(HaveKey("app.kubernetes.io/managed-by"))
		Expect(o.OwnerReferences).To(ConsistOf(HaveField("Kind", "VirtualMachine")))
	})
})
