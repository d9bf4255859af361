package simulator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Launcher pods with volumes: between kube-scheduler's binding and the
// containers' start lie the attach (the attach-detach controller and the
// external-attacher) and the mount (the kubelet). PlaceLauncherPod stops
// before them, RunLauncherPod goes on after them, BootWithVolumes does all
// of it.

// PlaceLauncherPod is kube-scheduler placing the VMI's launcher pod
// (created if the VMI is Pending) on node, and the kubelet beginning to
// start it. For each WaitForFirstConsumer claim of the pod that is not
// bound yet, kube-scheduler's volume binding first sets
// SelectedNodeAnnotation and waits for the claim to bind (the external
// provisioner runs meanwhile: AwaitBound, so the PV binder of a running
// kube-controller-manager is needed). Then it binds the pod
// (PodScheduled=True) and the kubelet reports it Pending, its containers
// ContainerCreating, while the volumes attach and mount. The VMI stays
// Scheduling.
func (s *Simulator) PlaceLauncherPod(ctx context.Context, ns, name, node string) error {
	pod, err := s.ensurePendingLauncher(ctx, ns, name)
	if err != nil {
		return err
	}
	for _, claim := range claimsOf(pod) {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := s.Client.Get(ctx, key(ns, claim), pvc); err != nil {
			return fmt.Errorf("PlaceLauncherPod: reading PVC %s/%s: %w", ns, claim, err)
		}
		if pvc.Status.Phase == corev1.ClaimBound {
			continue
		}
		sc := &storagev1.StorageClass{}
		if err := s.Client.Get(ctx, key("", ptr.Deref(pvc.Spec.StorageClassName, "")), sc); err != nil {
			return fmt.Errorf("PlaceLauncherPod: PVC %s/%s is not bound and its StorageClass cannot be read: %w", ns, claim, err)
		}
		if ptr.Deref(sc.VolumeBindingMode, storagev1.VolumeBindingImmediate) != storagev1.VolumeBindingWaitForFirstConsumer {
			return fmt.Errorf("PlaceLauncherPod: PVC %s/%s is not bound (kube-scheduler does not place a pod with unbound immediate PersistentVolumeClaims)", ns, claim)
		}
		if err := s.SelectNode(ctx, ns, claim, node); err != nil {
			return err
		}
		if _, err := s.AwaitBound(ctx, ns, claim); err != nil {
			return err
		}
	}
	if err := s.bindPod(ctx, pod, node); err != nil {
		return err
	}
	return s.containerCreating(ctx, ns, pod.Name, node)
}

// containerCreating is the kubelet's status of a pod waiting for its
// volumes: no sandbox yet (no pod IP), init containers PodInitializing,
// containers ContainerCreating, not Ready.
func (s *Simulator) containerCreating(ctx context.Context, ns, pod, node string) error {
	now := s.now()
	hostIP, _ := s.nodeNet(ctx, node)
	_, err := s.updatePodStatus(ctx, ns, pod, managerKubelet, func(p *corev1.Pod) error {
		p.Status.Phase = corev1.PodPending
		p.Status.HostIP, p.Status.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
		p.Status.StartTime = &now
		waiting := func(c corev1.Container, reason string) corev1.ContainerStatus {
			return corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: ptr.To(false),
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
		}
		p.Status.InitContainerStatuses = nil
		var inits, names []string
		for _, c := range p.Spec.InitContainers {
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, waiting(c, "PodInitializing"))
			inits = append(inits, c.Name)
		}
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, waiting(c, "ContainerCreating"))
			names = append(names, c.Name)
		}
		setPodCond(p, corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse}, now)
		setPodCond(p, corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionFalse, Reason: "ContainersNotInitialized",
			Message: fmt.Sprintf("containers with incomplete status: %v", inits)}, now)
		setPodCond(p, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady",
			Message: fmt.Sprintf("containers with unready status: %v", names)}, now)
		kubeletReady(p, now)
		return nil
	})
	return err
}

// RunLauncherPod is the kubelet starting the VMI's launcher pod that
// PlaceLauncherPod bound, its volumes attached and mounted: Multus wires
// it, it runs, and virt-controller hands the VMI to virt-handler
// (Scheduled), as StartLauncherPod does after its binding.
func (s *Simulator) RunLauncherPod(ctx context.Context, ns, name string) error {
	vmi, err := s.vmiInPhase(ctx, ns, name, "RunLauncherPod", kubevirtv1.Scheduling)
	if err != nil {
		return err
	}
	pod, err := s.boundLauncher(ctx, vmi)
	if err != nil {
		return err
	}
	return s.runLauncher(ctx, vmi, pod, pod.Spec.NodeName)
}

