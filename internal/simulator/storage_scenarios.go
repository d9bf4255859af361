package simulator

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// StoragePlay is a storage situation the simulator drives a VM into. Unlike
// a Scenario it names no verdict: the Scenarios catalogue wraps each in a
// Scenario with the layer, verdict and reason it produces. Every play
// needs the real kube-controller-manager (testenv.Options.ControllerManager):
// the PV binder and the attach-detach controller write their part, and the
// play waits for them (StorageWait); DataVolume plays need CDI's CRD too
// (testenv.Options.CDI).
type StoragePlay struct {
	// Name is a short kebab-case identifier, the Scenario's name.
	Name string
	// Description says what happens to the VM.
	Description string
	// CDI says the play needs CDI's DataVolume CRD.
	CDI bool
	// Play drives VM vm in namespace ns (which it creates if missing) to
	// the situation's end state.
	Play func(ctx context.Context, s *Simulator, ns, vm string) error
}

// Messages the storage plays put in the components' mouths.
const (
	// AttachErrorMessage is the external-attacher's ControllerPublishVolume
	// error in attach-failed.
	AttachErrorMessage = "rpc error: code = Internal desc = failed to attach volume: the storage backend refused the connection to node"
	// MountErrorMessage is the CSI node plugin's NodeStageVolume error in
	// mount-failed.
	MountErrorMessage = "rpc error: code = Internal desc = mount failed: exit status 32: mount: /var/lib/kubelet/plugins/kubernetes.io/csi/" + CSIDriver + "/globalmount: wrong fs type, bad option, bad superblock on /dev/vdb, missing codepage or helper program, or other error."
	// ImportErrorMessage is the importer's termination message in
	// import-failed.
	ImportErrorMessage = "Unable to process data: Unable to transfer source data to scratch space: HTTP request errored: Get \"" + DataVolumeImportURL + "\": dial tcp: lookup download.fedoraproject.org: no such host"
	// ImportFailedRestarts is how often the importer has failed in
	// import-failed (CDI's alert CDIDataVolumeUnusualRestartCount fires
	// past 3).
	ImportFailedRestarts = 4
	// MissingStorageClass is the class volume-not-bound's claim asks for.
	MissingStorageClass = "fast-nvme"
	// unmatchedNodeLabel is the node selector volume-not-bound-wffc's VM
	// asks for and no node has.
	unmatchedNodeLabel = "storage.vmobs.io/nvme"
)

