package verdict

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/membership"
)

// The fixtures are written the way KubeVirt v1.9 writes the objects (see
// the project's KubeVirt v1.9 status-surface reference): a VM vm1 in namespace prod,
// its VMI running on node-a in virt-launcher-vm1-abcde, a masquerade pod
// network and a bridge Multus network, a connected guest agent.

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const (
	ns       = "prod"
	vmName   = "vm1"
	vmiUID   = types.UID("5b0f5a3e-8c1a-4b9e-9f55-0a7c1d2e3f41")
	podUID   = types.UID("c2a9d1f0-1111-4c3a-8d7e-5e6f7a8b9c0d")
	pod2UID  = types.UID("d3b0e2a1-2222-4d4b-9e8f-6f7a8b9c0d1e")
	migUID   = types.UID("e4c1f3b2-3333-4e5c-af90-7a8b9c0d1e2f")
	podName  = "virt-launcher-vm1-abcde"
	pod2Name = "virt-launcher-vm1-fghij"
	nodeA    = "node-a"
	nodeB    = "node-b"
	migName  = "kubevirt-evacuation-x2"
	secIface = "pod3f9b0c62e1d" // namescheme: "pod" + hash of the network name
)

func at(d time.Duration) metav1.Time   { return metav1.NewTime(now.Add(d)) }
func atp(d time.Duration) *metav1.Time { t := at(d); return &t }
func ptr[T any](v T) *T                { return &v }

// ---- VirtualMachine

type vmMod func(*kubevirtv1.VirtualMachine)

func vm(mods ...vmMod) *kubevirtv1.VirtualMachine {
	rs := kubevirtv1.RunStrategyAlways
	v := &kubevirtv1.VirtualMachine{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{
			Name: vmName, Namespace: ns, UID: "a1b2c3d4-0000-4000-8000-000000000001",
			CreationTimestamp: at(-72 * time.Hour), Generation: 2,
		},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: &rs},
		Status: kubevirtv1.VirtualMachineStatus{
			Created: true, Ready: true, PrintableStatus: kubevirtv1.VirtualMachineStatusRunning,
			RunStrategy: rs,
			Conditions: []kubevirtv1.VirtualMachineCondition{
				{Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionTrue, LastTransitionTime: at(-2*time.Hour + 30*time.Second)},
			},
		},
	}
	for _, m := range mods {
		m(v)
	}
	return v
}

func withRunStrategy(rs kubevirtv1.VirtualMachineRunStrategy) vmMod {
	return func(v *kubevirtv1.VirtualMachine) { v.Spec.RunStrategy = &rs; v.Status.RunStrategy = rs }
}

func vmStopped() vmMod {
	return func(v *kubevirtv1.VirtualMachine) {
		v.Status.Created, v.Status.Ready = false, false
		v.Status.PrintableStatus = kubevirtv1.VirtualMachineStatusStopped
		v.Status.Conditions = []kubevirtv1.VirtualMachineCondition{{
			Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionFalse, Reason: "VMINotExists",
			Message: "VMI does not exist", LastTransitionTime: at(-30 * time.Minute),
		}}
	}
}

// ---- VirtualMachineInstance

type vmiMod func(*kubevirtv1.VirtualMachineInstance)

