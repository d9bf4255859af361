package integrations

import (
	"slices"
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
	"github.com/vmobs/vmobs/internal/history"
	"github.com/vmobs/vmobs/internal/kvtest"
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

// The objects are kvtest's, renamed into the scenarios' namespace and
// reshaped by the modifiers below into a RHEL VM with one pod network.

func (f fixtures) at(d time.Duration) metav1.Time { return metav1.NewTime(f.now.Add(d)) }

// rename moves an object built by kvtest to the scenarios' names.
func rename(m *metav1.ObjectMeta, name string, uid types.UID) {
	m.Namespace, m.Name, m.UID = fxNS, name, uid
	if m.Labels[kubevirtv1.NodeNameLabel] != "" {
		m.Labels[kubevirtv1.NodeNameLabel] = fxNodeA
	}
	if m.Labels["kubevirt.io/vm"] != "" {
		m.Labels["kubevirt.io/vm"] = fxVM
	}
	for i := range m.OwnerReferences {
		o := &m.OwnerReferences[i]
		switch o.Kind {
		case "VirtualMachine":
			o.Name, o.UID = fxVM, fxVMUID
		case "VirtualMachineInstance":
			o.Name, o.UID = fxVM, fxVMIUID
		}
	}
}

// podNetworkOnly keeps the masquerade pod network and drops the Multus one.
func podNetworkOnly(s *kubevirtv1.VirtualMachineInstanceSpec) {
	s.Domain.Devices.Interfaces = s.Domain.Devices.Interfaces[:1]
	s.Networks = s.Networks[:1]
}

func (f fixtures) vm(rs kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachine {
	tmpl := kvtest.RunningVMI().Spec
	podNetworkOnly(&tmpl)
	mods := []kvtest.VMMod{kvtest.WithRunStrategy(rs), func(vm *kubevirtv1.VirtualMachine) {
		rename(&vm.ObjectMeta, fxVM, fxVMUID)
		vm.Generation, vm.CreationTimestamp = 3, kvtest.At(-30*24*time.Hour)
		vm.Labels = map[string]string{"app": "rhel9-db"}
		vm.Spec.Template = &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"kubevirt.io/vm": fxVM}},
			Spec:       tmpl,
		}
		vm.Status.DesiredGeneration, vm.Status.ObservedGeneration = 3, 3
		vm.Status.Conditions[0].LastTransitionTime = kvtest.At(-2*time.Hour + 26*time.Second)
	}}
	if rs == kubevirtv1.RunStrategyHalted {
		mods = append(mods, kvtest.VMStopped(), func(vm *kubevirtv1.VirtualMachine) {
			vm.Status.Conditions[0].LastTransitionTime = kvtest.At(-3 * time.Hour)
		})
	}
	return kvtest.Retime(kvtest.VM(mods...), f.now)
}

// runningVMI has run on worker-0 for two hours with a connected guest
// agent and a masquerade pod network.
func (f fixtures) runningVMI() *kubevirtv1.VirtualMachineInstance {
	return kvtest.Retime(kvtest.RunningVMI(
		kvtest.WithoutCondition(kubevirtv1.VirtualMachineInstanceIsStorageLiveMigratable),
		func(v *kubevirtv1.VirtualMachineInstance) {
			rename(&v.ObjectMeta, fxVM, fxVMIUID)
			v.Generation = 9
			podNetworkOnly(&v.Spec)
			v.Status.NodeName = fxNodeA
			v.Status.ActivePods = map[types.UID]string{fxPodUID: fxNodeA}
			v.Status.Interfaces = v.Status.Interfaces[:1]
			v.Status.Interfaces[0].IPs = []string{"10.244.1.17"}
			v.Status.GuestOSInfo = kubevirtv1.VirtualMachineInstanceGuestOSInfo{
				Name: "Red Hat Enterprise Linux", PrettyName: "Red Hat Enterprise Linux 9.4 (Plow)", Version: "9.4",
				VersionID: "9.4", KernelRelease: "5.14.0-427.13.1.el9_4.x86_64", Machine: "x86_64", ID: "rhel",
			}
		}), f.now)
}

func (f fixtures) launcherPod() *corev1.Pod {
	return kvtest.Retime(kvtest.LauncherPod(func(p *corev1.Pod) {
		rename(&p.ObjectMeta, fxPod, fxPodUID)
		p.Labels[kubevirtv1.CreatedByLabel] = string(fxVMIUID)
		p.Labels["vm.kubevirt.io/name"], p.Labels[kubevirtv1.VirtualMachineInstanceIDLabel] = fxVM, fxVM
		p.Annotations = map[string]string{kubevirtv1.DomainAnnotation: fxVM, "kubectl.kubernetes.io/default-container": "compute"}
		p.Spec.NodeName = fxNodeA
		p.Spec.Containers[0].Image = "quay.io/kubevirt/virt-launcher:v1.9.0"
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("2294Mi"),
		}
		p.Status.Conditions = slices.DeleteFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReadyToStartContainers
		})
		p.Status.PodIPs = p.Status.PodIPs[:1]
		p.Status.InitContainerStatuses = nil
	}), f.now)
}

// node is a Ready node whose virt-handler last beat `heartbeatAge` ago.
func (f fixtures) node(name string, heartbeatAge time.Duration) *corev1.Node {
	return kvtest.Retime(kvtest.Node(name, kvtest.HeartbeatAt(-heartbeatAge), func(n *corev1.Node) {
		n.Labels = map[string]string{"kubernetes.io/hostname": name, kubevirtv1.NodeSchedulable: "true"}
		n.Status.Conditions = slices.DeleteFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type != corev1.NodeReady
		})
	}), f.now)
}