// StorageScenarios are the storage plays, in a stable order.
var StorageScenarios = []StoragePlay{
	{
		Name:        "volume-not-bound",
		Description: "The VM's root disk is a PVC of a StorageClass that does not exist: the PV binder records ProvisioningFailed on the claim, which stays Pending, and kube-scheduler leaves the launcher pod unscheduled (pod has unbound immediate PersistentVolumeClaims).",
		Play:        play((*Simulator).PlayVolumeNotBound),
	},
	{
		Name:        "volume-not-bound-wffc",
		Description: "The VM's root disk is a WaitForFirstConsumer PVC and its node selector matches no node: kube-scheduler places no launcher pod, so no node is ever selected for the claim and the PV binder waits for the pod to be scheduled (WaitForPodScheduled).",
		Play:        play((*Simulator).PlayVolumeNotBoundWFFC),
	},
	{
		Name:        "import-failed",
		Description: "The VM's root disk is a DataVolume whose HTTP import fails again and again: CDI keeps it in ImportInProgress with restartCount 4 and Running=False (Error), records ErrImportFailed on the PVC and an Error event on the DataVolume; the VM says DataVolumeError and has no VMI.",
		CDI:         true,
		Play:        play((*Simulator).PlayImportFailed),
	},
	{
		Name:        "attach-failed",
		Description: "The launcher pod is on node-a, the attach-detach controller creates the VolumeAttachment of its PVC, and the external-attacher fails it (status.attachError): the controller records FailedAttachVolume on the pod, which stays ContainerCreating.",
		Play:        play((*Simulator).PlayAttachFailed),
	},
	{
		Name:        "multi-attach",
		Description: "The VM's ReadWriteOnce PVC is attached to node-a for another VM's running launcher pod; the VM's launcher pod lands on node-b and the attach-detach controller refuses the second attachment (FailedAttachVolume, the Multi-Attach error: \"Waiting for detach\" from Kubernetes 1.37); the pod stays ContainerCreating.",
		Play:        play((*Simulator).PlayMultiAttach),
	},
	{
		Name:        "mount-failed",
		Description: "The VM's PVC is attached to node-a but the kubelet cannot mount it: FailedMount (MountVolume.MountDevice failed) on the launcher pod, which stays ContainerCreating.",
		Play:        play((*Simulator).PlayMountFailed),
	},
	{
		Name:        "import-in-progress",
		Description: "The VM's root disk is a DataVolume importing normally: its claim is bound, the import runs at 42.00%, the VM says Provisioning and has no VMI yet.",
		CDI:         true,
		Play:        play((*Simulator).PlayImportInProgress),
	},
	{
		Name:        "pvc-lost",
		Description: "The VM runs on node-a from a bound PVC whose PersistentVolume is then deleted (its finalizers removed by hand): the PV binder marks the claim Lost and records ClaimLost.",
		Play:        play((*Simulator).PlayPVCLost),
	},
	{
		Name:        "volume-attachment-stale",
		Description: "The VM runs from an attached PVC on a node of its own, which then goes dark (Ready=Unknown); virt-controller fails the VMI (NodeUnresponsive) and starts a new one, whose launcher pod lands on node-a: the VolumeAttachment stays attached for the NotReady node, which last reported the volume in use, and the attach-detach controller refuses the new attachment (FailedAttachVolume).",
		Play:        play((*Simulator).PlayVolumeAttachmentStale),
	},
	{
		Name:        "hotplug-attach-failed",
		Description: "A bound PVC is hot-plugged into the running VM on node-a; its attachment pod is created, but the external-attacher fails the attachment: the attach-detach controller records FailedAttachVolume on the attachment pod, which stays ContainerCreating, and the VMI's volumeStatus stays AttachedToNode without an attachment pod UID.",
		Play:        play((*Simulator).PlayHotplugAttachFailed),
	},
	{
		Name:        "hotplug-volume-stuck",
		Description: "A PVC whose provisioner nobody runs is hot-plugged into the running VM: the claim stays Pending (the PV binder waits for the external provisioner) and the VMI's volumeStatus says Pending, PVCNotReady, with no attachment pod.",
		Play:        play((*Simulator).PlayHotplugVolumeStuck),
	},
}

// Scenario makes the play a catalogue entry that should leave layer with
// verdict and reason, wait after its end.
func (p StoragePlay) Scenario(layer string, verdict v1alpha1.Verdict, reason string, wait time.Duration) Scenario {
	return Scenario{
		Name: p.Name, Description: p.Description, Layer: layer, Verdict: verdict, Reason: reason,
		Wait: wait, Storage: true, Play: p.Play,
	}
}

// play turns a method of the Simulator into a Play.
func play(f func(*Simulator, context.Context, string, string) error) func(context.Context, *Simulator, string, string) error {
	return func(ctx context.Context, s *Simulator, ns, vm string) error { return f(s, ctx, ns, vm) }
}

// StorageScenarioByName returns the storage play called name.
func StorageScenarioByName(name string) (StoragePlay, bool) {
	for _, p := range StorageScenarios {
		if p.Name == name {
			return p, true
		}
	}
	return StoragePlay{}, false
}

// RootClaim is the root disk's PVC of VM vm in the storage plays.
func RootClaim(vm string) string { return vm + "-rootdisk" }

// createStorageVM installs the CSI driver, creates claim (when not
// empty) and the VM on it.
func (s *Simulator) createStorageVM(ctx context.Context, ns string, spec VMSpec, claim *ClaimSpec) error {
	if err := s.EnsureNamespace(ctx, ns); err != nil {
		return err
	}
	if err := s.EnsureStorage(ctx); err != nil {
		return err
	}
	if claim != nil {
		claim.Namespace = ns
		if err := s.CreateClaim(ctx, *claim); err != nil {
			return err
		}
	}
	return s.createScenarioVM(ctx, ns, spec)
}

// preemptionNotHelpful is kube-scheduler's preemption verdict on a node
// where evicting pods would not let the pod fit.
const preemptionNotHelpful = "Preemption is not helpful for scheduling"

