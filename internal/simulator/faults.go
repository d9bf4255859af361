package simulator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Paused condition reasons virt-handler writes (kv:pkg/virt-handler/vm.go).
const (
	PausedByUser             = "PausedByUser"
	PausedIOError            = "PausedIOError"
	PausedByMigrationMonitor = "PausedByMigrationMonitor"
)

var pauseMessages = map[string]string{
	PausedByUser:             "VMI was paused by user",
	PausedIOError:            "VMI was paused, low-level IO error detected",
	PausedByMigrationMonitor: "VMI was paused by Migration Monitor",
}

// Pause pauses the running domain for reason (PausedByUser, PausedIOError
// or PausedByMigrationMonitor): virt-handler adds Paused=True,
// virt-controller sets the pod's kubevirt.io/virtual-machine-unpaused gate
// False (reason Paused), the kubelet turns the pod's Ready False
// (ReadinessGatesNotReady), virt-controller copies that into the VMI's
// Ready, and the VM says Paused.
func (s *Simulator) Pause(ctx context.Context, ns, name, reason string) error {
	msg, ok := pauseMessages[reason]
	if !ok {
		return fmt.Errorf("Pause: reason %q is not one virt-handler writes (%s, %s, %s)", reason, PausedByUser, PausedIOError, PausedByMigrationMonitor)
	}
	vmi, err := s.vmiInPhase(ctx, ns, name, "Pause", kubevirtv1.Running)
	if err != nil {
		return err
	}
	now := s.now()
	if _, err := s.updateVMI(ctx, ns, name, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		setVMICond(vmi, kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstancePaused, Status: corev1.ConditionTrue,
			Reason: reason, Message: msg, LastProbeTime: now, LastTransitionTime: now,
		}, now)
		return nil
	}); err != nil {
		return err
	}
	return s.setUnpausedGate(ctx, vmi, false)
}

// Unpause resumes a paused domain: the reverse of Pause.
func (s *Simulator) Unpause(ctx context.Context, ns, name string) error {
	vmi, err := s.updateVMI(ctx, ns, name, managerVirtHandler, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		removeVMICond(vmi, kubevirtv1.VirtualMachineInstancePaused)
		return nil
	})
	if err != nil {
		return err
	}
	return s.setUnpausedGate(ctx, vmi, true)
}

// setUnpausedGate is virt-controller's syncPausedConditionToPod, then the
// kubelet's Ready, then virt-controller's VMI sync.
func (s *Simulator) setUnpausedGate(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, unpaused bool) error {
	pod, err := s.currentLauncher(ctx, vmi)
	if err != nil {
		return err
	}
	if pod == nil {
		return fmt.Errorf("VMI %s/%s has no launcher pod on %s", vmi.Namespace, vmi.Name, vmi.Status.NodeName)
	}
	now := s.now()
	gate := corev1.PodCondition{Type: kubevirtv1.VirtualMachineUnpaused, Status: corev1.ConditionTrue, Reason: "NotPaused"}
	if !unpaused {
		gate.Status, gate.Reason = corev1.ConditionFalse, "Paused"
	}
	if _, err := s.updatePodStatus(ctx, pod.Namespace, pod.Name, managerVirtController, func(p *corev1.Pod) error {
		setPodCond(p, gate, now)
		return nil
	}); err != nil {
		return err
	}
	if _, err := s.updatePodStatus(ctx, pod.Namespace, pod.Name, managerKubelet, func(p *corev1.Pod) error {
		kubeletReady(p, now)
		return nil
	}); err != nil {
		return err
	}
	return s.controllerSync(ctx, vmi.Namespace, vmi.Name)
}

// Termination reasons of the compute container for CrashLauncher.
const (
	// CrashOOMKilled: the kernel's OOM killer ended the compute container
	// (exit code 137).
	CrashOOMKilled = "OOMKilled"
	// CrashError: virt-launcher exited with an error (exit code 1).
	CrashError = "Error"
)

// CrashLauncher makes the VMI's current launcher pod fail as the kubelet
// reports it: the compute container terminated with reason (CrashOOMKilled
// or CrashError), the pod Failed and not Ready. Only the pod is written:
// the VMI still says Running, the status lag a controller must see through
// (FailVMI is what virt-controller writes next).
func (s *Simulator) CrashLauncher(ctx context.Context, ns, name, reason string) error {
	code := int32(1)
	switch reason {
	case CrashOOMKilled:
		code = 137
	case CrashError:
	default:
		return fmt.Errorf("CrashLauncher: reason %q, want %s or %s", reason, CrashOOMKilled, CrashError)
	}
	_, pod, err := s.vmiAndLauncher(ctx, ns, name, "CrashLauncher")
	if err != nil {
		return err
	}
	if pod == nil || pod.Spec.NodeName == "" {
		return fmt.Errorf("CrashLauncher: VMI %s/%s has no running launcher pod", ns, name)
	}
	_, err = s.terminatePod(ctx, ns, pod.Name, corev1.PodFailed, reason, code)
	return err
}

