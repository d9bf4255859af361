package drain

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/kvtest"
)

// The tables build their objects from internal/kvtest, as KubeVirt v1.9
// writes them: VMIs running on node-a (the node drained), node-b a Ready,
// kubevirt.io/schedulable node to move to.

var now = kvtest.Now

const (
	ns    = kvtest.Namespace
	nodeA = kvtest.NodeA
	nodeB = kvtest.NodeB
)

type vmiMod = kvtest.VMIMod

// vmi is a running, live-migratable VMI name on node-a owned by VM name.
func vmi(name string, mods ...vmiMod) kubevirtv1.VirtualMachineInstance {
	v := kvtest.RunningVMI(func(v *kubevirtv1.VirtualMachineInstance) {
		v.Name = name
		v.UID = types.UID("vmi-uid-" + name)
		v.Labels = map[string]string{kubevirtv1.NodeNameLabel: nodeA, "kubevirt.io/vm": name}
		v.OwnerReferences[0].Name = name
		v.OwnerReferences[0].UID = types.UID("vm-uid-" + name)
	})
	for _, m := range mods {
		m(v)
	}
	return *v
}

// vm is VM name with runStrategy rs.
func vm(name string, rs kubevirtv1.VirtualMachineRunStrategy) kubevirtv1.VirtualMachine {
	v := kvtest.VM(kvtest.WithRunStrategy(rs))
	v.Name, v.UID = name, types.UID("vm-uid-"+name)
	return *v
}

func strategy(s kubevirtv1.EvictionStrategy) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) { v.Spec.EvictionStrategy = &s }
}

var noStrategy vmiMod = func(v *kubevirtv1.VirtualMachineInstance) { v.Spec.EvictionStrategy = nil }

// notMigratable is LiveMigratable=False as virt-handler writes it.
func notMigratable(reason, msg string) vmiMod {
	return kvtest.WithCondition(kubevirtv1.VirtualMachineInstanceCondition{
		Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionFalse, Reason: reason, Message: msg,
	})
}

var noMigratableCondition = kvtest.WithoutCondition(kubevirtv1.VirtualMachineInstanceIsMigratable)

func pvcVolume(claim string) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.Volumes = append(v.Spec.Volumes, kubevirtv1.Volume{Name: claim, VolumeSource: kubevirtv1.VolumeSource{
			PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}},
		}})
	}
}

func dvVolume(name string) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.Volumes = append(v.Spec.Volumes, kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: name}}})
	}
}

var hostDevice vmiMod = func(v *kubevirtv1.VirtualMachineInstance) {
	v.Spec.Domain.Devices.HostDevices = append(v.Spec.Domain.Devices.HostDevices, kubevirtv1.HostDevice{Name: "nic1", DeviceName: "intel.com/sriov"})
}

var gpu vmiMod = func(v *kubevirtv1.VirtualMachineInstance) {
	v.Spec.Domain.Devices.GPUs = append(v.Spec.Domain.Devices.GPUs, kubevirtv1.GPU{Name: "gpu1", DeviceName: "nvidia.com/GA102GL_A10"})
}

func nodeSelector(kv ...string) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.NodeSelector = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Spec.NodeSelector[kv[i]] = kv[i+1]
		}
	}
}

func affinity(op corev1.NodeSelectorOperator, key string, vals ...string) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) {
		v.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: vals}},
			}}},
		}}
	}
}

var standalone vmiMod = func(v *kubevirtv1.VirtualMachineInstance) { v.OwnerReferences = nil }

func phase(p kubevirtv1.VirtualMachineInstancePhase) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) { v.Status.Phase = p }
}

var deleting vmiMod = func(v *kubevirtv1.VirtualMachineInstance) { v.DeletionTimestamp = kvtest.Atp(-time.Second) }

func onNode(n string) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) { v.Status.NodeName = n }
}

func withUID(uid string) vmiMod {
	return func(v *kubevirtv1.VirtualMachineInstance) { v.UID = types.UID(uid) }
}

func pvc(name string, modes ...corev1.PersistentVolumeAccessMode) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.PersistentVolumeClaimSpec{AccessModes: modes},
	}
}

// pdb selects the launcher pods of VM name (label kubevirt.io/vm) and
// allows `allowed` disruptions.
func pdb(name, vmName string, allowed int32) policyv1.PodDisruptionBudget {
	return policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubevirt.io/vm": vmName}},
		},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: allowed},
	}
}

// nodes are node-a (drained), node-b (a target), node-c cordoned, node-d
// NotReady, node-e without kubevirt.io/schedulable.
func nodes() []corev1.Node {
	return []corev1.Node{
		*kvtest.Node(nodeA),
		*kvtest.Node(nodeB),
		*kvtest.Node("node-c", func(n *corev1.Node) { n.Spec.Unschedulable = true }),
		*kvtest.Node("node-d", kvtest.NodeReady(corev1.ConditionUnknown)),
		*kvtest.Node("node-e", func(n *corev1.Node) { delete(n.Labels, kubevirtv1.NodeSchedulable) }),
	}
}

var taintB = func(n *corev1.Node) {
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule})
}

func kubevirtCR(s *kubevirtv1.EvictionStrategy, perNode, perCluster uint32) *kubevirtv1.KubeVirt {
	kv := &kubevirtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"}}
	kv.Spec.Configuration.EvictionStrategy = s
	if perNode > 0 || perCluster > 0 {
		kv.Spec.Configuration.MigrationConfiguration = &kubevirtv1.MigrationConfiguration{}
		if perNode > 0 {
			kv.Spec.Configuration.MigrationConfiguration.ParallelOutboundMigrationsPerNode = &perNode
		}
		if perCluster > 0 {
			kv.Spec.Configuration.MigrationConfiguration.ParallelMigrationsPerCluster = &perCluster
		}
	}
	return kv
}

// input is a drain of node-a over the fleet nodes() with VMs vms.
func input(vmis []kubevirtv1.VirtualMachineInstance, vms ...kubevirtv1.VirtualMachine) Input {
	return Input{Node: nodeA, Now: now, VMIs: vmis, VMs: vms, Nodes: nodes()}
}
