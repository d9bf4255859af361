// Package cachetrim holds the cache transforms of the vmobs manager: each
// keeps of an object only what the verdict engine and the watch predicates
// read, so that a VM costs a few KiB in the informer caches instead of tens.
//
// The verdict engine's table tests run every case on trimmed copies too and
// require the same status, so a transform that drops a field the engine
// reads fails there, not in a cluster.
package cachetrim

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
)

// Annotations keeps the annotations vmobs reads: KubeVirt's own and Multus'
// network-status. kubectl's last-applied-configuration alone can double an
// object's size.
func Annotations(in map[string]string) map[string]string {
	var out map[string]string
	for k, v := range in {
		if k == membership.NetworkStatusAnnotation || strings.Contains(k, "kubevirt.io/") {
			if out == nil {
				out = make(map[string]string)
			}
			out[k] = v
		}
	}
	return out
}

// meta keeps identity, labels, owners, deletion and KubeVirt's annotations.
func meta(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	m.Annotations = Annotations(m.Annotations)
}

// Pod is the transform of launcher pods: the node, the phase, conditions,
// IPs and the containers' states and restart counts.
func Pod(o any) (any, error) {
	pod, ok := o.(*corev1.Pod)
	if !ok || pod == nil {
		return o, nil
	}
	meta(&pod.ObjectMeta)
	// Of the spec only the node matters; containers, volumes and the
	// rest are KubeVirt's business.
	pod.Spec = corev1.PodSpec{NodeName: pod.Spec.NodeName}
	st := &pod.Status
	pod.Status = corev1.PodStatus{
		Phase:      st.Phase,
		Reason:     st.Reason,
		Conditions: st.Conditions,
		HostIP:     st.HostIP,
		PodIP:      st.PodIP,
		PodIPs:     st.PodIPs,
		// guest-console-log is a native sidecar: its restarts show in the
		// init container statuses, which the engine counts.
		InitContainerStatuses: containers(st.InitContainerStatuses),
		ContainerStatuses:     containers(st.ContainerStatuses),
	}
	return pod, nil
}

func containers(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i := range in {
		c := &in[i]
		out[i] = corev1.ContainerStatus{
			Name: c.Name, Ready: c.Ready, RestartCount: c.RestartCount, Started: c.Started,
			State: c.State, LastTerminationState: c.LastTerminationState,
		}
	}
	return out
}

// Node keeps KubeVirt's annotations and labels, taints, unschedulable and
// the conditions.
func Node(o any) (any, error) {
	node, ok := o.(*corev1.Node)
	if !ok || node == nil {
		return o, nil
	}
	meta(&node.ObjectMeta)
	node.Spec = corev1.NodeSpec{Unschedulable: node.Spec.Unschedulable, Taints: node.Spec.Taints}
	node.Status = corev1.NodeStatus{Conditions: node.Status.Conditions}
	return node, nil
}

// VMI keeps of the spec the interfaces, networks, host devices, whether
// there is a readiness probe, the eviction strategy and the termination
// grace period; of the status what the engine reads. Volumes,
// the domain's CPU, memory, firmware and features, cloud-init payloads and
// the guest's filesystems say nothing about health.
func VMI(o any) (any, error) {
	vmi, ok := o.(*kubevirtv1.VirtualMachineInstance)
	if !ok || vmi == nil {
		return o, nil
	}
	meta(&vmi.ObjectMeta)
	spec := &vmi.Spec
	var probe *kubevirtv1.Probe
	if spec.ReadinessProbe != nil {
		// The engine asks only whether there is one.
		probe = &kubevirtv1.Probe{}
	}
	vmi.Spec = kubevirtv1.VirtualMachineInstanceSpec{
		Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{
			Interfaces:  spec.Domain.Devices.Interfaces,
			HostDevices: spec.Domain.Devices.HostDevices,
			GPUs:        spec.Domain.Devices.GPUs,
		}},
		Networks:                      spec.Networks,
		ReadinessProbe:                probe,
		EvictionStrategy:              spec.EvictionStrategy,
		TerminationGracePeriodSeconds: spec.TerminationGracePeriodSeconds,
	}
	st := &vmi.Status
	vmi.Status = kubevirtv1.VirtualMachineInstanceStatus{
		Phase:                     st.Phase,
		Reason:                    st.Reason,
		Conditions:                st.Conditions,
		PhaseTransitionTimestamps: st.PhaseTransitionTimestamps,
		NodeName:                  st.NodeName,
		EvacuationNodeName:        st.EvacuationNodeName,
		ActivePods:                st.ActivePods,
		Interfaces:                st.Interfaces,
		GuestOSInfo:               st.GuestOSInfo,
		MigrationState:            st.MigrationState,
		VolumeStatus:              volumes(st.VolumeStatus),
		MigratedVolumes:           migrated(st.MigratedVolumes),
	}
	return vmi, nil
}

// volumes keeps the access modes of the volumes backed by a claim (can the
// disks follow a migration) and the phase and reason of hotplug volumes
// (did the hotplug fail).
func volumes(in []kubevirtv1.VolumeStatus) []kubevirtv1.VolumeStatus {
	var out []kubevirtv1.VolumeStatus
	for i := range in {
		v := &in[i]
		c := v.PersistentVolumeClaimInfo
		claim := c != nil && len(c.AccessModes) > 0
		if !claim && v.HotplugVolume == nil {
			continue
		}
		k := kubevirtv1.VolumeStatus{Name: v.Name}
		if claim {
			k.PersistentVolumeClaimInfo = &kubevirtv1.PersistentVolumeClaimInfo{AccessModes: c.AccessModes}
		}
		if v.HotplugVolume != nil {
			k.HotplugVolume = &kubevirtv1.HotplugVolumeStatus{}
			k.Phase, k.Reason, k.Message = v.Phase, v.Reason, v.Message
		}
		out = append(out, k)
	}
	return out
}

// migrated keeps the names of the volumes being migrated, which are exempt
// from the access-mode check.
func migrated(in []kubevirtv1.StorageMigratedVolumeInfo) []kubevirtv1.StorageMigratedVolumeInfo {
	var out []kubevirtv1.StorageMigratedVolumeInfo
	for i := range in {
		out = append(out, kubevirtv1.StorageMigratedVolumeInfo{VolumeName: in[i].VolumeName})
	}
	return out
}

// VM drops the template (the VMI itself is cached) and the data volume
// templates.
func VM(o any) (any, error) {
	vm, ok := o.(*kubevirtv1.VirtualMachine)
	if !ok || vm == nil {
		return o, nil
	}
	meta(&vm.ObjectMeta)
	vm.Spec.Template = nil
	vm.Spec.DataVolumeTemplates = nil
	vm.Spec.Instancetype, vm.Spec.Preference = nil, nil
	return vm, nil
}

// Observation keeps the whole VMObservation except its managedFields, of
// which it keeps only when vmobs last wrote the status (without the field
// set: the FieldsV1 of a status is as large as the status itself).
func Observation(o any) (any, error) {
	obs, ok := o.(*v1alpha1.VMObservation)
	if !ok || obs == nil {
		return o, nil
	}
	var keep []metav1.ManagedFieldsEntry
	for _, mf := range obs.ManagedFields {
		if mf.Manager == membership.FieldOwner && mf.Subresource == "status" {
			keep = append(keep, metav1.ManagedFieldsEntry{
				Manager: mf.Manager, Operation: mf.Operation, APIVersion: mf.APIVersion,
				Time: mf.Time, Subresource: mf.Subresource,
			})
		}
	}
	obs.ManagedFields = keep
	return obs, nil
}