// migration is an evacuation migration of the VMI from worker-0 to
// worker-1 created at `created`, now in phase p since `since`.
func (f fixtures) migration(p kubevirtv1.VirtualMachineInstanceMigrationPhase, created, since time.Duration) *kubevirtv1.VirtualMachineInstanceMigration {
	return kvtest.Retime(kvtest.VMIM(func(m *kubevirtv1.VirtualMachineInstanceMigration) {
		m.Namespace, m.Name, m.UID, m.CreationTimestamp = fxNS, fxMig, fxMigUID, kvtest.At(created)
		m.Labels[kubevirtv1.MigrationSelectorLabel] = fxVM
		m.Annotations[kubevirtv1.EvacuationMigrationAnnotation] = fxNodeA
		m.Spec.VMIName = fxVM
		m.Status.Phase = p
		m.Status.PhaseTransitionTimestamps = []kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{
			{Phase: kubevirtv1.MigrationPending, PhaseTransitionTimestamp: kvtest.At(created)},
		}
		if p != kubevirtv1.MigrationPending {
			m.Status.PhaseTransitionTimestamps = append(m.Status.PhaseTransitionTimestamps,
				kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{Phase: p, PhaseTransitionTimestamp: kvtest.At(since)})
		}
		m.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{SourcePod: fxPod, SourceNode: fxNodeA}
	}), f.now)
}

// succeeded is the VM under run strategy rs after its guest shut down six
// minutes ago: the VMI Succeeded, its launcher pod Completed.
func (f fixtures) succeeded(rs kubevirtv1.VirtualMachineRunStrategy) verdict.Input {
	in := f.input()
	in.VM = f.vm(rs)
	in.VM.Status.Ready, in.VM.Status.PrintableStatus = false, kubevirtv1.VirtualMachineStatusStopped
	in.VM.Status.Conditions[0].Status, in.VM.Status.Conditions[0].LastTransitionTime = corev1.ConditionFalse, f.at(-6*time.Minute)
	in.VMI.Status.Phase = kubevirtv1.Succeeded
	in.VMI.Status.PhaseTransitionTimestamps = append(in.VMI.Status.PhaseTransitionTimestamps,
		kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: kubevirtv1.Succeeded, PhaseTransitionTimestamp: f.at(-6 * time.Minute)})
	in.VMI.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{{
		Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse, Reason: kubevirtv1.PodTerminatingReason,
		Message: "virt-launcher pod is terminating", LastTransitionTime: f.at(-6 * time.Minute),
	}}
	in.VMI.Status.ActivePods = nil
	pod := f.launcherPod()
	pod.Status.Phase = corev1.PodSucceeded
	pod.Status.ContainerStatuses[0].Ready = false
	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 0, Reason: "Completed", StartedAt: f.at(-2*time.Hour + 9*time.Second), FinishedAt: f.at(-6 * time.Minute),
	}}
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			c.Status, c.Reason, c.LastTransitionTime = corev1.ConditionFalse, "PodCompleted", f.at(-6*time.Minute)
		}
	}
	in.Pods = []*corev1.Pod{pod}
	return in
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
	// argo is Argo CD's health status; kstatus is kstatus' status.
	argo, kstatus string
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
	// The status the controller writes: with status.vm and status.history.
	history.Apply(nil, &res.Status, in)
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

	// Stopped as declared: Suspended for vmobs, Healthy for Argo CD,
	// whose sync waits on anything but Healthy and Degraded.
	stopped := f.input()
	stopped.VM = f.vm(kubevirtv1.RunStrategyHalted)
	stopped.VMI, stopped.Pods = nil, nil
	add("healthy-stopped-as-declared", stopped, v1alpha1.VerdictSuspended, v1alpha1.ReasonStopped, "Healthy", "Current")

	// The guest shut itself down and the run strategy leaves it so: Once
	// runs the VM once, RerunOnFailure reruns it only after a failure,
	// Manual never starts it by itself.
	add("healthy-succeeded-once", f.succeeded(kubevirtv1.RunStrategyOnce), v1alpha1.VerdictSuspended, v1alpha1.ReasonVMISucceeded, "Healthy", "Current")
	add("healthy-succeeded-rerun-on-failure", f.succeeded(kubevirtv1.RunStrategyRerunOnFailure), v1alpha1.VerdictSuspended, v1alpha1.ReasonVMISucceeded, "Healthy", "Current")
	add("healthy-succeeded-manual", f.succeeded(kubevirtv1.RunStrategyManual), v1alpha1.VerdictSuspended, v1alpha1.ReasonVMISucceeded, "Healthy", "Current")

	// A VMI of its own (no VirtualMachine) that ended: nothing declared that
	// it should stay stopped, so Argo CD keeps it Suspended, as its own
	// VirtualMachineInstance check does.
	vmiOnly := f.succeeded(kubevirtv1.RunStrategyOnce)
	vmiOnly.VM = nil
	vmiOnly.VMI.OwnerReferences = nil
	add("suspended-succeeded-without-vm", vmiOnly, v1alpha1.VerdictSuspended, v1alpha1.ReasonVMISucceeded, "Suspended", "Current")

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
	// no conditions as Current (kustomize-controller#387); the recipes'
	// CEL expressions cannot read `status`, which Flux reports as Unknown
	// and waits on (hack/flux).
	out = append(out, scenario{name: "progressing-no-status", obs: f.observation(nil, 1, 0), argo: "Progressing", kstatus: "Current"})
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
