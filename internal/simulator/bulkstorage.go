package simulator

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Bulk storage: CreateRunningVMs writes a DataVolume VM's storage where the
// step-by-step plays leave it once the import succeeded and the launcher
// pod runs (CreateVM, AwaitBound, CompleteImport, Boot, AttachVolumes),
// each write by the component that makes it in a real cluster, but without
// waiting for kube-controller-manager: the PV binder's and the
// attach-detach controller's writes are made here, as they make them.

// Annotations the PV binder writes on the claims and volumes it binds
// (k8s:pkg/controller/volume/persistentvolume/pv_controller.go).
const (
	annBindCompleted     = "pv.kubernetes.io/bind-completed"
	annBoundByController = "pv.kubernetes.io/bound-by-controller"
	annBetaProvisioner   = "volume.beta.kubernetes.io/storage-provisioner"
)

// kcmBinder and kcmAttachDetach are kube-controller-manager's field
// manager and its two controllers' event sources.
const (
	kcmBinder       = "persistentvolume-controller"
	kcmAttachDetach = "attachdetach-controller"
)

// bulkDataVolume writes the DataVolume of vm's root disk imported, its
// claim bound to a PersistentVolume of CSIDriver and that volume attached
// to node: virt-controller creates the DataVolume, CDI its claim, the
// external provisioner the PV, the PV binder binds them, CDI reports the
// import Succeeded, the attach-detach controller creates the
// VolumeAttachment and the external attacher marks it attached; it returns
// the claim and the DataVolume as written. The VM's
// dataVolumeTemplates name the DataVolume; its StorageClass must exist
// (InstallCSIDriver).
func (s *Simulator) bulkDataVolume(ctx context.Context, vm *kubevirtv1.VirtualMachine, node string) (*corev1.PersistentVolumeClaim, *cdiv1.DataVolume, error) {
	if len(vm.Spec.DataVolumeTemplates) == 0 {
		return nil, nil, nil
	}
	t := vm.Spec.DataVolumeTemplates[0]
	ns, name := vm.Namespace, t.Name
	now := s.now()
	dv := vmDataVolume(vm, t)
	if err := s.Client.Create(ctx, dv, client.FieldOwner(managerVirtController)); err != nil {
		return nil, nil, fmt.Errorf("creating DataVolume %s/%s: %w", ns, name, err)
	}
	pvc, err := cdiClaim(dv)
	if err != nil {
		return nil, nil, err
	}
	class := ptr.Deref(pvc.Spec.StorageClassName, StorageClassImmediate)
	pvc.Spec.StorageClassName = ptr.To(class)
	// The claim as CDI leaves it once its importer, restarted twice, has
	// completed.
	maps.Copy(pvc.Annotations, map[string]string{
		annPodRestarts: "2", annImportPod: annImportPodPrefix + name, annPodPhase: string(corev1.PodSucceeded),
		annRunning: "false", annRunningReason: "Completed", annRunningMessage: "Import Complete",
	})
	if err := s.Client.Create(ctx, pvc, client.FieldOwner(managerCDI)); err != nil {
		return nil, nil, fmt.Errorf("creating the PVC of DataVolume %s/%s: %w", ns, name, err)
	}

	// The external provisioner's PV, then the PV binder's binding of both.
	pvName := "pvc-" + string(pvc.UID)
	pv := provisionedPV(pvName, pvc, class, corev1.PersistentVolumeReclaimDelete, s.provisionerIdentity(), "")
	if err := s.Client.Create(ctx, pv, client.FieldOwner(managerProvisioner)); err != nil {
		return nil, nil, fmt.Errorf("creating PV %s: %w", pvName, err)
	}
	pv.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound, LastPhaseTransitionTime: ptr.To(now)}
	if err := s.Client.Status().Update(ctx, pv, client.FieldOwner(managerNodeLifecycle)); err != nil {
		return nil, nil, fmt.Errorf("binding PV %s: %w", pvName, err)
	}
	pvc.Spec.VolumeName = pvName
	setAnnotation(pvc, annBindCompleted, "yes")
	setAnnotation(pvc, annBoundByController, "yes")
	setAnnotation(pvc, StorageProvisionerAnnotation, CSIDriver)
	setAnnotation(pvc, annBetaProvisioner, CSIDriver)
	if err := s.Client.Update(ctx, pvc, client.FieldOwner(managerNodeLifecycle)); err != nil {
		return nil, nil, fmt.Errorf("binding PVC %s/%s: %w", ns, name, err)
	}
	pvc.Status = corev1.PersistentVolumeClaimStatus{
		Phase: corev1.ClaimBound, AccessModes: pvc.Spec.AccessModes,
		Capacity: corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
	}
	if err := s.Client.Status().Update(ctx, pvc, client.FieldOwner(managerNodeLifecycle)); err != nil {
		return nil, nil, fmt.Errorf("binding PVC %s/%s: %w", ns, name, err)
	}

	// CDI: the import ran (its importer restarted twice) and succeeded.
	dv.Status = cdiv1.DataVolumeStatus{Phase: cdiv1.Succeeded, ClaimName: name, Progress: "100.0%", RestartCount: 2}
	setDVCond(dv, cdiv1.DataVolumeBound, corev1.ConditionTrue, "Bound", "PVC "+name+" Bound", now)
	setDVCond(dv, cdiv1.DataVolumeRunning, corev1.ConditionFalse, "Completed", "Import Complete", now)
	setDVCond(dv, cdiv1.DataVolumeReady, corev1.ConditionTrue, "", "", now)
	if err := s.Client.Status().Update(ctx, dv, client.FieldOwner(managerCDI)); err != nil {
		return nil, nil, fmt.Errorf("completing DataVolume %s/%s: %w", ns, name, err)
	}

	// The attach-detach controller's VolumeAttachment for the launcher's
	// node, named as it names them
	// (k8s:pkg/volume/csi/csi_attacher.go getAttachmentName), attached by
	// the external attacher.
	handle := pv.Spec.CSI.VolumeHandle
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+CSIDriver+node)))},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: CSIDriver, NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pvName)},
		},
	}
	if err := s.Client.Create(ctx, va, client.FieldOwner(managerNodeLifecycle)); err != nil {
		return nil, nil, fmt.Errorf("creating the VolumeAttachment of %s on %s: %w", pvName, node, err)
	}
	addFinalizer(va, attacherFinalizer)
	if err := s.Client.Update(ctx, va, client.FieldOwner(managerAttacher)); err != nil {
		return nil, nil, fmt.Errorf("attaching %s: %w", va.Name, err)
	}
	va.Status = storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"devicePath": "/dev/disk/by-id/virtio-" + handle}}
	if err := s.Client.Status().Update(ctx, va, client.FieldOwner(managerAttacher)); err != nil {
		return nil, nil, fmt.Errorf("attaching %s: %w", va.Name, err)
	}
	return pvc, dv, nil
}

