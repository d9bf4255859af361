package verdict

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// KubeVirt names only the first blocker in LiveMigratable; a VM with a GPU
// and a ReadWriteOnce disk must list both.
func TestLiveMigratableListsEveryBlocker(t *testing.T) {
	vmi := &kubevirtv1.VirtualMachineInstance{
		Spec: kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{Devices: kubevirtv1.Devices{
			HostDevices: []kubevirtv1.HostDevice{{Name: "gpu0", DeviceName: "nvidia.com/GA102GL_A10"}},
		}}},
		Status: kubevirtv1.VirtualMachineInstanceStatus{
			Phase: kubevirtv1.Running,
			Conditions: []kubevirtv1.VirtualMachineInstanceCondition{{
				Type: kubevirtv1.VirtualMachineInstanceIsMigratable, Status: corev1.ConditionFalse,
				Reason: kubevirtv1.VirtualMachineInstanceReasonHostDeviceNotMigratable,
			}},
			VolumeStatus: []kubevirtv1.VolumeStatus{
				{Name: "cloudinit", Target: "vdb"},
				{Name: "rootdisk", Target: "vda", PersistentVolumeClaimInfo: &kubevirtv1.PersistentVolumeClaimInfo{
					ClaimName: "rootdisk", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				}},
			},
		},
	}
	got := Evaluate(Input{Namespace: "ns", Name: "vm", VMI: vmi, Policy: DefaultPolicy(), Now: now}).Status.LiveMigratable
	if got == nil || len(got.Reasons) != 2 ||
		got.Reasons[0] != kubevirtv1.VirtualMachineInstanceReasonDisksNotMigratable ||
		got.Reasons[1] != kubevirtv1.VirtualMachineInstanceReasonHostDeviceNotMigratable {
		t.Fatalf("liveMigratable = %+v, want both DisksNotLiveMigratable and HostDeviceNotLiveMigratable", got)
	}

	// A shared (RWX) claim is no blocker.
	vmi.Status.VolumeStatus[1].PersistentVolumeClaimInfo.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	got = Evaluate(Input{Namespace: "ns", Name: "vm", VMI: vmi, Policy: DefaultPolicy(), Now: now}).Status.LiveMigratable
	if len(got.Reasons) != 1 {
		t.Fatalf("liveMigratable = %+v, want only HostDeviceNotLiveMigratable", got)
	}
}
