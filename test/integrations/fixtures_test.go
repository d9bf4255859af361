package integrations

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/verdict"
)

// The VMObservations the integration tests feed to Argo CD's Lua, kstatus
// and CEL are not written by hand: each scenario below builds the KubeVirt
// objects the way KubeVirt v1.9 leaves them (a VM, its VMI, the virt-launcher
// pod, the Node with virt-handler's heartbeat, migrations) and runs the
// verdict engine on them, as the controller does.

// fixedNow is the evaluation time of the scenarios; the end-to-end test
// builds the same objects around the real clock.
var fixedNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fixtures builds the objects around its now.
type fixtures struct{ now time.Time }

const (
	fxNS      = "vms-prod"
	fxVM      = "rhel9-db"
	fxVMUID   = types.UID("8d3c1f2a-5b6e-4c7d-9e0f-1a2b3c4d5e6f")
	fxVMIUID  = types.UID("2f6e8a1c-3d4b-4e5f-8a9b-0c1d2e3f4a5b")
	fxPodUID  = types.UID("7a9b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d")
	fxPod2UID = types.UID("9c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f")
	fxMigUID  = types.UID("4b5c6d7e-8f9a-4b0c-9d1e-2f3a4b5c6d7e")
	fxPod     = "virt-launcher-rhel9-db-x7k2p"
	fxPod2    = "virt-launcher-rhel9-db-m4q9z"
	fxNodeA   = "worker-0"
	fxNodeB   = "worker-1"
	fxMig     = "kubevirt-evacuation-5hq7t"
)

func (f fixtures) at(d time.Duration) metav1.Time { return metav1.NewTime(f.now.Add(d)) }

func (f fixtures) vm(rs kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachine {
	vm := &kubevirtv1.VirtualMachine{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fxVM, Namespace: fxNS, UID: fxVMUID, Generation: 3, CreationTimestamp: f.at(-30 * 24 * time.Hour),
			Labels: map[string]string{"app": "rhel9-db"},
		},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: ptr.To(rs),
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"kubevirt.io/vm": fxVM}},
				Spec: kubevirtv1.VirtualMachineInstanceSpec{
					Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Interfaces: []kubevirtv1.Interface{
						{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}},
					}}},
					Networks: []kubevirtv1.Network{{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}}},
				},
			},
		},
		Status: kubevirtv1.VirtualMachineStatus{
			Created: true, Ready: true, PrintableStatus: kubevirtv1.VirtualMachineStatusRunning, RunStrategy: rs,
			DesiredGeneration: 3, ObservedGeneration: 3,
			Conditions: []kubevirtv1.VirtualMachineCondition{
				{Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionTrue, LastTransitionTime: f.at(-2*time.Hour + 26*time.Second)},
			},
		},
	}
	if rs == kubevirtv1.RunStrategyHalted {
		vm.Status.Created, vm.Status.Ready = false, false
		vm.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusStopped
		vm.Status.Conditions = []kubevirtv1.VirtualMachineCondition{{
			Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionFalse, Reason: "VMINotExists",
			Message: "VMI does not exist", LastTransitionTime: f.at(-3 * time.Hour),
		}}
	}
	return vm
}