func runningVMI(mods ...vmiMod) *kubevirtv1.VirtualMachineInstance {
	start := -2 * time.Hour
	v := &kubevirtv1.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{
			Name: vmName, Namespace: ns, UID: vmiUID, Generation: 14,
			CreationTimestamp: at(start),
			Labels:            map[string]string{kubevirtv1.NodeNameLabel: nodeA, "kubevirt.io/vm": vmName},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: vmName,
				UID: "a1b2c3d4-0000-4000-8000-000000000001", Controller: ptr(true), BlockOwnerDeletion: ptr(true),
			}},
		},
		Spec: kubevirtv1.VirtualMachineInstanceSpec{
			Domain: kubevirtv1.DomainSpec{
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
			NodeName: nodeA,
			Phase:    kubevirtv1.Running,
			PhaseTransitionTimestamps: []kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{
				{Phase: kubevirtv1.Pending, PhaseTransitionTimestamp: at(start)},
				{Phase: kubevirtv1.Scheduling, PhaseTransitionTimestamp: at(start + 1*time.Second)},
				{Phase: kubevirtv1.Scheduled, PhaseTransitionTimestamp: at(start + 18*time.Second)},
				{Phase: kubevirtv1.Running, PhaseTransitionTimestamp: at(start + 25*time.Second)},
			},
			Conditions: []kubevirtv1.VirtualMachineInstanceCondition{
				{Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue, LastTransitionTime: at(start + 26*time.Second)},
				{Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionTrue, LastTransitionTime: at(start + 25*time.Second)},
				{Type: kubevirtv1.VirtualMachineInstanceIsStorageLiveMigratable, Status: corev1.ConditionTrue, LastTransitionTime: at(start + 25*time.Second)},
				{Type: kubevirtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue,
					LastProbeTime: at(start + 61*time.Second), LastTransitionTime: at(start + 61*time.Second)},
			},
			ActivePods: map[types.UID]string{podUID: nodeA},
			Interfaces: []kubevirtv1.VirtualMachineInstanceNetworkInterface{
				{
					Name: "default", IP: "10.244.1.17", IPs: []string{"10.244.1.17", "fd10:244::11"},
					MAC: "02:3f:9a:00:00:01", InterfaceName: "eth0", InfoSource: "domain, guest-agent",
					PodInterfaceName: "eth0", QueueCount: 1, LinkState: "up",
				},
				{
					Name: "ext", IP: "192.168.100.10", IPs: []string{"192.168.100.10"},
					MAC: "02:3f:9a:00:00:02", InterfaceName: "eth1", InfoSource: "domain, guest-agent, multus-status",
					PodInterfaceName: secIface, QueueCount: 1, LinkState: "up",
				},
			},
			GuestOSInfo: kubevirtv1.VirtualMachineInstanceGuestOSInfo{
				Name: "Fedora Linux", PrettyName: "Fedora Linux 41 (Cloud Edition)", Version: "41 (Cloud Edition)",
				VersionID: "41", KernelRelease: "6.11.4-301.fc41.x86_64", Machine: "x86_64", ID: "fedora",
			},
			MigrationMethod:               kubevirtv1.LiveMigration,
			QOSClass:                      ptr(corev1.PodQOSBurstable),
			LauncherContainerImageVersion: "quay.io/kubevirt/virt-launcher:v1.9.0",
		},
	}
	for _, m := range mods {
		m(v)
	}
	return v
}

func vmiPhase(p kubevirtv1.VirtualMachineInstancePhase, since time.Duration) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Status.Phase = p
		v.Status.PhaseTransitionTimestamps = append(v.Status.PhaseTransitionTimestamps,
			kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: p, PhaseTransitionTimestamp: at(since)})
	}
}

// pendingVMI is a VMI created `age` ago that has gone no further than
// phase p: no node, no guest, no Running-era conditions.
func pendingVMI(p kubevirtv1.VirtualMachineInstancePhase, age time.Duration, mods ...vmiMod) *kubevirtv1.VirtualMachineInstance {
	v := runningVMI()
	v.CreationTimestamp = at(-age)
	v.Status = kubevirtv1.VirtualMachineInstanceStatus{
		Phase: p,
		PhaseTransitionTimestamps: []kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{
			{Phase: kubevirtv1.Pending, PhaseTransitionTimestamp: at(-age)},
		},
		Conditions: []kubevirtv1.VirtualMachineInstanceCondition{
			{Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse, Reason: kubevirtv1.GuestNotRunningReason,
				Message: "Guest VM is not reported as running", LastTransitionTime: at(-age)},
		},
	}
	if p != kubevirtv1.Pending {
		v.Status.PhaseTransitionTimestamps = append(v.Status.PhaseTransitionTimestamps,
			kubevirtv1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: p, PhaseTransitionTimestamp: at(-age + time.Second)})
	}
	if p == kubevirtv1.Scheduled {
		v.Status.NodeName = nodeA
		v.Status.ActivePods = map[types.UID]string{podUID: nodeA}
	}
	for _, m := range mods {
		m(v)
	}
	return v
}

