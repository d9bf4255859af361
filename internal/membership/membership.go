// Package membership decides, once, which objects belong to a VM: which
// virt-launcher pods are a VMI's, which nodes a VMI names, and what owner
// reference its VMObservation gets. The controller (its indexes, its
// gather), the offline analyzer (its grouping) and the verdict engine ask
// here, so that they cannot disagree.
package membership

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// ManagedByLabel marks the VMObservations vmobs created (not declared by a
// user), so that it deletes only those once their VM and VMI are gone; one a
// user declared (say, in Git) is left alone. ManagedByValue is its value.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "vmobs"
)

// NetworkStatusAnnotation is Multus' record, on the launcher pod, of the
// networks it wired and their IPs: which pod-side interface belongs to
// which of the VMI's networks (kv:pkg/network/multus/status.go reads it).
const NetworkStatusAnnotation = "k8s.v1.cni.cncf.io/network-status"

// FieldOwner is the field manager of every write vmobs makes; the cache
// keeps its managedFields entry on VMObservations (when vmobs last wrote).
const FieldOwner = "vmobs-controller"

// VMIRef is what a pod says of the VMI it belongs to.
type VMIRef struct {
	// Name is the VMI's name, from the controller owner reference; empty
	// when only the kubevirt.io/created-by label names it.
	Name string
	// UID is the VMI's UID, from the owner reference or the label.
	UID types.UID
}

// LauncherRef says which VMI a pod claims to be the launcher of: its
// controller owner reference to a kubevirt.io VirtualMachineInstance, or,
// without any controller reference, the kubevirt.io/created-by label that
// virt-controller puts on launcher pods (kv:pkg/virt-controller/services/
// template.go). Hotplug attachment pods (controlled by the launcher pod) and
// WFFC provisioning pods belong to no VMI.
func LauncherRef(pod metav1.Object) (VMIRef, bool) {
	if pod == nil {
		return VMIRef{}, false
	}
	if pod.GetLabels()[kubevirtv1.AppLabel] == "hotplug-disk" || pod.GetAnnotations()[kubevirtv1.EphemeralProvisioningObject] == "true" {
		return VMIRef{}, false
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != kubevirtv1.GroupVersion.Group || ref.Kind != "VirtualMachineInstance" {
			return VMIRef{}, false
		}
		return VMIRef{Name: ref.Name, UID: ref.UID}, true
	}
	if uid := pod.GetLabels()[kubevirtv1.CreatedByLabel]; uid != "" {
		return VMIRef{UID: types.UID(uid)}, true
	}
	return VMIRef{}, false
}

// IsLauncherOf says whether pod is a launcher pod of this VMI: what it
// claims names the VMI, and a UID on either side must match (a pod of an
// earlier VMI of the same name carries the old UID). A pod that claims no
// VMI at all is taken as the caller found it (by an index or a grouping
// that already chose it), unless it is a hotplug or provisioning pod.
func IsLauncherOf(pod *corev1.Pod, vmi *kubevirtv1.VirtualMachineInstance) bool {
	if pod == nil || vmi == nil {
		return false
	}
	ref, ok := LauncherRef(pod)
	if !ok {
		return pod.Labels[kubevirtv1.AppLabel] != "hotplug-disk" && pod.Annotations[kubevirtv1.EphemeralProvisioningObject] != "true" &&
			metav1.GetControllerOfNoCopy(pod) == nil
	}
	if ref.Name != "" && ref.Name != vmi.Name {
		return false
	}
	return ref.UID == "" || vmi.UID == "" || ref.UID == vmi.UID
}

// VMINodeNames are the node names a VMI's status carries: the node it runs
// on, the node it is evacuated from, the migration's source and target, and
// the nodes of status.activePods. Unsorted, possibly repeated.
func VMINodeNames(vmi *kubevirtv1.VirtualMachineInstance) []string {
	if vmi == nil {
		return nil
	}
	var out []string
	add := func(n string) {
		if n != "" {
			out = append(out, n)
		}
	}
	add(vmi.Status.NodeName)
	add(vmi.Status.EvacuationNodeName)
	if ms := vmi.Status.MigrationState; ms != nil {
		add(ms.SourceNode)
		add(ms.TargetNode)
	}
	for _, n := range vmi.Status.ActivePods {
		add(n)
	}
	return out
}

// NodeNames lists the nodes a VMI and its launcher pods name, sorted and
// without repeats: every Node whose state can change a verdict.
func NodeNames(vmi *kubevirtv1.VirtualMachineInstance, pods []*corev1.Pod) []string {
	out := VMINodeNames(vmi)
	for _, p := range pods {
		if p != nil && p.Spec.NodeName != "" {
			out = append(out, p.Spec.NodeName)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Owner is the owner reference a VMObservation gets: the VM when there is
// one (so the observation outlives VM restarts and can say "stopped as
// declared"), else the VMI (so it is collected with it). It is not a
// controller reference: vmobs, not KubeVirt, manages the VMObservation, and
// blockOwnerDeletion would need the right to set finalizers on the VM.
// ok is false when there is neither.
func Owner(vm *kubevirtv1.VirtualMachine, vmi *kubevirtv1.VirtualMachineInstance) (ref metav1.OwnerReference, ok bool) {
	switch {
	case vm != nil:
		return metav1.OwnerReference{
			APIVersion: kubevirtv1.GroupVersion.String(), Kind: "VirtualMachine", Name: vm.Name, UID: vm.UID,
		}, true
	case vmi != nil:
		return metav1.OwnerReference{
			APIVersion: kubevirtv1.GroupVersion.String(), Kind: "VirtualMachineInstance", Name: vmi.Name, UID: vmi.UID,
		}, true
	}
	return metav1.OwnerReference{}, false
}

// IsOwnerKind says whether an owner reference points at a VM or a VMI, the
// owners Owner gives.
func IsOwnerKind(ref metav1.OwnerReference) bool {
	return ref.APIVersion == kubevirtv1.GroupVersion.String() && (ref.Kind == "VirtualMachine" || ref.Kind == "VirtualMachineInstance")
}

// ConsoleLogContainer is the launcher's serial console log tail, a native
// sidecar (kv:pkg/virt-controller/services/serialconsolelog.go:24-48).
const ConsoleLogContainer = "guest-console-log"

// IsSidecarInit says an init container of a launcher pod runs beside
// compute rather than before it: a native sidecar, restartPolicy Always. A
// pod pasted without its spec still names KubeVirt's own.
func IsSidecarInit(p *corev1.Pod, name string) bool {
	for i := range p.Spec.InitContainers {
		if c := &p.Spec.InitContainers[i]; c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
	}
	return name == ConsoleLogContainer
}
