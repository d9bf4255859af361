package verdict

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

const maxMigratableReasons = 16

// notMigratableReasons are the reason values virt-handler writes on
// LiveMigratable and StorageLiveMigratable (api:core/v1/types.go:740-806;
// kv:pkg/virt-handler/vm.go:1247-1404). StorageLiveMigratable's message
// lists every blocker as "<Reason>: <msg>, ...", so the engine finds them by
// name rather than by splitting free text.
var notMigratableReasons = [...]string{
	kubevirtv1.VirtualMachineInstanceReasonDisksNotMigratable,
	kubevirtv1.VirtualMachineInstanceReasonInterfaceNotMigratable,
	kubevirtv1.VirtualMachineInstanceReasonHotplugNotMigratable,
	kubevirtv1.VirtualMachineInstanceReasonCPUModeNotMigratable,
	kubevirtv1.VirtualMachineInstanceReasonVirtIOFSNotMigratable,
	kubevirtv1.VirtualMachineInstanceReasonHostDeviceNotMigratable,
	kubevirtv1.VirtualMachineInstanceReasonSEVNotMigratable,
	kubevirtv1.VirtualMachineInstanceReasonSecureExecutionNotMigratable,
	kubevirtv1.VirtualMachineInstanceReasonTDXNotMigratable,
	kubevirtv1.VirtualMachineInstanceReasonNoTSCFrequencyMigratable,
	kubevirtv1.VirtualMachineInstanceReasonHypervPassthroughNotMigratable,
}

// storageOnlyReasons block a storage live migration and not a live
// migration: in v1.9 calculateLiveStorageMigrationCondition checks SCSI
// persistent reservations (kv:pkg/virt-handler/vm.go:1389-1390) and
// calculateLiveMigrationCondition does not (vm.go:1247-1288), so they are
// not copied from StorageLiveMigratable into the live-migration reasons.
var storageOnlyReasons = [...]string{
	kubevirtv1.VirtualMachineInstanceReasonPRNotMigratable,
}

// liveMigratable gathers every reason the VMI cannot be live-migrated.
// KubeVirt's LiveMigratable condition names only the first blocker it finds
// (kv:pkg/virt-handler/vm.go:1247-1288), so the engine adds the blockers
// from StorageLiveMigratable and from the VMI spec: host devices and GPUs,
// SR-IOV interfaces, and bridge binding on the pod network without the
// allow-pod-bridge-network-live-migration annotation; and from
// status.volumeStatus, a PVC whose access modes lack ReadWriteMany.
// When LiveMigratable is True KubeVirt's word stands and no reason is
// listed.
func (e *engine) liveMigratable() *v1alpha1.LiveMigratability {
	f := &e.f
	if f.vmi == nil {
		return nil
	}
	lm := &e.a.lm
	c := f.vmiCond(kubevirtv1.VirtualMachineInstanceIsMigratable)
	switch {
	case c == nil:
		lm.Status = metav1.ConditionUnknown
	case c.Status == corev1.ConditionTrue:
		lm.Status = metav1.ConditionTrue
		return lm
	case c.Status == corev1.ConditionFalse:
		lm.Status = metav1.ConditionFalse
	default:
		lm.Status = metav1.ConditionUnknown
	}
	var buf [8]string
	rs := buf[:0]
	addReason := func(r string) {
		r = bound(strings.TrimSpace(r), 128)
		if r == "" || len(rs) == maxMigratableReasons || slices.Contains(rs, r) {
			return
		}
		rs = append(rs, r)
	}
	if c != nil && c.Status == corev1.ConditionFalse {
		addReason(c.Reason)
	}
	if s := f.vmiCond(kubevirtv1.VirtualMachineInstanceIsStorageLiveMigratable); s != nil && s.Status == corev1.ConditionFalse {
		if s.Reason != kubevirtv1.VirtualMachineInstanceReasonNotMigratable && !slices.Contains(storageOnlyReasons[:], s.Reason) {
			addReason(s.Reason)
		}
		for _, r := range notMigratableReasons {
			if strings.Contains(s.Message, r) {
				addReason(r)
			}
		}
	}
	spec := &f.vmi.Spec
	// A single GPU may be a mediated device that migrates with the
	// VGPULiveMigration gate (kv:pkg/virt-handler/vm.go
	// vmiContainsNonMigratablePCIHostDevices); the feature gates are not in
	// the input, so only more than one counts. SR-IOV interfaces are not a
	// blocker in v1.9: only the primary pod-network interface is checked
	// (kv:pkg/network/vmispec/interface.go VerifyVMIMigratable).
	if len(spec.Domain.Devices.HostDevices) > 0 || len(spec.Domain.Devices.GPUs) > 1 {
		addReason(kubevirtv1.VirtualMachineInstanceReasonHostDeviceNotMigratable)
	}
	for i := range spec.Domain.Devices.Interfaces {
		ifc := &spec.Domain.Devices.Interfaces[i]
		if ifc.Bridge != nil && f.podNetwork(ifc.Name) {
			if _, ok := f.vmi.Annotations[kubevirtv1.AllowPodBridgeNetworkLiveMigrationAnnotation]; !ok {
				addReason(kubevirtv1.VirtualMachineInstanceReasonInterfaceNotMigratable)
			}
		}
	}
	// virt-handler's own volume check (checkVolumesForMigration) stops at the
	// first blocker, but status.volumeStatus carries every PVC's access
	// modes: a claim that is not ReadWriteMany cannot follow the VM.
	// Volumes being migrated are exempt, as in checkVolumesForMigration.
	for i := range f.vmi.Status.VolumeStatus {
		vs := &f.vmi.Status.VolumeStatus[i]
		info := vs.PersistentVolumeClaimInfo
		if f.migratedVolume(vs.Name) {
			continue
		}
		if info != nil && len(info.AccessModes) > 0 && !slices.Contains(info.AccessModes, corev1.ReadWriteMany) {
			addReason(kubevirtv1.VirtualMachineInstanceReasonDisksNotMigratable)
			break
		}
	}
	lm.Reasons = e.a.keep(rs)
	return lm
}

// migratedVolume says whether the volume is being migrated to new storage.
func (f *facts) migratedVolume(name string) bool {
	for i := range f.vmi.Status.MigratedVolumes {
		if f.vmi.Status.MigratedVolumes[i].VolumeName == name {
			return true
		}
	}
	return false
}

// podNetwork says whether the VMI network called name is the pod network.
func (f *facts) podNetwork(name string) bool {
	for i := range f.vmi.Spec.Networks {
		n := &f.vmi.Spec.Networks[i]
		if n.Name == name {
			return n.Pod != nil
		}
	}
	return false
}

// evicting says whether the VMI is marked for eviction
// (kv:pkg/virt-controller/watch/vmi/lifecycle.go:554-568).
func (f *facts) evicting() bool {
	if f.vmi == nil {
		return false
	}
	return f.vmi.Status.EvacuationNodeName != "" || f.vmiCondTrue(kubevirtv1.VirtualMachineInstanceEvictionRequested) != nil
}