// BootWithVolumes boots the VM's VMI on node through its volumes: it waits
// for its claims of Immediate binding to bind (AwaitBound), then
// PlaceLauncherPod, then for each of the pod's claims the external-attacher
// answers the attach-detach controller's VolumeAttachment (AwaitAttachment;
// kube-controller-manager must run), then RunLauncherPod, StartDomain and,
// for a VM with a guest agent, ConnectAgent. An attach error stops it.
func (s *Simulator) BootWithVolumes(ctx context.Context, ns, name, node string) error {
	vmi, err := s.getVMI(ctx, ns, name)
	if err != nil {
		return err
	}
	for _, v := range vmi.Spec.Volumes {
		claim := claimOf(v)
		if claim == "" {
			continue
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := s.Client.Get(ctx, key(ns, claim), pvc); err != nil {
			return fmt.Errorf("BootWithVolumes: reading PVC %s/%s: %w", ns, claim, err)
		}
		sc := &storagev1.StorageClass{}
		if err := s.Client.Get(ctx, key("", ptr.Deref(pvc.Spec.StorageClassName, "")), sc); err != nil {
			return fmt.Errorf("BootWithVolumes: reading the StorageClass of PVC %s/%s: %w", ns, claim, err)
		}
		if ptr.Deref(sc.VolumeBindingMode, storagev1.VolumeBindingImmediate) == storagev1.VolumeBindingImmediate {
			if _, err := s.AwaitBound(ctx, ns, claim); err != nil {
				return err
			}
		}
	}
	if err := s.PlaceLauncherPod(ctx, ns, name, node); err != nil {
		return err
	}
	pod, err := s.boundLauncher(ctx, vmi)
	if err != nil {
		return err
	}
	for _, claim := range claimsOf(pod) {
		va, err := s.AwaitAttachment(ctx, ns, claim, node)
		if err != nil {
			return err
		}
		if va.Status.AttachError != nil {
			return fmt.Errorf("BootWithVolumes: attaching PVC %s/%s to %s failed: %s", ns, claim, node, va.Status.AttachError.Message)
		}
	}
	if err := s.RunLauncherPod(ctx, ns, name); err != nil {
		return err
	}
	return s.Boot(ctx, ns, name, node)
}

// Hotplug volume status as virt-controller writes it for a claim that is
// not ready (kv:pkg/virt-controller/watch/vmi/volume-hotplug.go).
const (
	// PVCNotReady is the reason of a hotplug volume whose claim is not
	// ready to be attached (KubeVirt's PVCNotReadyReason).
	PVCNotReady = "PVCNotReady"
)

// HotplugVolume is a user hot-plugging claim ns/claim into the running VMI
// as volume (virtctl addvolume, without --persist): virt-api adds the
// hotpluggable PVC volume and a SCSI disk to the VMI's spec, and
// virt-controller adds its status.volumeStatus entry (hotplugVolume set):
// while the claim is Pending, phase Pending with reason PVCNotReady and
// message "PVC is in phase ClaimPending", and no attachment pod, so the
// volume never reaches the guest; a bound claim is phase Bound (the
// attachment pod is not played).
func (s *Simulator) HotplugVolume(ctx context.Context, ns, name, volume, claim string) error {
	if _, err := s.vmiInPhase(ctx, ns, name, "HotplugVolume", kubevirtv1.Running); err != nil {
		return err
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := s.Client.Get(ctx, key(ns, claim), pvc); err != nil {
		return fmt.Errorf("HotplugVolume: reading PVC %s/%s: %w", ns, claim, err)
	}
	if _, err := s.updateVMI(ctx, ns, name, managerVirtAPI, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		for _, v := range vmi.Spec.Volumes {
			if v.Name == volume {
				return nil
			}
		}
		vmi.Spec.Volumes = append(vmi.Spec.Volumes, kubevirtv1.Volume{Name: volume, VolumeSource: kubevirtv1.VolumeSource{
			PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
				Hotpluggable:                      true,
			},
		}})
		vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, kubevirtv1.Disk{
			Name: volume, DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusSCSI}},
		})
		return nil
	}); err != nil {
		return err
	}
	phase, msg := kubevirtv1.VolumePending, "PVC is in phase ClaimPending"
	switch pvc.Status.Phase {
	case corev1.ClaimBound:
		phase, msg = kubevirtv1.VolumeBound, "PVC is in phase Bound"
	case corev1.ClaimLost:
		msg = "PVC is in phase Lost"
	}
	if _, err := s.updateVMI(ctx, ns, name, managerVirtController, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		st := kubevirtv1.VolumeStatus{Name: volume, HotplugVolume: &kubevirtv1.HotplugVolumeStatus{}, Phase: phase, Reason: PVCNotReady, Message: msg}
		for i := range vmi.Status.VolumeStatus {
			if vmi.Status.VolumeStatus[i].Name == volume {
				vmi.Status.VolumeStatus[i] = st
				return nil
			}
		}
		vmi.Status.VolumeStatus = append(vmi.Status.VolumeStatus, st)
		return nil
	}); err != nil {
		return err
	}
	return s.syncVM(ctx, ns, name)
}
