package simulator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Stop stops a VM as `virtctl stop` does, in one go: RequestStop, then
// CompleteStop. The VM ends Halted and Stopped, its VMI and launcher pods
// deleted.
func (s *Simulator) Stop(ctx context.Context, ns, name string) error {
	if err := s.RequestStop(ctx, ns, name); err != nil {
		return err
	}
	return s.CompleteStop(ctx, ns, name)
}

// RequestStop is the first half of a stop: the user sets runStrategy
// Halted, virt-controller deletes the VMI (it stays, with a
// deletionTimestamp, behind its finalizers) and its launcher pods (which
// terminate gracefully, so they stay too); the VMI's Ready turns False
// (PodTerminating) and the VM says Stopping.
func (s *Simulator) RequestStop(ctx context.Context, ns, name string) error {
	if _, err := s.updateVM(ctx, ns, name, managerVirtctl, func(vm *kubevirtv1.VirtualMachine) error {
		vm.Spec.Running = nil
		vm.Spec.RunStrategy = ptr.To(kubevirtv1.RunStrategyHalted)
		return nil
	}); err != nil {
		return err
	}
	if err := s.syncVM(ctx, ns, name); err != nil {
		return err
	}
	if err := s.Client.Get(ctx, key(ns, name), &kubevirtv1.VirtualMachineInstance{}); apierrors.IsNotFound(err) {
		return nil // already stopped
	}
	return s.beginVMIDeletion(ctx, ns, name, managerVirtController)
}

// CompleteStop is the second half: virt-handler reports the domain shut
// down (VMI Succeeded), the kubelet reports the launcher pods Succeeded and
// removes them, virt-controller drops the VMI's finalizers so it goes away,
// and the VM says Stopped.
func (s *Simulator) CompleteStop(ctx context.Context, ns, name string) error {
	if err := s.Client.Get(ctx, key(ns, name), &kubevirtv1.VirtualMachineInstance{}); apierrors.IsNotFound(err) {
		return s.syncVM(ctx, ns, name)
	}
	return s.finishVMIDeletion(ctx, ns, name)
}

// DeleteVMI deletes the VMI as a user would and plays the shutdown that
// follows (as RequestStop and CompleteStop do, minus the run strategy).
// The simulator does not start a new VMI for a VM whose run strategy would
// (Always): that VM says Starting until Start.
func (s *Simulator) DeleteVMI(ctx context.Context, ns, name string) error {
	if err := s.beginVMIDeletion(ctx, ns, name, managerUser); err != nil {
		return err
	}
	return s.finishVMIDeletion(ctx, ns, name)
}

// DeleteVM deletes the VM as a user would: it says Terminating behind its
// finalizer, virt-controller deletes and shuts down its VMI, then removes
// the finalizer and the VM goes away.
func (s *Simulator) DeleteVM(ctx context.Context, ns, name string) error {
	vm := &kubevirtv1.VirtualMachine{}
	if err := s.Client.Get(ctx, key(ns, name), vm); err != nil {
		return fmt.Errorf("reading VM %s/%s: %w", ns, name, err)
	}
	if err := s.Client.Delete(ctx, vm); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting VM %s/%s: %w", ns, name, err)
	}
	if err := s.syncVM(ctx, ns, name); err != nil {
		return err
	}
	if err := s.Client.Get(ctx, key(ns, name), &kubevirtv1.VirtualMachineInstance{}); err == nil {
		if err := s.beginVMIDeletion(ctx, ns, name, managerVirtController); err != nil {
			return err
		}
		if err := s.finishVMIDeletion(ctx, ns, name); err != nil {
			return err
		}
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	_, err := s.updateVM(ctx, ns, name, managerVirtController, func(vm *kubevirtv1.VirtualMachine) error {
		removeFinalizer(vm, kubevirtv1.VirtualMachineControllerFinalizer)
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// beginVMIDeletion deletes the VMI (as who), then virt-controller deletes
// its launcher pods and syncs the VMI and VM.
func (s *Simulator) beginVMIDeletion(ctx context.Context, ns, name, who string) error {
	vmi, err := s.getVMI(ctx, ns, name)
	if err != nil {
		return err
	}
	if vmi.DeletionTimestamp == nil {
		if err := s.Client.Delete(ctx, vmi); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting VMI %s/%s as %s: %w", ns, name, who, err)
		}
	}
	pods, err := s.LauncherPods(ctx, vmi)
	if err != nil {
		return err
	}
	for i := range pods {
		if pods[i].DeletionTimestamp != nil {
			continue
		}
		if err := s.Client.Delete(ctx, &pods[i]); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting launcher pod %s/%s: %w", ns, pods[i].Name, err)
		}
	}
	return s.controllerSync(ctx, ns, name)
}

// finishVMIDeletion plays the end of a VMI that is being deleted.
func (s *Simulator) finishVMIDeletion(ctx context.Context, ns, name string) error {
	vmi, err := s.getVMI(ctx, ns, name)
	if err != nil {
		return err
	}
	now := s.now()
	if !vmi.IsFinal() {
		if _, err := s.updateVMI(ctx, ns, name, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
			removeVMICond(vmi, kubevirtv1.VirtualMachineInstanceAgentConnected)
			setVMIPhase(vmi, kubevirtv1.Succeeded, now)
			return nil
		}); err != nil {
			return err
		}
	}
	pods, err := s.LauncherPods(ctx, vmi)
	if err != nil {
		return err
	}
	for i := range pods {
		p := &pods[i]
		if !podDone(p) && p.Spec.NodeName != "" {
			if _, err := s.terminatePod(ctx, ns, p.Name, corev1.PodSucceeded, "Completed", 0); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		if err := s.Client.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing launcher pod %s/%s: %w", ns, p.Name, err)
		}
	}
	if err := s.controllerSync(ctx, ns, name); err != nil {
		return err
	}
	if _, err := s.updateVMI(ctx, ns, name, managerVirtController, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		removeFinalizer(vmi, kubevirtv1.VirtualMachineInstanceFinalizer)
		removeFinalizer(vmi, kubevirtv1.DeprecatedVirtualMachineInstanceFinalizer)
		removeFinalizer(vmi, kubevirtv1.VirtualMachineControllerFinalizer)
		return nil
	}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return s.syncVM(ctx, ns, name)
}
