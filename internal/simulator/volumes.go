package simulator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
		claim := volumeClaim(v)
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
// hotpluggable volume (a DataVolume when one is called claim, else the
// PVC) and a SCSI disk to the VMI's spec, and
// virt-controller adds its status.volumeStatus entry (hotplugVolume set).
// While the claim is Pending: phase Pending, reason PVCNotReady, message
// "PVC is in phase ClaimPending", and no attachment pod, so the volume
// never reaches the guest. A bound claim gets its attachment pod
// (hp-volume-<suffix>, owned by the launcher pod, bound to the VMI's node,
// ContainerCreating while the attach-detach controller attaches the claim
// for it): phase AttachedToNode, reason SuccessfulCreate, message "Created
// hotplug attachment pod hp-volume-..., for volume <volume>",
// hotplugVolume.attachPodName set and attachPodUID empty until the pod is
// ready (CompleteHotplug), and the Normal event SuccessfulCreate on the VMI.
func (s *Simulator) HotplugVolume(ctx context.Context, ns, name, volume, claim string) error {
	vmi, launcher, err := s.vmiAndLauncher(ctx, ns, name, "HotplugVolume", kubevirtv1.Running)
	if err != nil {
		return err
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := s.Client.Get(ctx, key(ns, claim), pvc); err != nil {
		return fmt.Errorf("HotplugVolume: reading PVC %s/%s: %w", ns, claim, err)
	}
	// virtctl addvolume names a DataVolume's volume as a DataVolume when
	// one of that name exists, else as a claim; without CDI's CRD the Get
	// fails and it is a claim.
	isDV := s.Client.Get(ctx, key(ns, claim), &cdiv1.DataVolume{}) == nil
	if _, err := s.updateVMI(ctx, ns, name, managerVirtAPI, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		for _, v := range vmi.Spec.Volumes {
			if v.Name == volume {
				return nil
			}
		}
		src := kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
			Hotpluggable:                      true,
		}}
		if isDV {
			src = kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: claim, Hotpluggable: true}}
		}
		vmi.Spec.Volumes = append(vmi.Spec.Volumes, kubevirtv1.Volume{Name: volume, VolumeSource: src})
		vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, kubevirtv1.Disk{
			Name: volume, DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusSCSI}},
		})
		return nil
	}); err != nil {
		return err
	}
	st := kubevirtv1.VolumeStatus{Name: volume, HotplugVolume: &kubevirtv1.HotplugVolumeStatus{},
		Phase: kubevirtv1.VolumePending, Reason: PVCNotReady, Message: "PVC is in phase ClaimPending"}
	switch pvc.Status.Phase {
	case corev1.ClaimBound:
		if launcher == nil {
			return fmt.Errorf("HotplugVolume: VMI %s/%s has no launcher pod", ns, name)
		}
		hp, err := s.createAttachmentPod(ctx, vmi, launcher, volume, claim)
		if err != nil {
			return err
		}
		st.Phase, st.Reason = kubevirtv1.HotplugVolumeAttachedToNode, "SuccessfulCreate"
		st.Message = fmt.Sprintf("Created hotplug attachment pod %s, for volume %s", hp.Name, volume)
		st.HotplugVolume.AttachPodName = hp.Name
		st.PersistentVolumeClaimInfo = &kubevirtv1.PersistentVolumeClaimInfo{
			ClaimName: claim, AccessModes: pvc.Spec.AccessModes, VolumeMode: pvc.Spec.VolumeMode,
			Capacity: pvc.Status.Capacity, Requests: pvc.Spec.Resources.Requests,
		}
		if err := s.recordEvent(ctx, vmi, corev1.EventTypeNormal, st.Reason, st.Message, managerVirtController, ""); err != nil {
			return err
		}
	case corev1.ClaimLost:
		st.Message = "PVC is in phase Lost"
	}
	if _, err := s.updateVMI(ctx, ns, name, managerVirtController, func(vmi *kubevirtv1.VirtualMachineInstance) error {
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

// attachmentPodPrefix names KubeVirt's hotplug attachment pods.
const attachmentPodPrefix = "hp-volume-"

// createAttachmentPod is virt-controller creating the hotplug attachment
// pod of claim (kv:pkg/virt-controller/services/template.go,
// RenderHotplugAttachmentPodTemplate): owned by the launcher pod, pinned to
// its node, mounting the claim; kube-scheduler binds it there and the
// kubelet reports it ContainerCreating until its volume is attached.
func (s *Simulator) createAttachmentPod(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, launcher *corev1.Pod, volume, claim string) (*corev1.Pod, error) {
	node := launcher.Spec.NodeName
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: vmi.Namespace, GenerateName: attachmentPodPrefix, Name: s.generateName(attachmentPodPrefix),
			Labels: map[string]string{kubevirtv1.AppLabel: "hotplug-disk"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: launcher.Name, UID: launcher.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{node},
				}}}},
			}}},
			Containers: []corev1.Container{{
				Name: "hotplug-disk", Image: s.LauncherImage,
				Command:      []string{"/bin/sh", "-c", "/usr/bin/container-disk --copy-path /path/hp"},
				VolumeMounts: []corev1.VolumeMount{{Name: "hotplug-disks", MountPath: "/path"}, {Name: volume, MountPath: "/path/" + volume}},
			}},
			Volumes: []corev1.Volume{
				{Name: "hotplug-disks", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: volume, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}},
			},
		},
	}
	err := s.Client.Create(ctx, pod, client.FieldOwner(managerVirtController))
	for try := 0; apierrors.IsAlreadyExists(err) && try < 8; try++ {
		pod.Name = s.generateName(attachmentPodPrefix)
		err = s.Client.Create(ctx, pod, client.FieldOwner(managerVirtController))
	}
	if err != nil {
		return nil, fmt.Errorf("creating the attachment pod of %s/%s for %s: %w", vmi.Namespace, vmi.Name, volume, err)
	}
	if err := s.bindPod(ctx, pod, node); err != nil {
		return nil, err
	}
	if err := s.containerCreating(ctx, pod.Namespace, pod.Name, node); err != nil {
		return nil, err
	}
	return pod, nil
}