// FailVMI is virt-controller finding the VMI's launcher pod down (or
// virt-handler finding the domain gone): phase Failed, Ready False, the VM
// Stopped. The simulator does not restart the VM, whatever its run
// strategy; Start after DeleteVMI does.
func (s *Simulator) FailVMI(ctx context.Context, ns, name string) error {
	now := s.now()
	if _, err := s.updateVMI(ctx, ns, name, managerVirtController, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		if vmi.IsFinal() {
			return fmt.Errorf("FailVMI: VMI %s/%s is already %s", ns, name, vmi.Status.Phase)
		}
		setVMIPhase(vmi, kubevirtv1.Failed, now)
		return nil
	}); err != nil {
		return err
	}
	return s.controllerSync(ctx, ns, name)
}

// Scheduling and synchronization failures for FailScheduling.
const (
	// Unschedulable: kube-scheduler finds no node for the launcher pod.
	Unschedulable = corev1.PodReasonUnschedulable
	// ErrImagePull and ImagePullBackOff: the kubelet cannot pull an image
	// of the launcher pod (the containerDisk's, else virt-launcher's).
	ErrImagePull     = "ErrImagePull"
	ImagePullBackOff = "ImagePullBackOff"
	// FailedPvcNotFound: a PVC the VMI uses does not exist; no pod is
	// created.
	FailedPvcNotFound = "FailedPvcNotFound"
	// FailedCreate: virt-controller cannot create the launcher pod.
	FailedCreate = "FailedCreate"
)

// FailScheduling stops a Pending or Scheduling VMI short of a node, the way
// reason says:
//
//   - Unschedulable: the launcher pod (created if needed) gets
//     PodScheduled=False reason Unschedulable from kube-scheduler;
//     virt-controller copies the condition into the VMI; the VM says
//     ErrorUnschedulable.
//   - ErrImagePull / ImagePullBackOff: the pod is bound to the first Ready,
//     schedulable node and stays Pending with a container waiting on the
//     image; virt-controller sets Synchronized=False with that reason; the
//     VM says ErrImagePull / ImagePullBackOff.
//   - FailedPvcNotFound, FailedCreate or any other reason: no pod;
//     virt-controller sets Synchronized=False with that reason on the
//     Pending VMI.
func (s *Simulator) FailScheduling(ctx context.Context, ns, name, reason string) error {
	vmi, err := s.vmiInPhase(ctx, ns, name, "FailScheduling", "", kubevirtv1.Pending, kubevirtv1.Scheduling)
	if err != nil {
		return err
	}
	now := s.now()
	switch reason {
	case Unschedulable:
		return s.unschedulable(ctx, ns, name, func(nodes int) string {
			return fmt.Sprintf("%d Insufficient devices.kubevirt.io/kvm", nodes)
		}, "No preemption victims found for incoming pod")
	case ErrImagePull, ImagePullBackOff:
		pod, err := s.ensurePendingLauncher(ctx, ns, name)
		if err != nil {
			return err
		}
		node, err := s.firstReadyNode(ctx)
		if err != nil {
			return err
		}
		podIP, hostIP, err := s.placePod(ctx, pod, node, vmi)
		if err != nil {
			return err
		}
		msg, err := s.imagePullFails(ctx, ns, pod.Name, podIP, hostIP, reason)
		if err != nil {
			return err
		}
		if _, err := s.updateVMI(ctx, ns, name, managerVirtController, func(vmi *kubevirtv1.VirtualMachineInstance) error {
			notSynchronized(vmi, reason, msg, now)
			return nil
		}); err != nil {
			return err
		}
	default:
		msg := ""
		switch reason {
		case FailedPvcNotFound:
			claim := name + "-rootdisk"
			for _, v := range vmi.Spec.Volumes {
				if v.PersistentVolumeClaim != nil {
					claim = v.PersistentVolumeClaim.ClaimName
					break
				}
			}
			msg = fmt.Sprintf("PVC %s/%s does not exist, waiting for it to appear", ns, claim)
		case FailedCreate:
			msg = fmt.Sprintf("failed to create virtual machine pod: pods \"virt-launcher-%s-\" is forbidden: exceeded quota: compute-quota, requested: requests.memory=2294Mi, used: requests.memory=30Gi, limited: requests.memory=32Gi", name)
		}
		if _, err := s.updateVMI(ctx, ns, name, managerVirtController, func(vmi *kubevirtv1.VirtualMachineInstance) error {
			setVMIPhase(vmi, kubevirtv1.Pending, now)
			notSynchronized(vmi, reason, msg, now)
			return nil
		}); err != nil {
			return err
		}
	}
	return s.syncVM(ctx, ns, name)
}