func withCondition(c kubevirtv1.VirtualMachineInstanceCondition) vmiMod {
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

func withoutCondition(t kubevirtv1.VirtualMachineInstanceConditionType) vmiMod {
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

// agentGone is what virt-handler leaves when the agent disconnects: the
// condition removed, guestOSInfo and the interfaces' last data kept.
func agentGone() vmiMod {
	return withoutCondition(kubevirtv1.VirtualMachineInstanceAgentConnected)
}

// noAgentEver is a guest without an agent: no condition, no guestOSInfo,
// interfaces known only from the domain and Multus.
func noAgentEver() vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		agentGone()(v)
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

func paused(reason string) vmiMod {
	return withCondition(kubevirtv1.VirtualMachineInstanceCondition{
		Type: kubevirtv1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue, Reason: reason,
		Message: "VMI was paused", LastTransitionTime: at(-10 * time.Minute), LastProbeTime: at(-10 * time.Minute),
	})
}

// migrationState is what virt-controller hands off and the handlers fill in
// on the VMI.
func migrationState(mods ...func(*kubevirtv1.VirtualMachineInstanceMigrationState)) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		st := &kubevirtv1.VirtualMachineInstanceMigrationState{
			MigrationUID: migUID, SourceNode: nodeA, SourcePod: podName,
			TargetNode: nodeB, TargetPod: pod2Name, TargetNodeAddress: "10.0.0.12",
			StartTimestamp: atp(-2 * time.Minute), Mode: kubevirtv1.MigrationPreCopy,
		}
		for _, m := range mods {
			m(st)
		}
		v.Status.MigrationState = st
	}
}

func evacuating(nodeName string) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Status.EvacuationNodeName = nodeName
		withCondition(kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstanceEvictionRequested, Status: corev1.ConditionTrue,
			Reason: kubevirtv1.VirtualMachineInstanceReasonEvictionRequested, Message: "VMI is marked for eviction",
			LastTransitionTime: at(-3 * time.Minute),
		})(v)
	}
}

// ---- virt-launcher Pod

type podMod func(*corev1.Pod)

func launcherPod(mods ...podMod) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: podName, Namespace: ns, UID: podUID, CreationTimestamp: at(-2 * time.Hour),
			Labels: map[string]string{
				kubevirtv1.AppLabel: "virt-launcher", kubevirtv1.CreatedByLabel: string(vmiUID),
				"vm.kubevirt.io/name": vmName, kubevirtv1.VirtualMachineInstanceIDLabel: vmName,
				kubevirtv1.NodeNameLabel: nodeA,
			},
			Annotations: map[string]string{
				kubevirtv1.DomainAnnotation:               vmName,
				"kubectl.kubernetes.io/default-container": "compute",
				"k8s.v1.cni.cncf.io/networks":             `[{"name":"ext-net","namespace":"prod","interface":"` + secIface + `"}]`,
				membership.NetworkStatusAnnotation: `[{"name":"ovn-kubernetes","interface":"eth0","ips":["10.244.1.17","fd10:244::11"],"mac":"0a:58:0a:f4:01:11","default":true,"dns":{}},` +
					`{"name":"prod/ext-net","interface":"` + secIface + `","ips":["192.168.100.10"],"mac":"02:3f:9a:00:00:02","dns":{}}]`,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: vmName, UID: vmiUID,
				Controller: ptr(true), BlockOwnerDeletion: ptr(true),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:       nodeA,
			RestartPolicy:  corev1.RestartPolicyNever,
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: kubevirtv1.VirtualMachineUnpaused}},
			Containers:     []corev1.Container{{Name: "compute"}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: kubevirtv1.VirtualMachineUnpaused, Status: corev1.ConditionTrue, Reason: "NotPaused", LastTransitionTime: at(-2*time.Hour + 10*time.Second)},
				{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: at(-2*time.Hour + 5*time.Second)},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: at(-2*time.Hour + 8*time.Second)},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at(-2*time.Hour + 17*time.Second)},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: at(-2*time.Hour + 17*time.Second)},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(-2 * time.Hour)},
			},
			HostIP: "10.0.0.11", PodIP: "10.244.1.17",
			PodIPs:   []corev1.PodIP{{IP: "10.244.1.17"}, {IP: "fd10:244::11"}},
			QOSClass: corev1.PodQOSBurstable,
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "compute", Ready: true, Started: ptr(true), Image: "quay.io/kubevirt/virt-launcher:v1.9.0",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(-2*time.Hour + 9*time.Second)}},
			}},
			InitContainerStatuses: []corev1.ContainerStatus{
				{Name: "container-disk-binary", Ready: true, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", FinishedAt: at(-2*time.Hour + 6*time.Second)}}},
				{Name: "guest-console-log", Ready: true, Started: ptr(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(-2*time.Hour + 7*time.Second)}}},
			},
		},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

