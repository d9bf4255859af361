// Package kvtest builds the KubeVirt objects the tests feed to the verdict
// engine, the controller and the integration tests: a VirtualMachine, its
// VirtualMachineInstance, the virt-launcher Pod, Nodes and migrations, each
// written the way KubeVirt v1.9 writes it (see the project's KubeVirt v1.9
// status-surface reference). It is used only by tests.
//
// Every builder returns the healthy default and takes modifiers, in the style
// of cert-manager's test/unit/gen: VM, RunningVMI, LauncherPod, Node and VMIM.
// The defaults are a VM vm1 in namespace prod, its VMI running on node-a in
// virt-launcher-vm1-abcde, a masquerade pod network and a bridge Multus
// network, a connected guest agent. Times are relative to the fixed clock Now.
package kvtest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/membership"
)

// Now is the fixed evaluation time every object is built around.
var Now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// The names and UIDs of the default objects.
const (
	VMUID     = types.UID("a1b2c3d4-0000-4000-8000-000000000001")
	Namespace = "prod"
	VMName    = "vm1"
	VMIUID    = types.UID("5b0f5a3e-8c1a-4b9e-9f55-0a7c1d2e3f41")
	PodUID    = types.UID("c2a9d1f0-1111-4c3a-8d7e-5e6f7a8b9c0d")
	Pod2UID   = types.UID("d3b0e2a1-2222-4d4b-9e8f-6f7a8b9c0d1e")
	MigUID    = types.UID("e4c1f3b2-3333-4e5c-af90-7a8b9c0d1e2f")
	PodName   = "virt-launcher-vm1-abcde"
	Pod2Name  = "virt-launcher-vm1-fghij"
	NodeA     = "node-a"
	NodeB     = "node-b"
	MigName   = "kubevirt-evacuation-x2"
	SecIface  = "pod3f9b0c62e1d" // namescheme: "pod" + hash of the network name
)

// At is Now shifted by d.
func At(d time.Duration) metav1.Time { return metav1.NewTime(Now.Add(d)) }

// Atp is a pointer to At(d).
func Atp(d time.Duration) *metav1.Time { t := At(d); return &t }
func ptr[T any](v T) *T                { return &v }

// ---- VirtualMachine

// VMMod modifies a VirtualMachine built by VM.
type VMMod func(*kubevirtv1.VirtualMachine)

// VM is vm1 with runStrategy Always, created and Ready.
func VM(mods ...VMMod) *kubevirtv1.VirtualMachine {
	rs := kubevirtv1.RunStrategyAlways
	v := &kubevirtv1.VirtualMachine{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{
			Name: VMName, Namespace: Namespace, UID: VMUID,
			CreationTimestamp: At(-72 * time.Hour), Generation: 2,
		},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: &rs},
		Status: kubevirtv1.VirtualMachineStatus{
			Created: true, Ready: true, PrintableStatus: kubevirtv1.VirtualMachineStatusRunning,
			RunStrategy: rs,
			Conditions: []kubevirtv1.VirtualMachineCondition{
				{Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionTrue, LastTransitionTime: At(-2*time.Hour + 30*time.Second)},
			},
		},
	}
	for _, m := range mods {
		m(v)
	}
	return v
}

// WithRunStrategy sets the run strategy in spec and status.
func WithRunStrategy(rs kubevirtv1.VirtualMachineRunStrategy) VMMod {
	return func(v *kubevirtv1.VirtualMachine) { v.Spec.RunStrategy = &rs; v.Status.RunStrategy = rs }
}

// VMStopped is a VM whose VMI does not exist: not created, not Ready, Stopped.
func VMStopped() VMMod {
	return func(v *kubevirtv1.VirtualMachine) {
		v.Status.Created, v.Status.Ready = false, false
		v.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusStopped
		v.Status.Conditions = []kubevirtv1.VirtualMachineCondition{{
			Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionFalse, Reason: "VMINotExists",
			Message: "VMI does not exist", LastTransitionTime: At(-30 * time.Minute),
		}}
	}
}

// ---- VirtualMachineInstance

// VMIMod modifies a VirtualMachineInstance built by RunningVMI or PendingVMI.
type VMIMod func(*kubevirtv1.VirtualMachineInstance)