// notSynchronized is virt-controller's Synchronized=False condition on the
// VMI, with the reason it could not go on.
func notSynchronized(vmi *kubevirtv1.VirtualMachineInstance, reason, msg string, now metav1.Time) {
	setVMICond(vmi, kubevirtv1.VirtualMachineInstanceCondition{
		Type: kubevirtv1.VirtualMachineInstanceSynchronized, Status: corev1.ConditionFalse,
		Reason: reason, Message: msg, LastTransitionTime: now,
	}, now)
}

// ensurePendingLauncher returns the VMI's unbound launcher pod, creating it
// (CreateLauncherPod) when the VMI is still Pending.
func (s *Simulator) ensurePendingLauncher(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	vmi, err := s.getVMI(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if vmi.Status.Phase == "" || vmi.Status.Phase == kubevirtv1.Pending {
		if err := s.CreateLauncherPod(ctx, ns, name); err != nil {
			return nil, err
		}
		if vmi, err = s.getVMI(ctx, ns, name); err != nil {
			return nil, err
		}
	}
	return s.pendingLauncher(ctx, vmi)
}

// imagePullFails is the kubelet failing to pull an image: the first
// container using it waits with reason, and the pod stays Pending.
func (s *Simulator) imagePullFails(ctx context.Context, ns, pod, podIP, hostIP, reason string) (string, error) {
	now := s.now()
	var msg string
	_, err := s.updatePodStatus(ctx, ns, pod, managerKubelet, func(p *corev1.Pod) error {
		image := s.LauncherImage
		for _, c := range p.Spec.Containers {
			if c.Name != ComputeContainer && c.Image != s.LauncherImage {
				image = c.Image
				break
			}
		}
		msg = fmt.Sprintf("initializing source docker://%s: reading manifest in %s: manifest unknown", image, image)
		if reason == ImagePullBackOff {
			msg = fmt.Sprintf("Back-off pulling image %q", image)
		}
		p.Status.Phase = corev1.PodPending
		p.Status.HostIP, p.Status.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
		p.Status.PodIP, p.Status.PodIPs = podIP, []corev1.PodIP{{IP: podIP}}
		p.Status.StartTime = &now
		// An init container that fails to pull holds back the ones after
		// it and every container (PodInitializing); a container that fails
		// waits with reason while the others are being created.
		failed := ""
		status := func(c corev1.Container, init bool) corev1.ContainerStatus {
			cs := s.containerStatus(c, now)
			cs.ImageID, cs.ContainerID = "", ""
			cs.Started = ptr.To(false)
			switch {
			case failed != "":
				cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
			case c.Image == image:
				if init {
					failed = c.Name
				}
				cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
			case init:
				cs = s.containerStatus(c, now)
				cs.Started = ptr.To(false)
				cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: now, FinishedAt: now, ContainerID: cs.ContainerID}}
			default:
				cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
			}
			return cs
		}
		p.Status.InitContainerStatuses = nil
		for _, c := range p.Spec.InitContainers {
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, status(c, true))
		}
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, status(c, false))
		}
		setPodCond(p, corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue}, now)
		if failed != "" {
			setPodCond(p, corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionFalse, Reason: "ContainersNotInitialized",
				Message: fmt.Sprintf("containers with incomplete status: [%s]", failed)}, now)
		} else {
			setPodCond(p, corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}, now)
		}
		var names []string
		for _, c := range p.Spec.Containers {
			names = append(names, c.Name)
		}
		setPodCond(p, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady",
			Message: fmt.Sprintf("containers with unready status: %v", names)}, now)
		kubeletReady(p, now)
		return nil
	})
	return msg, err
}