// unschedulable is kube-scheduler failing to place the VMI's launcher pod
// (created if needed): its message says why the filters failed (why is
// given the number of nodes) and the preemption verdict on each node. The
// condition is copied by virt-controller into the VMI (PodScheduled=False,
// Unschedulable) and shown by the VM as ErrorUnschedulable.
func (s *Simulator) unschedulable(ctx context.Context, ns, name string, why func(nodes int) string, preemption string) error {
	pod, err := s.ensurePendingLauncher(ctx, ns, name)
	if err != nil {
		return err
	}
	n := s.countNodes(ctx)
	msg := fmt.Sprintf("0/%d nodes are available: %s. preemption: 0/%d nodes are available: %d %s.", n, why(n), n, n, preemption)
	if err := s.markUnschedulable(ctx, ns, pod.Name, msg); err != nil {
		return err
	}
	return s.controllerSetsVMICond(ctx, ns, name, kubevirtv1.VirtualMachineInstanceCondition{
		Type: kubevirtv1.VirtualMachineInstanceConditionType(corev1.PodScheduled), Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: msg,
	})
}

// PlayVolumeNotBound: the root disk's claim asks for MissingStorageClass.
// The PV binder's Warning ProvisioningFailed ("storageclass.storage.k8s.io
// \"fast-nvme\" not found") is awaited; the launcher pod is Unschedulable
// with kube-scheduler's "pod has unbound immediate PersistentVolumeClaims".
func (s *Simulator) PlayVolumeNotBound(ctx context.Context, ns, vm string) error {
	claim := RootClaim(vm)
	if err := s.createStorageVM(ctx, ns, VMSpec{Name: vm, RootClaim: claim}, &ClaimSpec{Name: claim, StorageClass: MissingStorageClass}); err != nil {
		return err
	}
	if _, err := s.AwaitEvent(ctx, "PersistentVolumeClaim", ns, claim, "ProvisioningFailed"); err != nil {
		return err
	}
	return s.unschedulable(ctx, ns, vm, func(int) string { return "pod has unbound immediate PersistentVolumeClaims" }, preemptionNotHelpful)
}

// PlayVolumeNotBoundWFFC: the root disk's claim is of StorageClassWFFC and
// the VM selects nodes labelled storage.vmobs.io/nvme=true, which none is.
// The launcher pod is Unschedulable ("N node(s) didn't match Pod's node
// affinity/selector"); the PV binder's Normal WaitForPodScheduled
// ("waiting for pod virt-launcher-... to be scheduled") is awaited.
func (s *Simulator) PlayVolumeNotBoundWFFC(ctx context.Context, ns, vm string) error {
	claim := RootClaim(vm)
	spec := VMSpec{Name: vm, RootClaim: claim, NodeSelector: map[string]string{unmatchedNodeLabel: "true"}}
	if err := s.createStorageVM(ctx, ns, spec, &ClaimSpec{Name: claim, StorageClass: StorageClassWFFC}); err != nil {
		return err
	}
	if err := s.unschedulable(ctx, ns, vm, func(nodes int) string {
		return fmt.Sprintf("%d node(s) didn't match Pod's node affinity/selector", nodes)
	}, preemptionNotHelpful); err != nil {
		return err
	}
	_, err := s.AwaitEvent(ctx, "PersistentVolumeClaim", ns, claim, "WaitForPodScheduled")
	return err
}

// PlayImportFailed: a DataVolume VM whose claim binds (the PV binder and
// the external-provisioner), whose import is scheduled and starts, then
// fails ImportFailedRestarts times with ImportErrorMessage (FailImport).
func (s *Simulator) PlayImportFailed(ctx context.Context, ns, vm string) error {
	if err := s.createStorageVM(ctx, ns, VMSpec{Name: vm, DataVolume: true}, nil); err != nil {
		return err
	}
	dv := RootDataVolume(vm)
	if _, err := s.AwaitBound(ctx, ns, dv); err != nil {
		return err
	}
	return s.FailImport(ctx, ns, dv, ImportFailedRestarts, ImportErrorMessage)
}