// targetPod is the migration target launcher as virt-controller creates it
// (kv:pkg/virt-controller/watch/migration/migration.go:962-963).
func targetPod(mods ...podMod) *corev1.Pod {
	p := launcherPod(func(p *corev1.Pod) {
		p.Name, p.UID = pod2Name, pod2UID
		p.CreationTimestamp = at(-3 * time.Minute)
		p.Spec.NodeName = nodeB
		p.Labels[kubevirtv1.MigrationJobLabel] = string(migUID)
		p.Labels[kubevirtv1.NodeNameLabel] = nodeB
		p.Annotations[kubevirtv1.MigrationJobNameAnnotation] = migName
		p.Status.PodIP, p.Status.PodIPs = "10.244.2.33", []corev1.PodIP{{IP: "10.244.2.33"}, {IP: "fd10:244:0:2::21"}}
		p.Status.HostIP = "10.0.0.12"
		delete(p.Annotations, membership.NetworkStatusAnnotation)
	})
	for _, m := range mods {
		m(p)
	}
	return p
}

// guestIP sets the IPs the status reports on the primary interface.
func guestIP(ips ...string) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Status.Interfaces[0].IP, v.Status.Interfaces[0].IPs = ips[0], ips
	}
}

// onTarget is a VMI after its migration to node-b: virt-handler on the
// target wrote the target pod's IPs into the primary interface.
func onTarget(v *kubevirtv1.VirtualMachineInstance) {
	v.Status.NodeName = nodeB
	v.Status.Interfaces[0].IP = "10.244.2.33"
	v.Status.Interfaces[0].IPs = []string{"10.244.2.33", "fd10:244:0:2::21"}
}

func podPhase(ph corev1.PodPhase) podMod {
	return func(p *corev1.Pod) {
		p.Status.Phase = ph
		if ph == corev1.PodSucceeded || ph == corev1.PodFailed {
			reason := "Completed"
			code := int32(0)
			if ph == corev1.PodFailed {
				reason, code = "Error", 1
			}
			computeTerminated(reason, code)(p)
			for i := range p.Status.Conditions {
				if p.Status.Conditions[i].Type == corev1.PodReady || p.Status.Conditions[i].Type == corev1.ContainersReady {
					p.Status.Conditions[i].Status = corev1.ConditionFalse
					p.Status.Conditions[i].Reason = "PodCompleted"
					p.Status.Conditions[i].LastTransitionTime = at(-5 * time.Minute)
				}
			}
		}
	}
}

func computeTerminated(reason string, code int32) podMod {
	return func(p *corev1.Pod) {
		for i := range p.Status.ContainerStatuses {
			if p.Status.ContainerStatuses[i].Name == "compute" {
				p.Status.ContainerStatuses[i].Ready = false
				p.Status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: code, Reason: reason, StartedAt: at(-2*time.Hour + 9*time.Second), FinishedAt: at(-5 * time.Minute),
				}}
			}
		}
	}
}

func podUnschedulable() podMod {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = ""
		p.Status = corev1.PodStatus{
			Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message:            "0/3 nodes are available: 1 node(s) didn't match pod anti-affinity rules, 2 Insufficient devices.kubevirt.io/kvm.",
				LastTransitionTime: at(-3 * time.Minute),
			}},
		}
	}
}

// ---- Node

type nodeMod func(*corev1.Node)