// NodeUnresponsive plays virt-controller's node controller giving up on the
// VMI's node (kv:pkg/virt-controller/watch/node/node.go). It acts only when
// no live launcher pod exists, and a pod on a dark node stays "alive"
// (kubevirt#8104), so first the pods on that node are force-deleted, as an
// operator (or the out-of-service taint) does; then the node is labelled
// kubevirt.io/schedulable=false and the VMI is patched to phase Failed with
// status.reason NodeUnresponsive. In KubeVirt this happens once the
// heartbeat is older than 5 minutes: advance the clock after LoseNode first
// for a coherent timeline.
func (s *Simulator) NodeUnresponsive(ctx context.Context, ns, name string) error {
	vmi, err := s.vmiInPhase(ctx, ns, name, "NodeUnresponsive", kubevirtv1.Scheduled, kubevirtv1.Running)
	if err != nil {
		return err
	}
	node := vmi.Status.NodeName
	pods, err := s.LauncherPods(ctx, vmi)
	if err != nil {
		return err
	}
	for i := range pods {
		if pods[i].Spec.NodeName != node {
			continue
		}
		if err := s.Client.Delete(ctx, &pods[i], client.GracePeriodSeconds(0)); err != nil {
			return fmt.Errorf("force-deleting launcher pod %s/%s: %w", ns, pods[i].Name, err)
		}
	}
	if err := s.SetNodeSchedulable(ctx, node, false); err != nil {
		return err
	}
	now := s.now()
	if _, err := s.updateVMI(ctx, ns, name, managerVirtController, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		setVMIPhase(vmi, kubevirtv1.Failed, now)
		vmi.Status.Reason = "NodeUnresponsive"
		return nil
	}); err != nil {
		return err
	}
	return s.controllerSync(ctx, ns, name)
}

// Evict is a drain's eviction of the VMI's launcher pod as KubeVirt answers
// it: virt-api's eviction webhook refuses the eviction and sets
// status.evacuationNodeName to the VMI's node, and virt-controller adds
// EvictionRequested=True from KubeVirt v1.7 (kv:pkg/virt-controller/watch/
// vmi/lifecycle.go; before, evacuationNodeName is the only sign). The
// evacuation controller would then create a
// migration for a live-migratable VMI: call StartMigration with
// Evacuation set for that.
func (s *Simulator) Evict(ctx context.Context, ns, name string) error {
	if _, err := s.vmiInPhase(ctx, ns, name, "Evict", kubevirtv1.Scheduled, kubevirtv1.Running); err != nil {
		return err
	}
	if _, err := s.updateVMI(ctx, ns, name, managerVirtAPI, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		vmi.Status.EvacuationNodeName = vmi.Status.NodeName
		return nil
	}); err != nil {
		return err
	}
	if !s.writes("v1.7") {
		return s.syncVM(ctx, ns, name)
	}
	return s.controllerSetsVMICond(ctx, ns, name, kubevirtv1.VirtualMachineInstanceCondition{
		Type: kubevirtv1.VirtualMachineInstanceEvictionRequested, Status: corev1.ConditionTrue,
		Reason: kubevirtv1.VirtualMachineInstanceReasonEvictionRequested, Message: "VMI is marked for eviction",
	})
}

// controllerSetsVMICond is virt-controller setting one condition of the
// VMI (its transition time now when it changes), then the VM's status
// following.
func (s *Simulator) controllerSetsVMICond(ctx context.Context, ns, name string, c kubevirtv1.VirtualMachineInstanceCondition) error {
	now := s.now()
	if _, err := s.updateVMI(ctx, ns, name, managerVirtController, func(vmi *kubevirtv1.VirtualMachineInstance) error {
		setVMICond(vmi, c, now)
		return nil
	}); err != nil {
		return err
	}
	return s.syncVM(ctx, ns, name)
}

// LauncherEvicted plays what follows a granted eviction of a running VMI's
// launcher pod (evictionStrategy None, or LiveMigrateIfPossible and not
// live-migratable, which KubeVirt's eviction admitter lets through,
// kv:pkg/virt-api/webhooks/validating-webhook/admitters/
// pod-eviction-admitter.go): virt-launcher shuts the guest down on SIGTERM
// and virt-handler reports the VMI Succeeded (kubevirt/kubevirt#9823), the
// kubelet removes the pod and virt-controller drops the VMI's finalizers.
// Then the VM controller follows the runStrategy
// (kv:pkg/virt-controller/watch/vm/vm.go): Always deletes the final VMI and
// creates a new one, Pending (Boot it where the scheduler would); the
// others leave the VMI Succeeded.
func (s *Simulator) LauncherEvicted(ctx context.Context, ns, name string) error {
	if err := s.finishVMIDeletion(ctx, ns, name); err != nil {
		return err
	}
	vm := &kubevirtv1.VirtualMachine{}
	if err := s.Client.Get(ctx, key(ns, name), vm); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("reading VM %s/%s: %w", ns, name, err)
	}
	if rs, err := vm.RunStrategy(); err != nil || rs != kubevirtv1.RunStrategyAlways {
		return nil
	}
	vmi, err := s.getVMI(ctx, ns, name)
	if err != nil {
		return err
	}
	if err := s.Client.Delete(ctx, vmi); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting VMI %s/%s as %s: %w", ns, name, managerVirtController, err)
	}
	return s.createVMIFromVM(ctx, ns, name)
}