// PlayAttachFailed: the root claim binds; the launcher pod is placed on
// node-a; the external-attacher answers the VolumeAttachment with
// AttachErrorMessage; the attach-detach controller's Warning
// FailedAttachVolume on the pod ("AttachVolume.Attach failed for volume
// \"pvc-...\" : rpc error: ...") is awaited.
func (s *Simulator) PlayAttachFailed(ctx context.Context, ns, vm string) error {
	claim := RootClaim(vm)
	if err := s.createStorageVM(ctx, ns, VMSpec{Name: vm, RootClaim: claim}, &ClaimSpec{Name: claim}); err != nil {
		return err
	}
	if _, err := s.AwaitBound(ctx, ns, claim); err != nil {
		return err
	}
	s.SetAttachError(ns, claim, AttachErrorMessage)
	node := ScenarioNodes[0]
	if err := s.PlaceLauncherPod(ctx, ns, vm, node); err != nil {
		return err
	}
	if _, err := s.AwaitAttachment(ctx, ns, claim, node); err != nil {
		return err
	}
	return s.awaitPodEvent(ctx, ns, vm, "FailedAttachVolume")
}

// awaitPodEvent waits for an event with reason on the VMI's newest
// launcher pod.
func (s *Simulator) awaitPodEvent(ctx context.Context, ns, vm, reason string) error {
	vmi, err := s.getVMI(ctx, ns, vm)
	if err != nil {
		return err
	}
	pod, err := s.boundLauncher(ctx, vmi)
	if err != nil {
		return err
	}
	_, err = s.AwaitEvent(ctx, "Pod", ns, pod.Name, reason)
	return err
}

// PlayMultiAttach: VM <vm>-peer boots on node-a with the ReadWriteOnce
// root claim of vm (BootWithVolumes: bound, attached, running); then vm's
// launcher pod is placed on node-b, and the attach-detach controller's
// Warning FailedAttachVolume on it is awaited.
func (s *Simulator) PlayMultiAttach(ctx context.Context, ns, vm string) error {
	claim, peer := RootClaim(vm), vm+"-peer"
	if err := s.createStorageVM(ctx, ns, VMSpec{Name: peer, RootClaim: claim}, &ClaimSpec{Name: claim}); err != nil {
		return err
	}
	if _, err := s.AwaitBound(ctx, ns, claim); err != nil {
		return err
	}
	if err := s.BootWithVolumes(ctx, ns, peer, ScenarioNodes[0]); err != nil {
		return err
	}
	if err := s.createScenarioVM(ctx, ns, VMSpec{Name: vm, RootClaim: claim}); err != nil {
		return err
	}
	if err := s.PlaceLauncherPod(ctx, ns, vm, ScenarioNodes[1]); err != nil {
		return err
	}
	return s.awaitPodEvent(ctx, ns, vm, "FailedAttachVolume")
}

// PlayMountFailed: the root claim binds, the launcher pod is placed on
// node-a, its VolumeAttachment is attached, and the kubelet fails the
// mount with MountErrorMessage (FailVolumeSetup: FailedMount).
func (s *Simulator) PlayMountFailed(ctx context.Context, ns, vm string) error {
	claim := RootClaim(vm)
	if err := s.createStorageVM(ctx, ns, VMSpec{Name: vm, RootClaim: claim}, &ClaimSpec{Name: claim}); err != nil {
		return err
	}
	if _, err := s.AwaitBound(ctx, ns, claim); err != nil {
		return err
	}
	node := ScenarioNodes[0]
	if err := s.PlaceLauncherPod(ctx, ns, vm, node); err != nil {
		return err
	}
	va, err := s.AwaitAttachment(ctx, ns, claim, node)
	if err != nil {
		return err
	}
	if !va.Status.Attached {
		return fmt.Errorf("mount-failed: VolumeAttachment %s is not attached", va.Name)
	}
	_, err = s.FailVolumeSetup(ctx, ns, vm, MountErrorMessage)
	return err
}

// PlayHotplugVolumeStuck: the VM boots on node-a (containerDisk); a claim
// <vm>-hotplug of StorageClassNoProvisioner is created and hot-plugged as
// volume "hotplug" (HotplugVolume: Pending, PVCNotReady); the PV binder's
// Normal ExternalProvisioning on the claim is awaited.
func (s *Simulator) PlayHotplugVolumeStuck(ctx context.Context, ns, vm string) error {
	if err := s.EnsureNamespace(ctx, ns); err != nil {
		return err
	}
	if err := s.EnsureStorage(ctx); err != nil {
		return err
	}
	if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, ScenarioNodes[0]); err != nil {
		return err
	}
	claim := vm + "-hotplug"
	if err := s.CreateClaim(ctx, ClaimSpec{Namespace: ns, Name: claim, StorageClass: StorageClassNoProvisioner}); err != nil {
		return err
	}
	if _, err := s.AwaitEvent(ctx, "PersistentVolumeClaim", ns, claim, "ExternalProvisioning"); err != nil {
		return err
	}
	return s.HotplugVolume(ctx, ns, vm, "hotplug", claim)
}

