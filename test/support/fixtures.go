package support

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/kvtest"
	"github.com/vmobs/vmobs/internal/verdict"
)

// The objects of one VM the way KubeVirt v1.9 leaves them (a VM, its VMI,
// the virt-launcher pod, the Node with virt-handler's heartbeat,
// migrations): test/integrations runs the verdict engine on them for the
// VMObservations it feeds to Argo CD's Lua, kstatus and CEL;
// test/packaging installs them on a real API server.

// FixedNow is the evaluation time of the scenarios; tests on a real API
// server build the same objects around the real clock.
var FixedNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Fixtures builds the objects around Now.
type Fixtures struct{ Now time.Time }

// The names and UIDs of the VM's objects.
const (
	VMNamespace   = "vms-prod"
	VMName        = "rhel9-db"
	VMUID         = types.UID("8d3c1f2a-5b6e-4c7d-9e0f-1a2b3c4d5e6f")
	VMIUID        = types.UID("2f6e8a1c-3d4b-4e5f-8a9b-0c1d2e3f4a5b")
	PodUID        = types.UID("7a9b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d")
	TargetPodUID  = types.UID("9c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f")
	MigrationUID  = types.UID("4b5c6d7e-8f9a-4b0c-9d1e-2f3a4b5c6d7e")
	PodName       = "virt-launcher-rhel9-db-x7k2p"
	TargetPodName = "virt-launcher-rhel9-db-m4q9z"
	NodeA         = "worker-0"
	NodeB         = "worker-1"
	MigrationName = "kubevirt-evacuation-5hq7t"
)

// The objects are kvtest's, renamed into the scenarios' namespace and
// reshaped by the modifiers below into a RHEL VM with one pod network.

// At is Now shifted by d.
func (f Fixtures) At(d time.Duration) metav1.Time { return metav1.NewTime(f.Now.Add(d)) }

// rename moves an object built by kvtest to the scenarios' names.
func rename(m *metav1.ObjectMeta, name string, uid types.UID) {
	m.Namespace, m.Name, m.UID = VMNamespace, name, uid
	if m.Labels[kubevirtv1.NodeNameLabel] != "" {
		m.Labels[kubevirtv1.NodeNameLabel] = NodeA
	}
	if m.Labels["kubevirt.io/vm"] != "" {
		m.Labels["kubevirt.io/vm"] = VMName
	}
	for i := range m.OwnerReferences {
		o := &m.OwnerReferences[i]
		switch o.Kind {
		case "VirtualMachine":
			o.Name, o.UID = VMName, VMUID
		case "VirtualMachineInstance":
			o.Name, o.UID = VMName, VMIUID
		}
	}
}

// podNetworkOnly keeps the masquerade pod network and drops the Multus one.
func podNetworkOnly(s *kubevirtv1.VirtualMachineInstanceSpec) {
	s.Domain.Devices.Interfaces = s.Domain.Devices.Interfaces[:1]
	s.Networks = s.Networks[:1]
}

// VM is the VirtualMachine under run strategy rs, stopped when rs is
// Halted.
func (f Fixtures) VM(rs kubevirtv1.VirtualMachineRunStrategy) *kubevirtv1.VirtualMachine {
	tmpl := kvtest.RunningVMI().Spec
	podNetworkOnly(&tmpl)
	mods := []kvtest.VMMod{kvtest.WithRunStrategy(rs), func(vm *kubevirtv1.VirtualMachine) {
		rename(&vm.ObjectMeta, VMName, VMUID)
		vm.Generation, vm.CreationTimestamp = 3, kvtest.At(-30*24*time.Hour)
		vm.Labels = map[string]string{"app": "rhel9-db"}
		vm.Spec.Template = &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"kubevirt.io/vm": VMName}},
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
	return kvtest.Retime(kvtest.VM(mods...), f.Now)
}

