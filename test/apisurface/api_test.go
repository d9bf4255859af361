package apisurface

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/kvtest"
	"github.com/vmobs/vmobs/internal/testenv"
)

// t0 is a fixed, second-aligned time: the API server stores times in seconds.
var t0 = metav1.NewTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "apisurface-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// runningVMI is kvtest's running VMI after one completed live migration to
// node-b, with a disk that cannot be live migrated and the status fields
// virt-handler adds (volumes, machine, CPU topology), so that the round trip
// covers them all.
func runningVMI(ns, name string) *kubevirtv1.VirtualMachineInstance {
	notMigratable := func(t kubevirtv1.VirtualMachineInstanceConditionType, msg string) kvtest.VMIMod {
		return kvtest.WithCondition(kubevirtv1.VirtualMachineInstanceCondition{
			Type: t, Status: corev1.ConditionFalse, Reason: kubevirtv1.VirtualMachineInstanceReasonDisksNotMigratable,
			Message: msg, LastTransitionTime: kvtest.At(-2*time.Hour + 25*time.Second),
		})
	}
	return kvtest.RunningVMI(
		kvtest.OnTarget,
		kvtest.MigrationState(func(st *kubevirtv1.VirtualMachineInstanceMigrationState) {
			st.EndTimestamp, st.TargetNodeDomainReadyTimestamp = kvtest.Atp(-time.Minute), kvtest.Atp(-time.Minute)
			st.TargetNodeDomainDetected, st.Completed = true, true
			st.TargetDirectMigrationNodePorts = map[string]int{"38091": 0, "44525": 49152}
			st.MigrationPolicyName = ptr.To("fast-lane")
			st.MigrationNetworkType = kubevirtv1.MigrationNetworkType("Pod")
		}),
		notMigratable(kubevirtv1.VirtualMachineInstanceIsMigratable, "cannot migrate VMI: PVC rootdisk is not shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)"),
		notMigratable(kubevirtv1.VirtualMachineInstanceIsStorageLiveMigratable, ""),
		func(v *kubevirtv1.VirtualMachineInstance) {
			// A new object: no UID, owner or generation for the API server to refuse.
			v.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{kubevirtv1.NodeNameLabel: kvtest.NodeB}}
			v.Status.MigrationTransport = kubevirtv1.MigrationTransportUnix
			v.Status.ActivePods = map[types.UID]string{kvtest.PodUID: kvtest.NodeA, kvtest.Pod2UID: kvtest.NodeB}
			v.Status.VolumeStatus = []kubevirtv1.VolumeStatus{{Name: "rootdisk", Target: "vda", Phase: kubevirtv1.VolumeReady, Reason: "VolumeReady"}}
			v.Status.VirtualMachineRevisionName = "revision-start-vm-1"
			v.Status.RuntimeUser, v.Status.SelinuxContext = 107, "none"
			v.Status.Machine = &kubevirtv1.Machine{Type: "pc-q35-rhel9.4.0"}
			v.Status.CurrentCPUTopology = &kubevirtv1.CPUTopology{Cores: 1, Sockets: 1, Threads: 1}
		})
}

func runningVM(ns, name string) *kubevirtv1.VirtualMachine {
	return &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: ptr.To(kubevirtv1.RunStrategyAlways),
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				Spec: kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{}},
			},
		},
	}
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

