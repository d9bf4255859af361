package simulator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// FSFrozen is the value virt-handler copies into status.fsFreezeStatus while
// the guest agent reports the filesystems frozen
// (kv:pkg/virt-launcher/virtwrap/api/schema.go FSFrozen).
const FSFrozen = "frozen"

// RequestMemoryHotplug starts a memory hotplug to guest the way KubeVirt
// v1.9 does, and leaves it there:
//
//   - the user raises spec.template.spec.domain.memory.guest on the VM;
//   - virt-controller's VM controller copies it into the VMI's spec and
//     raises the memory request by the difference
//     (kv:pkg/virt-controller/watch/vm/vm.go handleMemoryHotplugRequest),
//     which it does only up to the VMI's maxGuest;
//   - its VMI controller, seeing the spec ask for other memory than
//     status.memory.guestRequested, adds HotMemoryChange=True, with
//     neither time nor reason (kv:pkg/virt-controller/watch/vmi/lifecycle.go
//     requireMemoryHotplug → syncHotplugCondition).
//
// The live migration that would apply it never starts: the workload updater
// migrates only when the KubeVirt CR's workloadUpdateMethods include
// LiveMigrate (kv:pkg/virt-controller/watch/workload-updater/
// workload-updater.go getUpdateData), so the hotplug stays requested and
// not applied.
func (s *Simulator) RequestMemoryHotplug(ctx context.Context, ns, name string, guest resource.Quantity) error {
	vmi, err := s.vmiInPhase(ctx, ns, name, "RequestMemoryHotplug", kubevirtv1.Running)
	if err != nil {
		return err
	}
	mem := vmi.Spec.Domain.Memory
	if mem == nil || mem.Guest == nil || mem.MaxGuest == nil || vmi.Status.Memory == nil || vmi.Status.Memory.GuestRequested == nil {
		return fmt.Errorf("RequestMemoryHotplug: VMI %s/%s has no guest memory to hotplug to (spec.domain.memory.maxGuest, status.memory)", ns, name)
	}
	if guest.Cmp(*mem.Guest) <= 0 || guest.Cmp(*mem.MaxGuest) > 0 {
		return fmt.Errorf("RequestMemoryHotplug: %s is not above the guest's %s and within its maxGuest %s", guest.String(), mem.Guest.String(), mem.MaxGuest.String())
	}
	if _, err := s.updateVM(ctx, ns, name, managerUser, func(vm *kubevirtv1.VirtualMachine) error {
		if vm.Spec.Template == nil || vm.Spec.Template.Spec.Domain.Memory == nil {
			return fmt.Errorf("VM %s/%s has no template memory", ns, name)
		}
		vm.Spec.Template.Spec.Domain.Memory.Guest = &guest
		return nil
	}); err != nil {
		return err
	}
	if _, err := s.updateVMI(ctx, ns, name, managerVirtController, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		d := &vmi.Spec.Domain
		delta := guest.DeepCopy()
		delta.Sub(*d.Memory.Guest)
		if req, ok := d.Resources.Requests[corev1.ResourceMemory]; ok {
			req.Add(delta)
			d.Resources.Requests[corev1.ResourceMemory] = req
		}
		d.Memory.Guest = &guest
		return nil
	}); err != nil {
		return err
	}
	if _, err := s.updateVMI(ctx, ns, name, managerVirtController, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		raiseHotplugCond(vmi, kubevirtv1.VirtualMachineInstanceMemoryChange)
		return nil
	}); err != nil {
		return err
	}
	return s.syncVM(ctx, ns, name)
}

// FreezeFilesystems freezes the guest's filesystems as a VMSnapshot or
// `virtctl fsfreeze` does: virt-launcher asks the guest agent to freeze,
// its agent poller reads guest-fsfreeze-status, and virt-handler copies
// "frozen" into status.fsFreezeStatus (kv:pkg/virt-handler/vm.go
// updateFSFreezeStatus). It needs the guest agent. Nothing thaws the guest
// afterwards: the unfreeze timeout that would is not simulated
// (ThawFilesystems is).
func (s *Simulator) FreezeFilesystems(ctx context.Context, ns, name string) error {
	vmi, err := s.vmiInPhase(ctx, ns, name, "FreezeFilesystems", kubevirtv1.Running)
	if err != nil {
		return err
	}
	if c := vmiCond(vmi, kubevirtv1.VirtualMachineInstanceAgentConnected); c == nil || c.Status != corev1.ConditionTrue {
		return fmt.Errorf("FreezeFilesystems: VMI %s/%s has no guest agent connected", ns, name)
	}
	return s.setFSFreezeStatus(ctx, ns, name, FSFrozen)
}

// ThawFilesystems is the guest agent reporting the filesystems thawed:
// virt-handler clears status.fsFreezeStatus.
func (s *Simulator) ThawFilesystems(ctx context.Context, ns, name string) error {
	return s.setFSFreezeStatus(ctx, ns, name, "")
}

func (s *Simulator) setFSFreezeStatus(ctx context.Context, ns, name, status string) error {
	_, err := s.updateVMI(ctx, ns, name, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		vmi.Status.FSFreezeStatus = status
		return nil
	})
	return err
}