// RunningVMI has run on worker-0 for two hours with a connected guest
// agent and a masquerade pod network.
func (f Fixtures) RunningVMI() *kubevirtv1.VirtualMachineInstance {
	return kvtest.Retime(kvtest.RunningVMI(
		kvtest.WithoutCondition(kubevirtv1.VirtualMachineInstanceIsStorageLiveMigratable),
		func(v *kubevirtv1.VirtualMachineInstance) {
			rename(&v.ObjectMeta, VMName, VMIUID)
			v.Generation = 9
			podNetworkOnly(&v.Spec)
			v.Status.NodeName = NodeA
			v.Status.ActivePods = map[types.UID]string{PodUID: NodeA}
			v.Status.Interfaces = v.Status.Interfaces[:1]
			v.Status.Interfaces[0].IPs = []string{"10.244.1.17"}
			v.Status.GuestOSInfo = kubevirtv1.VirtualMachineInstanceGuestOSInfo{
				Name: "Red Hat Enterprise Linux", PrettyName: "Red Hat Enterprise Linux 9.4 (Plow)", Version: "9.4",
				VersionID: "9.4", KernelRelease: "5.14.0-427.13.1.el9_4.x86_64", Machine: "x86_64", ID: "rhel",
			}
		}), f.Now)
}

// LauncherPod is the running virt-launcher pod of RunningVMI on worker-0.
func (f Fixtures) LauncherPod() *corev1.Pod {
	return kvtest.Retime(kvtest.LauncherPod(func(p *corev1.Pod) {
		rename(&p.ObjectMeta, PodName, PodUID)
		p.Labels[kubevirtv1.CreatedByLabel] = string(VMIUID)
		p.Labels["vm.kubevirt.io/name"], p.Labels[kubevirtv1.VirtualMachineInstanceIDLabel] = VMName, VMName
		p.Annotations = map[string]string{kubevirtv1.DomainAnnotation: VMName, "kubectl.kubernetes.io/default-container": "compute"}
		p.Spec.NodeName = NodeA
		p.Spec.Containers[0].Image = "quay.io/kubevirt/virt-launcher:v1.9.0"
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("2294Mi"),
		}
		p.Status.Conditions = slices.DeleteFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReadyToStartContainers
		})
		p.Status.PodIPs = p.Status.PodIPs[:1]
		p.Status.InitContainerStatuses = nil
	}), f.Now)
}

// Node is a Ready node whose virt-handler last beat `heartbeatAge` ago.
func (f Fixtures) Node(name string, heartbeatAge time.Duration) *corev1.Node {
	return kvtest.Retime(kvtest.Node(name, kvtest.HeartbeatAt(-heartbeatAge), func(n *corev1.Node) {
		n.Labels = map[string]string{"kubernetes.io/hostname": name, kubevirtv1.NodeSchedulable: "true"}
		n.Status.Conditions = slices.DeleteFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type != corev1.NodeReady
		})
	}), f.Now)
}

// Migration is an evacuation migration of the VMI from worker-0 to
// worker-1 created at `created`, now in phase p since `since`.
func (f Fixtures) Migration(p kubevirtv1.VirtualMachineInstanceMigrationPhase, created, since time.Duration) *kubevirtv1.VirtualMachineInstanceMigration {
	return kvtest.Retime(kvtest.VMIM(func(m *kubevirtv1.VirtualMachineInstanceMigration) {
		m.Namespace, m.Name, m.UID, m.CreationTimestamp = VMNamespace, MigrationName, MigrationUID, kvtest.At(created)
		m.Labels[kubevirtv1.MigrationSelectorLabel] = VMName
		m.Annotations[kubevirtv1.EvacuationMigrationAnnotation] = NodeA
		m.Spec.VMIName = VMName
		m.Status.Phase = p
		m.Status.PhaseTransitionTimestamps = []kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{
			{Phase: kubevirtv1.MigrationPending, PhaseTransitionTimestamp: kvtest.At(created)},
		}
		if p != kubevirtv1.MigrationPending {
			m.Status.PhaseTransitionTimestamps = append(m.Status.PhaseTransitionTimestamps,
				kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{Phase: p, PhaseTransitionTimestamp: kvtest.At(since)})
		}
		m.Status.MigrationState = &kubevirtv1.VirtualMachineInstanceMigrationState{SourcePod: PodName, SourceNode: NodeA}
	}), f.Now)
}