func node(name string, mods ...nodeMod) *corev1.Node {
	n := &corev1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: types.UID("node-uid-" + name), CreationTimestamp: at(-90 * 24 * time.Hour),
			Labels: map[string]string{
				"kubernetes.io/hostname": name, kubevirtv1.NodeSchedulable: "true", kubevirtv1.CPUManager: "false",
				"cpu-model.node.kubevirt.io/Skylake-Server-IBRS": "true",
			},
			// virt-handler writes json.Marshal(metav1.Now()) with the
			// quotes stripped, every 1m-2m12s.
			Annotations: map[string]string{kubevirtv1.VirtHandlerHeartbeat: now.Add(-47 * time.Second).Format(time.RFC3339)},
		},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status",
					LastHeartbeatTime: at(-20 * time.Second), LastTransitionTime: at(-40 * 24 * time.Hour)},
			},
		},
	}
	for _, m := range mods {
		m(n)
	}
	return n
}

func heartbeatAt(d time.Duration) nodeMod {
	return func(n *corev1.Node) { n.Annotations[kubevirtv1.VirtHandlerHeartbeat] = now.Add(d).Format(time.RFC3339) }
}

func nodeReady(s corev1.ConditionStatus) nodeMod {
	return func(n *corev1.Node) {
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				n.Status.Conditions[i].Status = s
				n.Status.Conditions[i].Reason = "NodeStatusUnknown"
				n.Status.Conditions[i].Message = "Kubelet stopped posting node status."
				n.Status.Conditions[i].LastTransitionTime = at(-4 * time.Minute)
			}
		}
	}
}

// ---- VirtualMachineInstanceMigration

type vmimMod func(*kubevirtv1.VirtualMachineInstanceMigration)

// vmim is an evacuation migration created 3 minutes ago, now in phase
// Running (pass phase mods to change that).
func vmim(mods ...vmimMod) *kubevirtv1.VirtualMachineInstanceMigration {
	m := &kubevirtv1.VirtualMachineInstanceMigration{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstanceMigration"},
		ObjectMeta: metav1.ObjectMeta{
			Name: migName, Namespace: ns, UID: migUID, CreationTimestamp: at(-3 * time.Minute),
			GenerateName: "kubevirt-evacuation-",
			Labels:       map[string]string{kubevirtv1.MigrationSelectorLabel: vmName},
			Annotations:  map[string]string{kubevirtv1.EvacuationMigrationAnnotation: nodeA},
		},
		Spec: kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmName},
		Status: kubevirtv1.VirtualMachineInstanceMigrationStatus{
			Phase: kubevirtv1.MigrationRunning,
			MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{
				SourcePod: podName,
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
			kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{Phase: t.p, PhaseTransitionTimestamp: at(t.d)})
	}
	for _, mod := range mods {
		mod(m)
	}
	return m
}

// vmimIn sets the phase and cuts the transition history at it, with the
// phase entered at `since`.
func vmimIn(p kubevirtv1.VirtualMachineInstanceMigrationPhase, since time.Duration) vmimMod {
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
			kubevirtv1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{Phase: p, PhaseTransitionTimestamp: at(since)})
	}
}

// vmimFinal copies the VMI's migration state into the VMIM as
// virt-controller does when the migration is final
// (kv:pkg/controller/controller.go:423-437).
func vmimFinal(p kubevirtv1.VirtualMachineInstanceMigrationPhase, st *kubevirtv1.VirtualMachineInstanceMigrationState) vmimMod {
	return func(m *kubevirtv1.VirtualMachineInstanceMigration) {
		vmimIn(p, -time.Duration(0))(m)
		if st != nil {
			m.Status.PhaseTransitionTimestamps[len(m.Status.PhaseTransitionTimestamps)-1].PhaseTransitionTimestamp = *st.EndTimestamp
			m.Status.MigrationState = st.DeepCopy()
		}
	}
}

// ---- Input

type inputMod func(*Input)

// input is the healthy running VM: VM, VMI, its launcher pod and its node.
func input(mods ...inputMod) Input {
	in := Input{
		Namespace: ns, Name: vmName,
		VM:     vm(),
		VMI:    runningVMI(),
		Pods:   []*corev1.Pod{launcherPod()},
		Nodes:  map[string]*corev1.Node{nodeA: node(nodeA), nodeB: node(nodeB)},
		Policy: DefaultPolicy(),
		Now:    now,
	}
	for _, m := range mods {
		m(&in)
	}
	return in
}