// PlayImportInProgress: a DataVolume VM whose claim binds and whose import
// runs at 42% (ImportProgress): the normal import, Progressing.
func (s *Simulator) PlayImportInProgress(ctx context.Context, ns, vm string) error {
	if err := s.createStorageVM(ctx, ns, VMSpec{Name: vm, DataVolume: true}, nil); err != nil {
		return err
	}
	dv := RootDataVolume(vm)
	if _, err := s.AwaitBound(ctx, ns, dv); err != nil {
		return err
	}
	return s.ImportProgress(ctx, ns, dv, 42)
}

// PlayPVCLost: the VM boots on node-a through its root claim
// (BootWithVolumes); then the claim's PV loses its finalizers and is
// deleted, as an administrator or a misbehaving driver does; the PV
// binder's Warning ClaimLost on the claim is awaited (the claim is Lost).
func (s *Simulator) PlayPVCLost(ctx context.Context, ns, vm string) error {
	claim := RootClaim(vm)
	if err := s.createStorageVM(ctx, ns, VMSpec{Name: vm, RootClaim: claim}, &ClaimSpec{Name: claim}); err != nil {
		return err
	}
	pvName, err := s.AwaitBound(ctx, ns, claim)
	if err != nil {
		return err
	}
	if err := s.BootWithVolumes(ctx, ns, vm, ScenarioNodes[0]); err != nil {
		return err
	}
	if err := s.DeleteVolume(ctx, pvName); err != nil {
		return err
	}
	_, err = s.AwaitEvent(ctx, "PersistentVolumeClaim", ns, claim, "ClaimLost")
	return err
}

// DeleteVolume deletes the PersistentVolume name at once, its finalizers
// (the external-provisioner's, kubernetes.io/pv-protection) removed first,
// as an administrator forcing it away does.
func (s *Simulator) DeleteVolume(ctx context.Context, name string) error {
	pv, err := mutate(ctx, s.Client, key("", name), func() *corev1.PersistentVolume { return &corev1.PersistentVolume{} }, false, managerUser,
		func(pv *corev1.PersistentVolume) error {
			pv.Finalizers = nil
			return nil
		})
	if err != nil {
		return err
	}
	if err := s.Client.Delete(ctx, pv, client.GracePeriodSeconds(0)); err != nil {
		return fmt.Errorf("deleting PV %s: %w", name, err)
	}
	return nil
}

// PlayVolumeAttachmentStale: the VM boots through its attached root claim
// on a node of its own (ScenarioNode), whose kubelet reports the volume in
// use (status.volumesInUse); the node goes dark (LoseNode), virt-controller
// gives up on it (NodeUnresponsive: the launcher pod force-deleted, the
// VMI Failed) and, the run strategy being Always, replaces the VMI, whose
// launcher pod kube-scheduler places on node-a. The attach-detach
// controller does not detach a volume the dark node last reported in use
// before its maxWaitForUnmountDuration (6 minutes) has passed
// (k8s:pkg/controller/volume/attachdetach/reconciler/reconciler.go), so the
// VolumeAttachment stays attached for the dark node and the new pod's
// attach is refused: its Warning FailedAttachVolume is awaited.
func (s *Simulator) PlayVolumeAttachmentStale(ctx context.Context, ns, vm string) error {
	claim, node := RootClaim(vm), ScenarioNode(ns, vm)
	if err := s.EnsureNamespace(ctx, ns); err != nil {
		return err
	}
	if err := s.EnsureStorage(ctx, node); err != nil {
		return err
	}
	if err := s.createStorageVM(ctx, ns, VMSpec{Name: vm, RootClaim: claim}, &ClaimSpec{Name: claim}); err != nil {
		return err
	}
	if err := s.BootWithVolumes(ctx, ns, vm, node); err != nil {
		return err
	}
	if err := s.reportVolumesInUse(ctx, ns, claim, node); err != nil {
		return err
	}
	if err := s.LoseNode(ctx, node); err != nil {
		return err
	}
	if err := s.NodeUnresponsive(ctx, ns, vm); err != nil {
		return err
	}
	// virt-controller's VM controller replaces the Failed VMI of a VM
	// whose run strategy is Always (kv:pkg/virt-controller/watch/vm/vm.go).
	if err := s.DeleteVMI(ctx, ns, vm); err != nil {
		return err
	}
	if err := s.createVMIFromVM(ctx, ns, vm); err != nil {
		return err
	}
	if err := s.PlaceLauncherPod(ctx, ns, vm, ScenarioNodes[0]); err != nil {
		return err
	}
	return s.awaitPodEvent(ctx, ns, vm, "FailedAttachVolume")
}