// fxRunningVMI has run on worker-0 for two hours with a connected guest
// agent and a masquerade pod network.
func (f fixtures) runningVMI() *kubevirtv1.VirtualMachineInstance {
	start := -2 * time.Hour
	return &kubevirtv1.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fxVM, Namespace: fxNS, UID: fxVMIUID, Generation: 9, CreationTimestamp: f.at(start),
			Labels: map[string]string{kubevirtv1.NodeNameLabel: fxNodeA, "kubevirt.io/vm": fxVM},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: fxVM, UID: fxVMUID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: kubevirtv1.VirtualMachineInstanceSpec{
			Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{Interfaces: []kubevirtv1.Interface{
				{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}},
			}}},
			Networks: []kubevirtv1.Network{{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}}},
		},
		Status: kubevirtv1.VirtualMachineInstanceStatus{
			NodeName: fxNodeA,
			Phase:    kubevirtv1.Running,
			PhaseTransitionTimestamps: []kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{
				{Phase: kubevirtv1.Pending, PhaseTransitionTimestamp: f.at(start)},
				{Phase: kubevirtv1.Scheduling, PhaseTransitionTimestamp: f.at(start + time.Second)},
				{Phase: kubevirtv1.Scheduled, PhaseTransitionTimestamp: f.at(start + 18*time.Second)},
				{Phase: kubevirtv1.Running, PhaseTransitionTimestamp: f.at(start + 25*time.Second)},
			},
			Conditions: []kubevirtv1.VirtualMachineInstanceCondition{
				{Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue, LastTransitionTime: f.at(start + 26*time.Second)},
				{Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionTrue, LastTransitionTime: f.at(start + 25*time.Second)},
				{Type: kubevirtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue,
					LastProbeTime: f.at(start + 61*time.Second), LastTransitionTime: f.at(start + 61*time.Second)},
			},
			ActivePods: map[types.UID]string{fxPodUID: fxNodeA},
			Interfaces: []kubevirtv1.VirtualMachineInstanceNetworkInterface{{
				Name: "default", IP: "10.244.1.17", IPs: []string{"10.244.1.17"}, MAC: "02:3f:9a:00:00:01",
				InterfaceName: "eth0", InfoSource: "domain, guest-agent", PodInterfaceName: "eth0", QueueCount: 1, LinkState: "up",
			}},
			GuestOSInfo: kubevirtv1.VirtualMachineInstanceGuestOSInfo{
				Name: "Red Hat Enterprise Linux", PrettyName: "Red Hat Enterprise Linux 9.4 (Plow)", Version: "9.4",
				VersionID: "9.4", KernelRelease: "5.14.0-427.13.1.el9_4.x86_64", Machine: "x86_64", ID: "rhel",
			},
			MigrationMethod:               kubevirtv1.LiveMigration,
			QOSClass:                      ptr.To(corev1.PodQOSBurstable),
			LauncherContainerImageVersion: "quay.io/kubevirt/virt-launcher:v1.9.0",
		},
	}
}

func (f fixtures) launcherPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fxPod, Namespace: fxNS, UID: fxPodUID, CreationTimestamp: f.at(-2 * time.Hour),
			Labels: map[string]string{
				kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.CreatedByLabel: string(fxVMIUID),
				"vm.kubevirt.io/name": fxVM, kubevirtv1.VirtualMachineInstanceIDLabel: fxVM, kubevirtv1.NodeNameLabel: fxNodeA,
			},
			Annotations: map[string]string{kubevirtv1.DomainAnnotation: fxVM, "kubectl.kubernetes.io/default-container": "compute"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: fxVM, UID: fxVMIUID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName: fxNodeA, RestartPolicy: corev1.RestartPolicyNever,
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: kubevirtv1.VirtualMachineUnpaused}},
			Containers: []corev1.Container{{
				Name: "compute", Image: "quay.io/kubevirt/virt-launcher:v1.9.0",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("2294Mi"),
				}},
			}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: kubevirtv1.VirtualMachineUnpaused, Status: corev1.ConditionTrue, Reason: "NotPaused", LastTransitionTime: f.at(-2*time.Hour + 10*time.Second)},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: f.at(-2*time.Hour + 8*time.Second)},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: f.at(-2*time.Hour + 17*time.Second)},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: f.at(-2*time.Hour + 17*time.Second)},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: f.at(-2 * time.Hour)},
			},
			HostIP: "10.0.0.11", PodIP: "10.244.1.17", PodIPs: []corev1.PodIP{{IP: "10.244.1.17"}},
			QOSClass: corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "compute", Ready: true, Started: ptr.To(true), Image: "quay.io/kubevirt/virt-launcher:v1.9.0",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: f.at(-2*time.Hour + 9*time.Second)}},
			}},
		},
	}
}

// fxNode is a Ready node whose virt-handler last beat `heartbeatAge` ago.
func (f fixtures) node(name string, heartbeatAge time.Duration) *corev1.Node {
	return &corev1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: types.UID("node-uid-" + name), CreationTimestamp: f.at(-90 * 24 * time.Hour),
			Labels:      map[string]string{"kubernetes.io/hostname": name, kubevirtv1.NodeSchedulable: "true"},
			Annotations: map[string]string{kubevirtv1.VirtHandlerHeartbeat: f.now.Add(-heartbeatAge).Format(time.RFC3339)},
		},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status",
			LastHeartbeatTime: f.at(-20 * time.Second), LastTransitionTime: f.at(-40 * 24 * time.Hour),
		}}},
	}
}