// CompleteHotplug finishes hot-plugging volume into the running VMI once
// its claim is attached to the node (AwaitAttachment): the kubelet runs the
// attachment pod, virt-controller records its UID, and virt-handler
// attaches the disk to the domain: phase Ready, reason VolumeReady,
// message "Successfully attach hotplugged volume <volume> to VM", target
// sda.
func (s *Simulator) CompleteHotplug(ctx context.Context, ns, name, volume string) error {
	vmi, err := s.vmiInPhase(ctx, ns, name, "CompleteHotplug", kubevirtv1.Running)
	if err != nil {
		return err
	}
	var hp string
	for _, st := range vmi.Status.VolumeStatus {
		if st.Name == volume && st.HotplugVolume != nil {
			hp = st.HotplugVolume.AttachPodName
		}
	}
	if hp == "" {
		return fmt.Errorf("CompleteHotplug: volume %s of VMI %s/%s has no attachment pod", volume, ns, name)
	}
	pod := &corev1.Pod{}
	if err := s.Client.Get(ctx, key(ns, hp), pod); err != nil {
		return fmt.Errorf("CompleteHotplug: reading attachment pod %s/%s: %w", ns, hp, err)
	}
	hostIP, podIP := s.podIP(ctx, pod.Spec.NodeName)
	if pod, err = s.runPod(ctx, ns, hp, podIP, hostIP); err != nil {
		return err
	}
	_, err = s.updateVMI(ctx, ns, name, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		for i := range vmi.Status.VolumeStatus {
			st := &vmi.Status.VolumeStatus[i]
			if st.Name != volume || st.HotplugVolume == nil {
				continue
			}
			st.HotplugVolume.AttachPodUID = pod.UID
			st.Phase, st.Reason, st.Target = kubevirtv1.VolumeReady, "VolumeReady", "sda"
			st.Message = fmt.Sprintf("Successfully attach hotplugged volume %s to VM", volume)
		}
		return nil
	})
	return err
}