// reportVolumesInUse is the kubelet of node reporting the volume of claim
// ns/claim mounted (status.volumesInUse, the unique name
// "kubernetes.io/csi/<driver>^<volume handle>"), which tells the
// attach-detach controller not to detach it before the node says it is
// unmounted.
func (s *Simulator) reportVolumesInUse(ctx context.Context, ns, claim, node string) error {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := s.Client.Get(ctx, key(ns, claim), pvc); err != nil {
		return fmt.Errorf("reading PVC %s/%s: %w", ns, claim, err)
	}
	pv := &corev1.PersistentVolume{}
	if err := s.Client.Get(ctx, key("", pvc.Spec.VolumeName), pv); err != nil {
		return fmt.Errorf("reading the PV of %s/%s: %w", ns, claim, err)
	}
	if pv.Spec.CSI == nil {
		return fmt.Errorf("PV %s is not a CSI volume", pv.Name)
	}
	name := corev1.UniqueVolumeName("kubernetes.io/csi/" + pv.Spec.CSI.Driver + "^" + pv.Spec.CSI.VolumeHandle)
	_, err := s.updateNodeStatus(ctx, node, managerKubelet, func(n *corev1.Node) error {
		if !slices.Contains(n.Status.VolumesInUse, name) {
			n.Status.VolumesInUse = append(n.Status.VolumesInUse, name)
		}
		return nil
	})
	return err
}

// PlayHotplugAttachFailed: the VM boots on node-a (containerDisk); a claim
// <vm>-hotplug of StorageClassImmediate binds and is hot-plugged as volume
// "hotplug" with the external-attacher failing it (SetAttachError,
// AttachErrorMessage); the attach-detach controller's Warning
// FailedAttachVolume on the attachment pod is awaited.
func (s *Simulator) PlayHotplugAttachFailed(ctx context.Context, ns, vm string) error {
	if err := s.EnsureNamespace(ctx, ns); err != nil {
		return err
	}
	if err := s.EnsureStorage(ctx); err != nil {
		return err
	}
	if err := s.bootScenarioVM(ctx, ns, VMSpec{Name: vm, GuestAgent: true}, ScenarioNodes[0]); err != nil {
		return err
	}
	claim := vm + "-hotplug"
	if err := s.CreateClaim(ctx, ClaimSpec{Namespace: ns, Name: claim}); err != nil {
		return err
	}
	if _, err := s.AwaitBound(ctx, ns, claim); err != nil {
		return err
	}
	s.SetAttachError(ns, claim, AttachErrorMessage)
	if err := s.HotplugVolume(ctx, ns, vm, "hotplug", claim); err != nil {
		return err
	}
	if _, err := s.AwaitAttachment(ctx, ns, claim, ScenarioNodes[0]); err != nil {
		return err
	}
	hp, err := s.attachmentPod(ctx, ns, vm, "hotplug")
	if err != nil {
		return err
	}
	_, err = s.AwaitEvent(ctx, "Pod", ns, hp, "FailedAttachVolume")
	return err
}

// attachmentPod is the name of the attachment pod of the VMI's hotplug
// volume.
func (s *Simulator) attachmentPod(ctx context.Context, ns, vm, volume string) (string, error) {
	vmi, err := s.getVMI(ctx, ns, vm)
	if err != nil {
		return "", err
	}
	for _, st := range vmi.Status.VolumeStatus {
		if st.Name == volume && st.HotplugVolume != nil && st.HotplugVolume.AttachPodName != "" {
			return st.HotplugVolume.AttachPodName, nil
		}
	}
	return "", fmt.Errorf("volume %s of VMI %s/%s has no attachment pod", volume, ns, vm)
}