// fxMigration is an evacuation migration of the VMI from worker-0 to
// worker-1 created at `created`, now in phase p since `since`.
func (f fixtures) migration(p kubevirtv1.VirtualMachineInstanceMigrationPhase, created, since time.Duration) *kubevirtv1.VirtualMachineInstanceMigration {
	m := &kubevirtv1.VirtualMachineInstanceMigration{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstanceMigration"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fxMig, Namespace: fxNS, UID: fxMigUID, CreationTimestamp: f.at(created), GenerateName: "kubevirt-evacuation-",
			Labels:      map[string]string{kubevirtv1.MigrationSelectorLabel: fxVM},
			Annotations: map[string]string{kubevirtv1.EvacuationMigrationAnnotation: fxNodeA},
		},
		Spec: kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: fxVM},
		Status: kubevirtv1.VirtualMachineInstanceMigrationStatus{
			Phase: p,
			PhaseTransitionTimestamps: []kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{
				{Phase: kubevirtv1.MigrationPending, PhaseTransitionTimestamp: f.at(created)},
			},
			MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{SourcePod: fxPod, SourceNode: fxNodeA},
		},
	}
	if p != kubevirtv1.MigrationPending {
		m.Status.PhaseTransitionTimestamps = append(m.Status.PhaseTransitionTimestamps,
			kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{Phase: p, PhaseTransitionTimestamp: f.at(since)})
	}
	return m
}

func (f fixtures) input() verdict.Input {
	return verdict.Input{
		Namespace: fxNS, Name: fxVM,
		VM:     f.vm(kubevirtv1.RunStrategyAlways),
		VMI:    f.runningVMI(),
		Pods:   []*corev1.Pod{f.launcherPod()},
		Nodes:  map[string]*corev1.Node{fxNodeA: f.node(fxNodeA, 47*time.Second), fxNodeB: f.node(fxNodeB, 63*time.Second)},
		Policy: verdict.DefaultPolicy(),
		Now:    f.now,
	}
}

// scenario is one VMObservation and what each tool must read from it.
type scenario struct {
	name string
	obs  *v1alpha1.VMObservation
	// verdict and reason the engine must produce, so a change in the engine
	// that invalidates the scenario fails loudly rather than silently
	// testing something else.
	verdict v1alpha1.Verdict
	reason  string
	// argo is Argo CD's health status; kstatus is kstatus' status; cel is
	// what Flux makes of docs/flux-healthcheck.yaml's expressions, when it
	// differs from kstatus.
	argo, kstatus, cel string
}