var _ = Describe("KubeVirt CRDs", func() {
	It("round-trips a realistic Running VMI without losing a status field", func() {
		ns := newNamespace()
		want := runningVMI(ns, "vm1")
		Expect(k8s.Create(ctx, want.DeepCopy())).To(Succeed())

		got := &kubevirtv1.VirtualMachineInstance{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vm1"}, got)).To(Succeed())
		Expect(jsonOf(got.Status)).To(MatchJSON(jsonOf(want.Status)))
		Expect(jsonOf(got.Spec.Networks)).To(MatchJSON(jsonOf(want.Spec.Networks)))
		Expect(got.Status.Interfaces[0].InfoSource).To(Equal("domain, guest-agent"))
		Expect(got.Status.ActivePods).To(HaveLen(2))
	})

	It("round-trips a VM with runStrategy and printableStatus through its status subresource", func() {
		ns := newNamespace()
		vm := runningVM(ns, "vm1")
		Expect(k8s.Create(ctx, vm)).To(Succeed())
		vm.Status = kubevirtv1.VirtualMachineStatus{
			PrintableStatus: kubevirtv1.VirtualMachineStatusRunning,
			Ready:           true,
			Created:         true,
			Conditions: []kubevirtv1.VirtualMachineCondition{
				{Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionTrue, LastTransitionTime: at(2 * time.Minute)},
			},
			DesiredGeneration:  1,
			ObservedGeneration: 1,
			RunStrategy:        kubevirtv1.RunStrategyAlways,
		}
		want := vm.Status.DeepCopy()
		Expect(k8s.Status().Update(ctx, vm)).To(Succeed())

		got := &kubevirtv1.VirtualMachine{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(vm), got)).To(Succeed())
		Expect(jsonOf(got.Status)).To(MatchJSON(jsonOf(want)))
		Expect(*got.Spec.RunStrategy).To(Equal(kubevirtv1.RunStrategyAlways))
	})

	It("round-trips a VMIM with phase transitions, and its status write keeps the generation", func() {
		ns := newNamespace()
		vmim := &kubevirtv1.VirtualMachineInstanceMigration{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubevirt-evacuation-x2", Labels: map[string]string{"kubevirt.io/vmi-name": "vm1"}},
			Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: "vm1"},
		}
		Expect(k8s.Create(ctx, vmim)).To(Succeed())
		gen := vmim.Generation
		vmim.Status = kubevirtv1.VirtualMachineInstanceMigrationStatus{
			Phase: kubevirtv1.MigrationFailed,
			PhaseTransitionTimestamps: []kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{
				{Phase: kubevirtv1.MigrationPending, PhaseTransitionTimestamp: at(10 * time.Minute)},
				{Phase: kubevirtv1.MigrationScheduling, PhaseTransitionTimestamp: at(10*time.Minute + time.Second)},
				{Phase: kubevirtv1.MigrationFailed, PhaseTransitionTimestamp: at(16 * time.Minute)},
			},
			MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{
				SourceNode: "node-a", SourcePod: "virt-launcher-vm1-abcde", TargetNode: "node-b", Failed: true,
				FailureReason: "Target pod is down", MigrationUID: vmim.UID, EndTimestamp: ptr.To(at(16 * time.Minute)),
			},
		}
		want := vmim.Status.DeepCopy()
		Expect(k8s.Status().Update(ctx, vmim)).To(Succeed())

		got := &kubevirtv1.VirtualMachineInstanceMigration{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(vmim), got)).To(Succeed())
		Expect(jsonOf(got.Status)).To(MatchJSON(jsonOf(want)))
		Expect(got.Generation).To(Equal(gen), "a VMIM has a status subresource: its status writes do not bump the generation")
	})

	It("bumps a VMI's generation on a status write: the VMI has no status subresource", func() {
		ns := newNamespace()
		vmi := runningVMI(ns, "vm2")
		Expect(k8s.Create(ctx, vmi)).To(Succeed())
		gen := vmi.Generation

		vmi.Status.Conditions = vmi.Status.Conditions[:1] // the agent disconnected
		Expect(k8s.Update(ctx, vmi)).To(Succeed())
		Expect(vmi.Generation).To(Equal(gen + 1))

		err := k8s.Status().Update(ctx, vmi)
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no /status subresource on VMIs, got %v", err)
	})
})

func fullObservation(ns, name string) *v1alpha1.VMObservation {
	layer := func(v v1alpha1.Verdict, reason string) v1alpha1.LayerStatus {
		return v1alpha1.LayerStatus{
			Verdict: v, Reason: reason, Message: "checked", LastTransitionTime: ptr.To(at(time.Minute)),
			EvidenceTime: ptr.To(at(2 * time.Minute)), StaleAt: ptr.To(at(7 * time.Minute)),
			Evidence: []v1alpha1.Evidence{{Kind: "Pod", Name: "virt-launcher-" + name + "-abcde", Field: "status.phase", Value: "Running", Time: ptr.To(at(time.Minute))}},
		}
	}
	return &v1alpha1.VMObservation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.VMObservationSpec{VMName: name},
		Status: v1alpha1.VMObservationStatus{
			ObservedGeneration: 1,
			Verdict:            v1alpha1.VerdictDegraded,
			Reason:             "MigrationFailed",
			Message:            "control plane: migration kubevirt-evacuation-x2 failed on node-b: target pod shutdown",
			Layers: &v1alpha1.Layers{
				ControlPlane: layer(v1alpha1.VerdictDegraded, "MigrationFailed"),
				Node:         layer(v1alpha1.VerdictHealthy, "LauncherRunning"),
				Guest:        layer(v1alpha1.VerdictHealthy, "AgentConnected"),
				Storage:      layer(v1alpha1.VerdictHealthy, "VolumesReady"),
			},
			VMI: &v1alpha1.VMISummary{Name: name, UID: "1b2c", Phase: "Running", NodeName: "node-a", PhaseSince: ptr.To(at(time.Minute))},
			LauncherPods: []v1alpha1.LauncherPod{
				{Name: "virt-launcher-" + name + "-abcde", UID: "p1", Node: "node-a", Phase: "Running", Ready: true, Role: v1alpha1.RoleActive},
				{Name: "virt-launcher-" + name + "-x7k2p", UID: "p2", Node: "node-b", Phase: "Failed", Role: v1alpha1.RoleStale, Restarts: 1},
			},
			Migration: &v1alpha1.MigrationSummary{
				Name: "kubevirt-evacuation-x2", UID: "m1", Phase: "Failed", PhaseSince: ptr.To(at(16 * time.Minute)),
				SourceNode: "node-a", TargetNode: "node-b", SourcePod: "virt-launcher-" + name + "-abcde", TargetPod: "virt-launcher-" + name + "-x7k2p",
				StartTime: ptr.To(at(10 * time.Minute)), EndTime: ptr.To(at(16 * time.Minute)), Failed: true, FailureReason: "target pod shutdown",
			},
			LiveMigratable: &v1alpha1.LiveMigratability{Status: metav1.ConditionFalse, Reasons: []string{"DisksNotLiveMigratable", "HostDeviceNotLiveMigratable"}},
			Interfaces: []v1alpha1.InterfaceStatus{
				{Name: "default", InterfaceName: "eth0", MAC: "52:54:00:6f:2c:01", IPAddresses: []string{"10.0.2.2"}, InfoSources: []string{"domain", "guest-agent"}, PodIPs: []string{"10.244.0.17"}},
			},
			Guest: &v1alpha1.GuestSummary{AgentConnected: true, AgentConnectedSince: ptr.To(at(3 * time.Minute)), AgentSupported: true, OSPrettyName: "Fedora Linux 41 (Cloud Edition)", KernelRelease: "6.11.4-301.fc41.x86_64"},
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "MigrationFailed", Message: "migration failed", LastTransitionTime: at(16 * time.Minute)},
			},
			Incident: &v1alpha1.IncidentRef{Kind: v1alpha1.IncidentKindVMIncident, Name: "storageclass-ceph-rbd"},
		},
	}
}