// RunningVMI is vm1's VMI, Running on node-a for two hours with a connected
// guest agent, a masquerade pod network and a bridge Multus network.
func RunningVMI(mods ...VMIMod) *kubevirtv1.VirtualMachineInstance {
	start := -2 * time.Hour
	v := &kubevirtv1.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{
			Name: VMName, Namespace: Namespace, UID: VMIUID, Generation: 14,
			CreationTimestamp: At(start),
			Labels:            map[string]string{kubevirtv1.NodeNameLabel: NodeA, "kubevirt.io/vm": VMName},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: VMName,
				UID: VMUID, Controller: ptr(true), BlockOwnerDeletion: ptr(true),
			}},
		},
		Spec: kubevirtv1.VirtualMachineInstanceSpec{
			Domain: kubevirtv1.DomainSpec{
				// virt-api's defaults leave room for hotplug: four times the
				// sockets and the memory (kv:pkg/defaults).
				CPU:    &kubevirtv1.CPU{Sockets: 1, Cores: 2, Threads: 1, MaxSockets: 4, Model: kubevirtv1.CPUModeHostModel},
				Memory: &kubevirtv1.Memory{Guest: ptr(resource.MustParse("4Gi")), MaxGuest: ptr(resource.MustParse("16Gi"))},
				Devices: kubevirtv1.Devices{
					Interfaces: []kubevirtv1.Interface{
						{Name: "default", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}},
						{Name: "ext", InterfaceBindingMethod: kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}},
					},
				},
			},
			Networks: []kubevirtv1.Network{
				{Name: "default", NetworkSource: kubevirtv1.NetworkSource{Pod: &kubevirtv1.PodNetwork{}}},
				{Name: "ext", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "ext-net"}}},
			},
		},
		Status: kubevirtv1.VirtualMachineInstanceStatus{
			NodeName: NodeA,
			Phase:    kubevirtv1.Running,
			PhaseTransitionTimestamps: []kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{
				{Phase: kubevirtv1.Pending, PhaseTransitionTimestamp: At(start)},
				{Phase: kubevirtv1.Scheduling, PhaseTransitionTimestamp: At(start + 1*time.Second)},
				{Phase: kubevirtv1.Scheduled, PhaseTransitionTimestamp: At(start + 18*time.Second)},
				{Phase: kubevirtv1.Running, PhaseTransitionTimestamp: At(start + 25*time.Second)},
			},
			Conditions: []kubevirtv1.VirtualMachineInstanceCondition{
				{Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue, LastTransitionTime: At(start + 26*time.Second)},
				{Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionTrue, LastTransitionTime: At(start + 25*time.Second)},
				{Type: kubevirtv1.VirtualMachineInstanceIsStorageLiveMigratable, Status: corev1.ConditionTrue, LastTransitionTime: At(start + 25*time.Second)},
				{Type: kubevirtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue,
					LastProbeTime: At(start + 61*time.Second), LastTransitionTime: At(start + 61*time.Second)},
			},
			ActivePods: map[types.UID]string{PodUID: NodeA},
			Interfaces: []kubevirtv1.VirtualMachineInstanceNetworkInterface{
				{
					Name: "default", IP: "10.244.1.17", IPs: []string{"10.244.1.17", "fd10:244::11"},
					MAC: "02:3f:9a:00:00:01", InterfaceName: "eth0", InfoSource: "domain, guest-agent",
					PodInterfaceName: "eth0", QueueCount: 1, LinkState: "up",
				},
				{
					Name: "ext", IP: "192.168.100.10", IPs: []string{"192.168.100.10"},
					MAC: "02:3f:9a:00:00:02", InterfaceName: "eth1", InfoSource: "domain, guest-agent, multus-status",
					PodInterfaceName: SecIface, QueueCount: 1, LinkState: "up",
				},
			},
			GuestOSInfo: kubevirtv1.VirtualMachineInstanceGuestOSInfo{
				Name: "Fedora Linux", PrettyName: "Fedora Linux 41 (Cloud Edition)", Version: "41 (Cloud Edition)",
				VersionID: "41", KernelRelease: "6.11.4-301.fc41.x86_64", Machine: "x86_64", ID: "fedora",
			},
			MigrationMethod:               kubevirtv1.LiveMigration,
			QOSClass:                      ptr(corev1.PodQOSBurstable),
			LauncherContainerImageVersion: "quay.io/kubevirt/virt-launcher:v1.9.0",
			SelinuxContext:                "system_u:system_r:container_t:s0:c417,c812",
			CurrentCPUTopology:            &kubevirtv1.CPUTopology{Sockets: 1, Cores: 2, Threads: 1},
			Memory: &kubevirtv1.MemoryStatus{
				GuestAtBoot: ptr(resource.MustParse("4Gi")), GuestRequested: ptr(resource.MustParse("4Gi")), GuestCurrent: ptr(resource.MustParse("4Gi")),
			},
		},
	}
	for _, m := range mods {
		m(v)
	}
	return v
}