// observation wraps an engine status in a VMObservation the way the
// controller stores it: owned by the VM, observedGeneration = generation.
func (f fixtures) observation(st *v1alpha1.VMObservationStatus, generation, observed int64) *v1alpha1.VMObservation {
	o := &v1alpha1.VMObservation{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "VMObservation"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fxVM, Namespace: fxNS, UID: "c0ffee00-1234-4abc-8def-0123456789ab", Generation: generation,
			CreationTimestamp: f.at(-30 * 24 * time.Hour), Labels: map[string]string{"app.kubernetes.io/managed-by": "vmobs"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: fxVM, UID: fxVMUID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: v1alpha1.VMObservationSpec{VMName: fxVM},
	}
	if st != nil {
		o.Status = *st.DeepCopy()
		o.Status.ObservedGeneration = observed
	}
	return o
}

func evaluate(in verdict.Input) *v1alpha1.VMObservationStatus {
	res := verdict.Evaluate(in)
	return res.Status.DeepCopy()
}

// scenarios builds every case. Degraded past the stalled threshold needs
// the verdict's lastTransitionTime to be older than StalledAfter: the
// engine keeps it from the previous status, as the controller does.
func scenarios(t testing.TB) []scenario {
	t.Helper()
	f := fixtures{now: fixedNow}
	var out []scenario
	add := func(name string, in verdict.Input, v v1alpha1.Verdict, reason, argo, kst string) {
		st := evaluate(in)
		out = append(out, scenario{name: name, obs: f.observation(st, 2, 2), verdict: v, reason: reason, argo: argo, kstatus: kst})
	}

	add("healthy", f.input(), v1alpha1.VerdictHealthy, v1alpha1.ReasonRunning, "Healthy", "Current")

	stopped := f.input()
	stopped.VM = f.vm(kubevirtv1.RunStrategyHalted)
	stopped.VMI, stopped.Pods = nil, nil
	add("suspended-stopped-as-declared", stopped, v1alpha1.VerdictSuspended, v1alpha1.ReasonStopped, "Suspended", "Current")

	paused := f.input()
	paused.VMI.Status.Conditions = append(paused.VMI.Status.Conditions, kubevirtv1.VirtualMachineInstanceCondition{
		Type: kubevirtv1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue, Reason: "PausedByUser",
		Message: "VMI was paused by user", LastTransitionTime: f.at(-10 * time.Minute), LastProbeTime: f.at(-10 * time.Minute),
	})
	for i := range paused.Pods[0].Status.Conditions {
		c := &paused.Pods[0].Status.Conditions[i]
		if c.Type == kubevirtv1.VirtualMachineUnpaused || c.Type == corev1.PodReady {
			c.Status, c.LastTransitionTime = corev1.ConditionFalse, f.at(-10*time.Minute)
		}
	}
	add("suspended-paused", paused, v1alpha1.VerdictSuspended, v1alpha1.ReasonPausedByUser, "Suspended", "Current")

	scheduling := f.input()
	scheduling.VMI = f.runningVMI()
	scheduling.VMI.CreationTimestamp = f.at(-90 * time.Second)
	scheduling.VMI.Status = kubevirtv1.VirtualMachineInstanceStatus{
		Phase: kubevirtv1.Scheduling,
		PhaseTransitionTimestamps: []kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{
			{Phase: kubevirtv1.Pending, PhaseTransitionTimestamp: f.at(-90 * time.Second)},
			{Phase: kubevirtv1.Scheduling, PhaseTransitionTimestamp: f.at(-89 * time.Second)},
		},
		Conditions: []kubevirtv1.VirtualMachineInstanceCondition{{
			Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse, Reason: kubevirtv1.GuestNotRunningReason,
			Message: "Guest VM is not reported as running", LastTransitionTime: f.at(-90 * time.Second),
		}},
	}
	pending := f.launcherPod()
	pending.CreationTimestamp = f.at(-89 * time.Second)
	pending.Spec.NodeName = ""
	pending.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable}
	scheduling.Pods = []*corev1.Pod{pending}
	scheduling.VM.Status.Ready, scheduling.VM.Status.PrintableStatus = false, kubevirtv1.VirtualMachineStatusStarting
	add("progressing-scheduling", scheduling, v1alpha1.VerdictProgressing, v1alpha1.ReasonScheduling, "Progressing", "InProgress")

	migrating := f.input()
	migrating.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{f.migration(kubevirtv1.MigrationScheduling, -40*time.Second, -39*time.Second)}
	migrating.VMI.Status.EvacuationNodeName = fxNodeA
	add("progressing-migrating", migrating, v1alpha1.VerdictProgressing, v1alpha1.ReasonMigrating, "Progressing", "InProgress")

	// A migration that failed three minutes ago: Degraded, not yet past the
	// stalled threshold (15m), so kstatus still waits.
	failedMig := f.input()
	fm := f.migration(kubevirtv1.MigrationFailed, -8*time.Minute, -3*time.Minute)
	fm.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{
		SourcePod: fxPod, SourceNode: fxNodeA, TargetNode: fxNodeB, TargetPod: fxPod2, MigrationUID: fxMigUID,
		StartTimestamp: ptr.To(f.at(-7 * time.Minute)), EndTimestamp: ptr.To(f.at(-3 * time.Minute)), Failed: true,
		FailureReason: "Live migration failed: target pod virt-launcher-rhel9-db-m4q9z shut down",
	}
	failedMig.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{fm}
	failedMig.VMI.Status.MigrationState = fm.Status.MigrationState.DeepCopy()
	add("degraded-migration-failed", failedMig, v1alpha1.VerdictDegraded, v1alpha1.ReasonMigrationFailed, "Degraded", "InProgress")

	// A migration stuck in Scheduling for 40 minutes (target pod
	// unschedulable): Degraded since the phase timeout, 35 minutes ago,
	// longer than the stalled threshold: Stalled=True, kstatus Failed.
	stuck := f.input()
	stuck.Migrations = []*kubevirtv1.VirtualMachineInstanceMigration{f.migration(kubevirtv1.MigrationScheduling, -40*time.Minute, -40*time.Minute+time.Second)}
	stuck.VMI.Status.EvacuationNodeName = fxNodeA
	add("degraded-stalled-migration-stuck", stuck, v1alpha1.VerdictDegraded, v1alpha1.ReasonMigrationStuck, "Degraded", "Failed")

	vmiFailed := f.input()
	vmiFailed.VM = f.vm(kubevirtv1.RunStrategyManual)
	vmiFailed.VM.Status.Ready, vmiFailed.VM.Status.PrintableStatus = false, kubevirtv1.VirtualMachineStatusStopped
	vmiFailed.VMI.Status.Phase = kubevirtv1.Failed
	vmiFailed.VMI.Status.PhaseTransitionTimestamps = append(vmiFailed.VMI.Status.PhaseTransitionTimestamps,
		kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: kubevirtv1.Failed, PhaseTransitionTimestamp: f.at(-6 * time.Minute)})
	vmiFailed.VMI.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{{
		Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse, Reason: kubevirtv1.PodTerminatingReason,
		Message: "virt-launcher pod is terminating", LastTransitionTime: f.at(-6 * time.Minute),
	}}
	vmiFailed.VMI.Status.ActivePods = nil
	failedPod := f.launcherPod()
	failedPod.Status.Phase = corev1.PodFailed
	failedPod.Status.ContainerStatuses[0].Ready = false
	failedPod.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 1, Reason: "Error", StartedAt: f.at(-2*time.Hour + 9*time.Second), FinishedAt: f.at(-6 * time.Minute),
	}}
	for i := range failedPod.Status.Conditions {
		c := &failedPod.Status.Conditions[i]
		if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			c.Status, c.Reason, c.LastTransitionTime = corev1.ConditionFalse, "PodFailed", f.at(-6*time.Minute)
		}
	}
	vmiFailed.Pods = []*corev1.Pod{failedPod}
	add("failed-vmi-failed", vmiFailed, v1alpha1.VerdictFailed, v1alpha1.ReasonVMIFailed, "Degraded", "Failed")

	// virt-handler on worker-0 stopped beating 12 minutes ago: the node
	// layer cannot be judged, and neither can what the VMI says.
	stale := f.input()
	stale.Nodes[fxNodeA] = f.node(fxNodeA, 12*time.Minute)
	add("unknown-node-agent-stale", stale, v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeAgentStale, "Unknown", "InProgress")

	// The user edited spec (generation 3) and vmobs has not caught up.
	st := evaluate(f.input())
	out = append(out, scenario{name: "progressing-stale-generation", obs: f.observation(st, 3, 2),
		verdict: v1alpha1.VerdictHealthy, reason: v1alpha1.ReasonRunning, argo: "Progressing", kstatus: "InProgress"})

	// Just applied from Git: no status yet. kstatus reads an object with
	// no conditions as Current (kustomize-controller#387); the CEL
	// expressions cannot read `status`, which Flux reports as Unknown and
	// waits on.
	out = append(out, scenario{name: "progressing-no-status", obs: f.observation(nil, 1, 0), argo: "Progressing", kstatus: "Current", cel: "Unknown"})
	return out
}

// toUnstructured turns a typed object into the map a dynamic client or a
// YAML file gives. An empty status is dropped, as the API server drops the
// status of a new object whose CRD has a status subresource.
func toUnstructured(t testing.TB, obj any) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := m["status"].(map[string]any); ok && len(st) == 0 {
		delete(m, "status")
	}
	return &unstructured.Unstructured{Object: m}
}

func TestScenariosAreWhatTheEngineSays(t *testing.T) {
	for _, sc := range scenarios(t) {
		if sc.verdict == "" {
			continue
		}
		if sc.obs.Status.Verdict != sc.verdict || sc.obs.Status.Reason != sc.reason {
			t.Errorf("%s: engine says %s/%s, scenario expects %s/%s (message %q): fix the fixture",
				sc.name, sc.obs.Status.Verdict, sc.obs.Status.Reason, sc.verdict, sc.reason, sc.obs.Status.Message)
		}
	}
}