var _ = Describe("VMObservation CRD", func() {
	It("stores a full status through the status subresource without bumping the generation, and kubectl prints its columns", func() {
		ns := newNamespace()
		obs := fullObservation(ns, "vm1")
		status := obs.Status.DeepCopy()
		Expect(k8s.Create(ctx, obs)).To(Succeed())
		Expect(obs.Status.Verdict).To(BeEmpty(), "the status subresource drops status on create")
		gen := obs.Generation

		obs.Status = *status
		Expect(k8s.Status().Update(ctx, obs)).To(Succeed())
		got := &v1alpha1.VMObservation{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obs), got)).To(Succeed())
		Expect(jsonOf(got.Status)).To(MatchJSON(jsonOf(status)))
		Expect(got.Generation).To(Equal(gen))

		out, err := testenv.Kubectl(kubeconfig, "get", "vmobservations", "-n", ns)
		Expect(err).NotTo(HaveOccurred())
		lines := strings.Split(strings.TrimSpace(out), "\n")
		Expect(lines).To(HaveLen(2), out)
		Expect(strings.Fields(lines[0])).To(Equal([]string{"NAME", "VERDICT", "CONTROL-PLANE", "NODE", "GUEST", "STORAGE", "REASON", "AGE"}))
		Expect(strings.Fields(lines[1])[:7]).To(Equal([]string{"vm1", "Degraded", "Degraded", "Healthy", "Healthy", "Healthy", "MigrationFailed"}))

		out, err = testenv.Kubectl(kubeconfig, "get", "vmobs", "-n", ns, "-o", "wide")
		Expect(err).NotTo(HaveOccurred())
		lines = strings.Split(strings.TrimSpace(out), "\n")
		Expect(strings.Fields(lines[0])).To(Equal([]string{"NAME", "VERDICT", "CONTROL-PLANE", "NODE", "GUEST", "STORAGE", "REASON", "AGE", "PHASE", "NODE-NAME", "MIGRATION", "AGENT", "INCIDENT"}))
		fields := strings.Fields(lines[1])
		Expect(fields[len(fields)-5:]).To(Equal([]string{"Running", "node-a", "Failed", "true", "storageclass-ceph-rbd"}))

		// The kubevirt category lists it next to KubeVirt's own objects.
		out, err = testenv.Kubectl(kubeconfig, "get", "kubevirt", "-n", ns, "-o", "name")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("vmobservation.observability.vmobs.io/vm1"))
	})

	It("rejects a verdict outside the six", func() {
		ns := newNamespace()
		obs := fullObservation(ns, "vm1")
		Expect(k8s.Create(ctx, obs)).To(Succeed())
		for _, bad := range []string{"Sick", "healthy", "OK"} {
			obs.Status = v1alpha1.VMObservationStatus{Verdict: v1alpha1.Verdict(bad)}
			err := k8s.Status().Update(ctx, obs)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), fmt.Sprintf("verdict %q: %v", bad, err))
			Expect(err.Error()).To(ContainSubstring("status.verdict"))
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obs), obs)).To(Succeed())
		}
	})

	It("rejects a VMObservation whose vmName differs from its name", func() {
		ns := newNamespace()
		obs := &v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vm1"}, Spec: v1alpha1.VMObservationSpec{VMName: "vm2"}}
		err := k8s.Create(ctx, obs)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("spec.vmName must equal metadata.name"))
	})
})