// VMIPhase moves the VMI to phase p, entered at At(since).
func VMIPhase(p kubevirtv1.VirtualMachineInstancePhase, since time.Duration) VMIMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Status.Phase = p
		v.Status.PhaseTransitionTimestamps = append(v.Status.PhaseTransitionTimestamps,
			kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: p, PhaseTransitionTimestamp: At(since)})
	}
}

// PendingVMI is a VMI created `age` ago that has gone no further than
// phase p: no node, no guest, no Running-era conditions.
func PendingVMI(p kubevirtv1.VirtualMachineInstancePhase, age time.Duration, mods ...VMIMod) *kubevirtv1.VirtualMachineInstance {
	v := RunningVMI()
	v.CreationTimestamp = At(-age)
	v.Status = kubevirtv1.VirtualMachineInstanceStatus{
		Phase: p,
		PhaseTransitionTimestamps: []kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{
			{Phase: kubevirtv1.Pending, PhaseTransitionTimestamp: At(-age)},
		},
		Conditions: []kubevirtv1.VirtualMachineInstanceCondition{
			{Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse, Reason: kubevirtv1.GuestNotRunningReason,
				Message: "Guest VM is not reported as running", LastTransitionTime: At(-age)},
		},
	}
	if p != kubevirtv1.Pending {
		v.Status.PhaseTransitionTimestamps = append(v.Status.PhaseTransitionTimestamps,
			kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: p, PhaseTransitionTimestamp: At(-age + time.Second)})
	}
	if p == kubevirtv1.Scheduled {
		v.Status.NodeName = NodeA
		v.Status.ActivePods = map[types.UID]string{PodUID: NodeA}
	}
	for _, m := range mods {
		m(v)
	}
	return v
}

// WithCondition sets c, replacing a condition of the same type.
func WithCondition(c kubevirtv1.VirtualMachineInstanceCondition) VMIMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		for i := range v.Status.Conditions {
			if v.Status.Conditions[i].Type == c.Type {
				v.Status.Conditions[i] = c
				return
			}
		}
		v.Status.Conditions = append(v.Status.Conditions, c)
	}
}

// WithoutCondition removes the condition of type t.
func WithoutCondition(t kubevirtv1.VirtualMachineInstanceConditionType) VMIMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		out := v.Status.Conditions[:0]
		for _, c := range v.Status.Conditions {
			if c.Type != t {
				out = append(out, c)
			}
		}
		v.Status.Conditions = out
	}
}

// AgentGone is what virt-handler leaves when the agent disconnects: the
// condition removed, guestOSInfo and the interfaces' last data kept.
func AgentGone() VMIMod {
	return WithoutCondition(kubevirtv1.VirtualMachineInstanceAgentConnected)
}

// NoAgentEver is a guest without an agent: no condition, no guestOSInfo,
// interfaces known only from the domain and Multus.
func NoAgentEver() VMIMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		AgentGone()(v)
		v.Status.GuestOSInfo = kubevirtv1.VirtualMachineInstanceGuestOSInfo{}
		for i := range v.Status.Interfaces {
			ifc := &v.Status.Interfaces[i]
			ifc.InterfaceName = ""
			if ifc.Name == "default" {
				ifc.InfoSource = "domain"
				ifc.IPs = []string{"10.244.1.17", "fd10:244::11"}
			} else {
				ifc.InfoSource = "domain, multus-status"
				ifc.IP, ifc.IPs = "", nil
			}
		}
	}
}

// Paused sets the Paused condition with the given reason, ten minutes old.
func Paused(reason string) VMIMod {
	return WithCondition(kubevirtv1.VirtualMachineInstanceCondition{
		Type: kubevirtv1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue, Reason: reason,
		Message: "VMI was paused", LastTransitionTime: At(-10 * time.Minute), LastProbeTime: At(-10 * time.Minute),
	})
}