// BootWarnings is the number of Warning Events bootWarnings records.
const BootWarnings = 10

// bootWarnings records the Warning Events a DataVolume VM's first start
// typically leaves behind on a busy cluster, all before its launcher pod
// turned Ready at readyAt, so that none explains anything now: on the
// claim the external provisioner's retried provisioning and CDI's failed
// first import, on the DataVolume CDI's error of that import, on the
// launcher pod the scheduler's wait for the claim, the attach-detach
// controller's and the kubelet's retries of the attach and the mount and a
// failed readiness probe, on the VMI virt-handler's and virt-controller's
// retries. The messages are the components' own (their lengths are those
// of real ones: 80 to 250 bytes); counts and times vary by VM.
func (s *Simulator) bootWarnings(ctx context.Context, vmi *kubevirtv1.VirtualMachineInstance, pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim, dv *cdiv1.DataVolume, readyAt time.Time) error {
	pv := pvc.Spec.VolumeName
	ns := vmi.Namespace
	ref := func(kind, apiVersion string, o metav1.Object) corev1.ObjectReference {
		return corev1.ObjectReference{Kind: kind, APIVersion: apiVersion, Namespace: ns, Name: o.GetName(), UID: o.GetUID(), ResourceVersion: o.GetResourceVersion()}
	}
	claim := ref("PersistentVolumeClaim", "v1", pvc)
	dataVolume := ref("DataVolume", cdiv1.SchemeGroupVersion.String(), dv)
	launcher := ref("Pod", "v1", pod)
	launcher.FieldPath = ""
	inst := ref("VirtualMachineInstance", kubevirtv1.SchemeGroupVersion.String(), vmi)
	node := pod.Spec.NodeName
	provisioner := s.provisionerIdentity()
	evs := []struct {
		obj              corev1.ObjectReference
		reason, msg      string
		component, host  string
		count, ago, span int // seconds before readyAt: last seen, and first seen before last
	}{
		{claim, "ProvisioningFailed", fmt.Sprintf("failed to provision volume with StorageClass %q: rpc error: code = ResourceExhausted desc = the storage backend is busy provisioning other volumes, retry later", ptr.Deref(pvc.Spec.StorageClassName, "")),
			provisioner, "", 2, 170, 12},
		{claim, ErrImportFailed, "Unable to process data: Unable to transfer source data to scratch space: Unable to get source data: HTTP request errored: Get \"" + DataVolumeImportURL + "\": dial tcp: lookup download.fedoraproject.org: i/o timeout",
			componentImport, "", 1, 120, 0},
		{dataVolume, ImportError, "Unable to connect to http data source: Get \"" + DataVolumeImportURL + "\": dial tcp: lookup download.fedoraproject.org: i/o timeout",
			componentDataVolumeImport, "", 1, 120, 0},
		{dataVolume, ImportError, "Unable to process data: Unable to transfer source data to target file: unable to stream data: unexpected EOF",
			componentDataVolumeImport, "", 1, 90, 0},
		{launcher, "FailedScheduling", "0/102 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/102 nodes are available: 102 Preemption is not helpful for scheduling.",
			"default-scheduler", "", 3, 60, 20},
		{launcher, "FailedAttachVolume", "AttachVolume.Attach failed for volume \"" + pv + "\" : rpc error: code = DeadlineExceeded desc = context deadline exceeded",
			kcmAttachDetach, "", 2, 40, 15},
		{launcher, "FailedMount", "MountVolume.MountDevice failed for volume \"" + pv + "\" : rpc error: code = Aborted desc = an operation with the given Volume ID vol-" + string(pvc.UID) + " already exists",
			componentKubelet, node, 3, 25, 10},
		{launcher, "Unhealthy", "Readiness probe failed: cat: /var/run/kubevirt-private/" + string(vmi.UID) + "/virt-serial0: No such file or directory",
			componentKubelet, node, 4, 5, 8},
		{inst, "SyncFailed", "server error. command SyncVMI failed: \"LibvirtError(Code=1, Domain=10, Message='internal error: Failed to connect socket to '/var/run/libvirt/virtqemud-sock': Connection refused')\"",
			managerVirtHandler, node, 1, 10, 0},
		{inst, "FailedCreate", "Error creating pod: Internal error occurred: failed calling webhook \"virt-launcher-eviction-interceptor.kubevirt.io\": context deadline exceeded",
			managerVirtController, "", 1, 75, 0},
	}
	for _, e := range evs {
		last := metav1.NewTime(readyAt.Add(-time.Duration(e.ago) * time.Second))
		first := metav1.NewTime(last.Add(-time.Duration(e.span) * time.Second))
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: e.obj.Name + "." + s.hex(8)},
			InvolvedObject: e.obj,
			Reason:         e.reason, Message: e.msg, Type: corev1.EventTypeWarning, Count: int32(e.count),
			FirstTimestamp: first, LastTimestamp: last,
			Source:              corev1.EventSource{Component: e.component, Host: e.host},
			ReportingController: e.component, ReportingInstance: e.host,
		}
		if err := s.createEvent(ctx, ev); err != nil {
			return fmt.Errorf("recording event %s on %s %s/%s: %w", e.reason, e.obj.Kind, ns, e.obj.Name, err)
		}
	}
	return nil
}