// Succeeded is the VM under run strategy rs after its guest shut down six
// minutes ago: the VMI Succeeded, its launcher pod Completed.
func (f Fixtures) Succeeded(rs kubevirtv1.VirtualMachineRunStrategy) verdict.Input {
	return f.Ended(rs, kubevirtv1.Succeeded)
}

// Ended is the VM under run strategy rs whose VMI ended six minutes ago in
// phase (Succeeded or Failed), its launcher pod Completed or in Error.
func (f Fixtures) Ended(rs kubevirtv1.VirtualMachineRunStrategy, phase kubevirtv1.VirtualMachineInstancePhase) verdict.Input {
	podPhase, exitCode, reason, condReason := corev1.PodSucceeded, int32(0), "Completed", "PodCompleted"
	if phase == kubevirtv1.Failed {
		podPhase, exitCode, reason, condReason = corev1.PodFailed, 1, "Error", "PodFailed"
	}
	in := f.Input()
	in.VM = f.VM(rs)
	in.VM.Status.Ready, in.VM.Status.PrintableStatus = false, kubevirtv1.VirtualMachineStatusStopped
	if phase == kubevirtv1.Succeeded {
		in.VM.Status.Conditions[0].Status, in.VM.Status.Conditions[0].LastTransitionTime = corev1.ConditionFalse, f.At(-6*time.Minute)
	}
	in.VMI.Status.Phase = phase
	in.VMI.Status.PhaseTransitionTimestamps = append(in.VMI.Status.PhaseTransitionTimestamps,
		kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: phase, PhaseTransitionTimestamp: f.At(-6 * time.Minute)})
	in.VMI.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{{
		Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse, Reason: kubevirtv1.PodTerminatingReason,
		Message: "virt-launcher pod is terminating", LastTransitionTime: f.At(-6 * time.Minute),
	}}
	in.VMI.Status.ActivePods = nil
	pod := f.LauncherPod()
	pod.Status.Phase = podPhase
	pod.Status.ContainerStatuses[0].Ready = false
	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: exitCode, Reason: reason, StartedAt: f.At(-2*time.Hour + 9*time.Second), FinishedAt: f.At(-6 * time.Minute),
	}}
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			c.Status, c.Reason, c.LastTransitionTime = corev1.ConditionFalse, condReason, f.At(-6*time.Minute)
		}
	}
	in.Pods = []*corev1.Pod{pod}
	return in
}

// Input is the engine's input for the healthy VM: running on worker-0,
// both nodes' virt-handlers beating.
func (f Fixtures) Input() verdict.Input {
	return verdict.Input{
		Namespace: VMNamespace, Name: VMName,
		VM:     f.VM(kubevirtv1.RunStrategyAlways),
		VMI:    f.RunningVMI(),
		Pods:   []*corev1.Pod{f.LauncherPod()},
		Nodes:  map[string]*corev1.Node{NodeA: f.Node(NodeA, 47*time.Second), NodeB: f.Node(NodeB, 63*time.Second)},
		Policy: verdict.DefaultPolicy(),
		Now:    f.Now,
	}
}

// Observation wraps an engine status in a VMObservation the way the
// controller stores it: owned by the VM, observedGeneration = generation.
func (f Fixtures) Observation(st *v1alpha1.VMObservationStatus, generation, observed int64) *v1alpha1.VMObservation {
	o := &v1alpha1.VMObservation{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "VMObservation"},
		ObjectMeta: metav1.ObjectMeta{
			Name: VMName, Namespace: VMNamespace, UID: "c0ffee00-1234-4abc-8def-0123456789ab", Generation: generation,
			CreationTimestamp: f.At(-30 * 24 * time.Hour), Labels: map[string]string{"app.kubernetes.io/managed-by": "vmobs"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: VMName, UID: VMUID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: v1alpha1.VMObservationSpec{VMName: VMName},
	}
	if st != nil {
		o.Status = *st.DeepCopy()
		o.Status.ObservedGeneration = observed
	}
	return o
}