// MigrationState is what virt-controller hands off and the handlers fill in
// on the VMI.
func MigrationState(mods ...func(*kubevirtv1.VirtualMachineInstanceMigrationState)) VMIMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		st := &kubevirtv1.VirtualMachineInstanceMigrationState{
			MigrationUID: MigUID, SourceNode: NodeA, SourcePod: PodName,
			TargetNode: NodeB, TargetPod: Pod2Name, TargetNodeAddress: "10.0.0.12",
			StartTimestamp: Atp(-2 * time.Minute), Mode: kubevirtv1.MigrationPreCopy,
		}
		for _, m := range mods {
			m(st)
		}
		v.Status.MigrationState = st
	}
}

// Evacuating is a VMI whose node nodeName is being drained: the
// evacuationNodeName and the EvictionRequested condition.
func Evacuating(nodeName string) VMIMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Status.EvacuationNodeName = nodeName
		WithCondition(kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstanceEvictionRequested, Status: corev1.ConditionTrue,
			Reason: kubevirtv1.VirtualMachineInstanceReasonEvictionRequested, Message: "VMI is marked for eviction",
			LastTransitionTime: At(-3 * time.Minute),
		})(v)
	}
}

// ---- virt-launcher Pod

// PodMod modifies a Pod built by LauncherPod or TargetPod.
type PodMod func(*corev1.Pod)

// LauncherPod is the running virt-launcher pod of RunningVMI on node-a.
func LauncherPod(mods ...PodMod) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: PodName, Namespace: Namespace, UID: PodUID, CreationTimestamp: At(-2 * time.Hour),
			Labels: map[string]string{
				kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.CreatedByLabel: string(VMIUID),
				"vm.kubevirt.io/name": VMName, kubevirtv1.VirtualMachineInstanceIDLabel: VMName,
				kubevirtv1.NodeNameLabel: NodeA,
			},
			Annotations: map[string]string{
				kubevirtv1.DomainAnnotation:               VMName,
				"kubectl.kubernetes.io/default-container": "compute",
				"k8s.v1.cni.cncf.io/networks":             `[{"name":"ext-net","namespace":"prod","interface":"` + SecIface + `"}]`,
				membership.NetworkStatusAnnotation: `[{"name":"ovn-kubernetes","interface":"eth0","ips":["10.244.1.17","fd10:244::11"],"mac":"0a:58:0a:f4:01:11","default":true,"dns":{}},` +
					`{"name":"prod/ext-net","interface":"` + SecIface + `","ips":["192.168.100.10"],"mac":"02:3f:9a:00:00:02","dns":{}}]`,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: VMName, UID: VMIUID,
				Controller: ptr(true), BlockOwnerDeletion: ptr(true),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:       NodeA,
			RestartPolicy:  corev1.RestartPolicyNever,
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: kubevirtv1.VirtualMachineUnpaused}},
			Containers:     []corev1.Container{{Name: "compute"}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: kubevirtv1.VirtualMachineUnpaused, Status: corev1.ConditionTrue, Reason: "NotPaused", LastTransitionTime: At(-2*time.Hour + 10*time.Second)},
				{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: At(-2*time.Hour + 5*time.Second)},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: At(-2*time.Hour + 8*time.Second)},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: At(-2*time.Hour + 17*time.Second)},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: At(-2*time.Hour + 17*time.Second)},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: At(-2 * time.Hour)},
			},
			HostIP: "10.0.0.11", PodIP: "10.244.1.17",
			PodIPs:   []corev1.PodIP{{IP: "10.244.1.17"}, {IP: "fd10:244::11"}},
			QOSClass: corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "compute", Ready: true, Started: ptr(true), Image: "quay.io/kubevirt/virt-launcher:v1.9.0",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: At(-2*time.Hour + 9*time.Second)}},
			}},
			InitContainerStatuses: []corev1.ContainerStatus{
				{Name: "container-disk-binary", Ready: true, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", FinishedAt: At(-2*time.Hour + 6*time.Second)}}},
				{Name: "guest-console-log", Ready: true, Started: ptr(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: At(-2*time.Hour + 7*time.Second)}}},
			},
		},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

// TargetPod is the migration target launcher as virt-controller creates it
// (kv:pkg/virt-controller/watch/migration/migration.go:962-963).
func TargetPod(mods ...PodMod) *corev1.Pod {
	p := LauncherPod(func(p *corev1.Pod) {
		p.Name, p.UID = Pod2Name, Pod2UID
		p.CreationTimestamp = At(-3 * time.Minute)
		p.Spec.NodeName = NodeB
		p.Labels[kubevirtv1.MigrationJobLabel] = string(MigUID)
		p.Labels[kubevirtv1.NodeNameLabel] = NodeB
		p.Annotations[kubevirtv1.MigrationJobNameAnnotation] = MigName
		p.Status.PodIP, p.Status.PodIPs = "10.244.2.33", []corev1.PodIP{{IP: "10.244.2.33"}, {IP: "fd10:244:0:2::21"}}
		p.Status.HostIP = "10.0.0.12"
		delete(p.Annotations, membership.NetworkStatusAnnotation)
	})
	for _, m := range mods {
		m(p)
	}
	return p
}

// GuestIP sets the IPs the status reports on the primary interface.
func GuestIP(ips ...string) VMIMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Status.Interfaces[0].IP, v.Status.Interfaces[0].IPs = ips[0], ips
	}
}

// OnTarget is a VMI after its migration to node-b: virt-handler on the
// target wrote the target pod's IPs into the primary interface.
func OnTarget(v *kubevirtv1.VirtualMachineInstance) {
	v.Status.NodeName = NodeB
	v.Status.Interfaces[0].IP = "10.244.2.33"
	v.Status.Interfaces[0].IPs = []string{"10.244.2.33", "fd10:244:0:2::21"}
}

// PodPhase sets the pod phase; Succeeded and Failed also terminate the
// compute container and turn the pod not ready.
func PodPhase(ph corev1.PodPhase) PodMod {
	return func(p *corev1.Pod) {
		p.Status.Phase = ph
		if ph == corev1.PodSucceeded || ph == corev1.PodFailed {
			reason := "Completed"
			code := int32(0)
			if ph == corev1.PodFailed {
				reason, code = "Error", 1
			}
			ComputeTerminated(reason, code)(p)
			for i := range p.Status.Conditions {
				if p.Status.Conditions[i].Type == corev1.PodReady || p.Status.Conditions[i].Type == corev1.ContainersReady {
					p.Status.Conditions[i].Status = corev1.ConditionFalse
					p.Status.Conditions[i].Reason = "PodCompleted"
					p.Status.Conditions[i].LastTransitionTime = At(-5 * time.Minute)
				}
			}
		}
	}
}

// ComputeTerminated terminates the compute container with reason and exit code.
func ComputeTerminated(reason string, code int32) PodMod {
	return func(p *corev1.Pod) {
		for i := range p.Status.ContainerStatuses {
			if p.Status.ContainerStatuses[i].Name == "compute" {
				p.Status.ContainerStatuses[i].Ready = false
				p.Status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: code, Reason: reason, StartedAt: At(-2*time.Hour + 9*time.Second), FinishedAt: At(-5 * time.Minute),
				}}
			}
		}
	}
}

// PodUnschedulable is a Pending pod the scheduler could not place.
func PodUnschedulable() PodMod {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = ""
		p.Status = corev1.PodStatus{
			Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message:            "0/3 nodes are available: 1 node(s) didn't match pod anti-affinity rules, 2 Insufficient devices.kubevirt.io/kvm.",
				LastTransitionTime: At(-3 * time.Minute),
			}},
		}
	}
}

// ---- Node

// NodeMod modifies a Node built by Node.
type NodeMod func(*corev1.Node)

// Node is a Ready, schedulable node whose virt-handler beat 47 seconds ago.
func Node(name string, mods ...NodeMod) *corev1.Node {
	n := &corev1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: types.UID("node-uid-" + name), CreationTimestamp: At(-90 * 24 * time.Hour),
			Labels: map[string]string{
				"kubernetes.io/hostname": name, kubevirtv1.NodeSchedulable: "true", kubevirtv1.CPUManager: "false",
				"cpu-model.node.kubevirt.io/Skylake-Server-IBRS": "true",
			},
			// virt-handler writes json.Marshal(metav1.Now()) with the
			// quotes stripped, every 1m-2m12s.
			Annotations: map[string]string{kubevirtv1.VirtHandlerHeartbeat: Now.Add(-47 * time.Second).Format(time.RFC3339)},
		},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status",
					LastHeartbeatTime: At(-20 * time.Second), LastTransitionTime: At(-40 * 24 * time.Hour)},
			},
		},
	}
	for _, m := range mods {
		m(n)
	}
	return n
}

// HeartbeatAt sets virt-handler's heartbeat to Now shifted by d.
func HeartbeatAt(d time.Duration) NodeMod {
	return func(n *corev1.Node) { n.Annotations[kubevirtv1.VirtHandlerHeartbeat] = Now.Add(d).Format(time.RFC3339) }
}

// NodeReady sets the status of the Ready condition, as the node lifecycle
// controller does when the kubelet stops posting.
func NodeReady(s corev1.ConditionStatus) NodeMod {
	return func(n *corev1.Node) {
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				n.Status.Conditions[i].Status = s
				n.Status.Conditions[i].Reason = "NodeStatusUnknown"
				n.Status.Conditions[i].Message = "Kubelet stopped posting node status."
				n.Status.Conditions[i].LastTransitionTime = At(-4 * time.Minute)
			}
		}
	}
}

// ---- VirtualMachineInstanceMigration

// VMIMMod modifies a migration built by VMIM.
type VMIMMod func(*kubevirtv1.VirtualMachineInstanceMigration)

// VMIM is an evacuation migration created 3 minutes ago, now in phase
// Running (pass phase mods to change that).
func VMIM(mods ...VMIMMod) *kubevirtv1.VirtualMachineInstanceMigration {
	m := &kubevirtv1.VirtualMachineInstanceMigration{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstanceMigration"},
		ObjectMeta: metav1.ObjectMeta{
			Name: MigName, Namespace: Namespace, UID: MigUID, CreationTimestamp: At(-3 * time.Minute),
			GenerateName: "kubevirt-evacuation-",
			Labels:       map[string]string{kubevirtv1.MigrationSelectorLabel: VMName},
			Annotations:  map[string]string{kubevirtv1.EvacuationMigrationAnnotation: NodeA},
		},
		Spec: kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: VMName},
		Status: kubevirtv1.VirtualMachineInstanceMigrationStatus{
			Phase: kubevirtv1.MigrationRunning,
			MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{
				SourcePod: PodName,
			},
		},
	}
	ts := []struct {
		p kubevirtv1.VirtualMachineInstanceMigrationPhase
		d time.Duration
	}{
		{kubevirtv1.MigrationPending, -3 * time.Minute},
		{kubevirtv1.MigrationScheduling, -3*time.Minute + time.Second},
		{kubevirtv1.MigrationScheduled, -2*time.Minute - 40*time.Second},
		{kubevirtv1.MigrationPreparingTarget, -2*time.Minute - 39*time.Second},
		{kubevirtv1.MigrationTargetReady, -2*time.Minute - 5*time.Second},
		{kubevirtv1.MigrationRunning, -2 * time.Minute},
	}
	for _, t := range ts {
		m.Status.PhaseTransitionTimestamps = append(m.Status.PhaseTransitionTimestamps,
			kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{Phase: t.p, PhaseTransitionTimestamp: At(t.d)})
	}
	for _, mod := range mods {
		mod(m)
	}
	return m
}

// VMIMIn sets the phase and cuts the transition history at it, with the
// phase entered at `since`.
func VMIMIn(p kubevirtv1.VirtualMachineInstanceMigrationPhase, since time.Duration) VMIMMod {
	return func(m *kubevirtv1.VirtualMachineInstanceMigration) {
		m.Status.Phase = p
		var keep []kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp
		for _, t := range m.Status.PhaseTransitionTimestamps {
			if t.Phase == p {
				break
			}
			keep = append(keep, t)
		}
		m.Status.PhaseTransitionTimestamps = append(keep,
			kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{Phase: p, PhaseTransitionTimestamp: At(since)})
	}
}

// VMIMFinal copies the VMI's migration state into the VMIM as
// virt-controller does when the migration is final
// (kv:pkg/controller/controller.go:423-437).
func VMIMFinal(p kubevirtv1.VirtualMachineInstanceMigrationPhase, st *kubevirtv1.VirtualMachineInstanceMigrationState) VMIMMod {
	return func(m *kubevirtv1.VirtualMachineInstanceMigration) {
		VMIMIn(p, -time.Duration(0))(m)
		if st != nil {
			m.Status.PhaseTransitionTimestamps[len(m.Status.PhaseTransitionTimestamps)-1].PhaseTransitionTimestamp = *st.EndTimestamp
			m.Status.MigrationState = st.DeepCopy()
		}
	}
}
