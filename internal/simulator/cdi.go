package simulator

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CDI: the simulator plays CDI v1.64's DataVolume import controller the
// way it imports without volume populators: it creates the DataVolume's
// PVC (same name, owned by the DataVolume), and once the PV binder has
// bound it, runs the importer and writes the DataVolume's phase
// (ImportScheduled, ImportInProgress with a progress, Succeeded), its
// conditions Bound, Running and Ready, its restart count and events, as
// kubevirt/containerized-data-importer pkg/controller/datavolume and
// pkg/controller/import-controller.go do.

// Event sources of CDI's controllers (controller-runtime's recorders).
const (
	componentDataVolumeImport = "datavolume-import-controller"
	componentImport           = "import-controller"
)

// CDI's annotations on the PVC of a DataVolume (cdi:pkg/controller/common).
const (
	annImportEndpoint  = "cdi.kubevirt.io/storage.import.endpoint"
	annImportSource    = "cdi.kubevirt.io/storage.import.source"
	annContentType     = "cdi.kubevirt.io/storage.contentType"
	annPodPhase        = "cdi.kubevirt.io/storage.pod.phase"
	annPodRestarts     = "cdi.kubevirt.io/storage.pod.restarts"
	annRunning         = "cdi.kubevirt.io/storage.condition.running"
	annRunningReason   = "cdi.kubevirt.io/storage.condition.running.reason"
	annRunningMessage  = "cdi.kubevirt.io/storage.condition.running.message"
	annImportPod       = "cdi.kubevirt.io/storage.import.importPodName"
	annCreatedForDV    = "cdi.kubevirt.io/createdForDataVolume"
	annImportPodPrefix = "importer-"
)

// CDI's condition reasons (cdi:pkg/controller/datavolume/conditions.go,
// pkg/controller/util.go).
const (
	// cdiPodRunning is the Running condition's reason while the importer
	// runs (CDI's PodRunningReason).
	cdiPodRunning = "Pod is running"
	// cdiTransferRunning is Ready=False's reason while it runs.
	cdiTransferRunning = "TransferRunning"
	// ImportError is the Running=False reason of an importer whose
	// container ended with an error (the container's termination reason,
	// "Error"); KubeVirt shows the VM as DataVolumeError then.
	ImportError = "Error"
	// ErrImportFailed is the Warning event CDI's import controller records
	// on the PVC each time the importer's container fails.
	ErrImportFailed = "ErrImportFailed"
)

// DataVolumeImportURL is the image the DataVolumes of DataVolume VMs
// import.
const DataVolumeImportURL = "https://download.fedoraproject.org/pub/fedora/linux/releases/41/Cloud/x86_64/images/Fedora-Cloud-Base-Generic-41-1.4.x86_64.qcow2"

// RootDataVolume is the DataVolume (and PVC) of the root disk of a VM
// created with VMSpec.DataVolume.
func RootDataVolume(vm string) string { return vm + "-rootdisk" }

// dataVolumeTemplate is the VM's dataVolumeTemplates entry for the root
// disk of sp.
func dataVolumeTemplate(sp VMSpec) kubevirtv1.DataVolumeTemplateSpec {
	mode := corev1.ReadWriteOnce
	if sp.SharedDisk {
		mode = corev1.ReadWriteMany
	}
	return kubevirtv1.DataVolumeTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Name: RootDataVolume(sp.Name)},
		Spec: cdiv1.DataVolumeSpec{
			Source: &cdiv1.DataVolumeSource{HTTP: &cdiv1.DataVolumeSourceHTTP{URL: DataVolumeImportURL}},
			Storage: &cdiv1.StorageSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{mode},
				StorageClassName: ptr.To(cmpOr(sp.StorageClass, StorageClassImmediate)),
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: resource.MustParse(DefaultClaimSize),
				}},
			},
		},
	}
}

// CreateDataVolume is a user creating the DataVolume ns/name importing
// DataVolumeImportURL into a claim of class (empty is
// StorageClassImmediate), then CDI creating its PVC: the DataVolume is
// Pending, its PVC Pending. CDI's CRD must be installed.
func (s *Simulator) CreateDataVolume(ctx context.Context, ns, name, class string) error {
	t := dataVolumeTemplate(VMSpec{StorageClass: class})
	dv := &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: t.Spec}
	if err := s.Client.Create(ctx, dv, client.FieldOwner(managerUser)); err != nil {
		return fmt.Errorf("creating DataVolume %s/%s: %w", ns, name, err)
	}
	return s.cdiCreateClaim(ctx, ns, name)
}

// createDataVolumes is virt-controller creating the VM's DataVolumes from
// its dataVolumeTemplates (owned by the VM), then CDI creating each one's
// PVC: the DataVolume is Pending, its PVC Pending.
func (s *Simulator) createDataVolumes(ctx context.Context, vm *kubevirtv1.VirtualMachine) error {
	for _, t := range vm.Spec.DataVolumeTemplates {
		if err := s.Client.Create(ctx, vmDataVolume(vm, t), client.FieldOwner(managerVirtController)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating DataVolume %s/%s: %w", vm.Namespace, t.Name, err)
		}
		if err := s.cdiCreateClaim(ctx, vm.Namespace, t.Name); err != nil {
			return err
		}
	}
	return nil
}

// vmDataVolume is the DataVolume virt-controller creates from the VM's
// dataVolumeTemplates entry t: t's name, labels, annotations and spec,
// owned by the VM.
func vmDataVolume(vm *kubevirtv1.VirtualMachine, t kubevirtv1.DataVolumeTemplateSpec) *cdiv1.DataVolume {
	return &cdiv1.DataVolume{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: vm.Namespace, Name: t.Name, Labels: t.Labels, Annotations: t.Annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: kubevirtv1.SchemeGroupVersion.String(), Kind: "VirtualMachine", Name: vm.Name, UID: vm.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: *t.Spec.DeepCopy(),
	}
}

// cdiCreateClaim is CDI creating the DataVolume's PVC and reporting it
// Pending.
func (s *Simulator) cdiCreateClaim(ctx context.Context, ns, name string) error {
	dv := &cdiv1.DataVolume{}
	if err := s.Client.Get(ctx, key(ns, name), dv); err != nil {
		return fmt.Errorf("reading DataVolume %s/%s: %w", ns, name, err)
	}
	pvc, err := cdiClaim(dv)
	if err != nil {
		return err
	}
	if err := s.Client.Create(ctx, pvc, client.FieldOwner(managerCDI)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the PVC of DataVolume %s/%s: %w", ns, name, err)
	}
	return s.updateDataVolume(ctx, ns, name, func(dv *cdiv1.DataVolume) {
		now := s.now()
		dv.Status.Phase = cdiv1.Pending
		dv.Status.ClaimName = name
		dv.Status.Progress = "N/A"
		setDVCond(dv, cdiv1.DataVolumeBound, corev1.ConditionFalse, "Pending", fmt.Sprintf("PVC %s Pending", name), now)
		setDVCond(dv, cdiv1.DataVolumeReady, corev1.ConditionFalse, "", "", now)
		setDVCond(dv, cdiv1.DataVolumeRunning, corev1.ConditionFalse, "", "", now)
	})
}

// cdiClaim is the PVC CDI creates for the DataVolume dv, before any
// importer ran: dv's name, owned by it, of its spec.storage (the only form
// of claim the simulator plays).
func cdiClaim(dv *cdiv1.DataVolume) (*corev1.PersistentVolumeClaim, error) {
	st := dv.Spec.Storage
	if st == nil {
		return nil, fmt.Errorf("DataVolume %s/%s: only spec.storage is played", dv.Namespace, dv.Name)
	}
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: dv.Namespace, Name: dv.Name,
			Labels: map[string]string{"app": "containerized-data-importer", "app.kubernetes.io/component": "storage", "app.kubernetes.io/managed-by": "cdi-controller"},
			Annotations: map[string]string{
				annImportEndpoint: DataVolumeImportURL, annImportSource: "http", annContentType: "kubevirt",
				annPodRestarts: "0", annCreatedForDV: string(dv.UID),
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: cdiv1.SchemeGroupVersion.String(), Kind: "DataVolume", Name: dv.Name, UID: dv.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: st.AccessModes, StorageClassName: st.StorageClassName, Resources: st.Resources,
			VolumeMode: ptr.To(cmpOr(ptr.Deref(st.VolumeMode, ""), corev1.PersistentVolumeFilesystem)),
		},
	}, nil
}

// updateDataVolume writes the DataVolume's status as CDI does.
func (s *Simulator) updateDataVolume(ctx context.Context, ns, name string, fn func(*cdiv1.DataVolume)) error {
	_, err := mutate(ctx, s.Client, key(ns, name), func() *cdiv1.DataVolume { return &cdiv1.DataVolume{} }, true, managerCDI,
		func(dv *cdiv1.DataVolume) error {
			fn(dv)
			return nil
		})
	return err
}

// setDVCond is CDI's updateCondition: a changed status moves
// lastTransitionTime; a changed reason or message moves lastHeartbeatTime.
func setDVCond(dv *cdiv1.DataVolume, t cdiv1.DataVolumeConditionType, status corev1.ConditionStatus, reason, msg string, now metav1.Time) {
	for i := range dv.Status.Conditions {
		c := &dv.Status.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime, c.LastHeartbeatTime = now, now
		} else if c.Reason != reason || c.Message != msg {
			c.LastHeartbeatTime = now
		}
		c.Status, c.Reason, c.Message = status, reason, msg
		return
	}
	dv.Status.Conditions = append(dv.Status.Conditions, cdiv1.DataVolumeCondition{
		Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: now, LastHeartbeatTime: now,
	})
}

// importing is CDI seeing the DataVolume's PVC bound and its importer pod
// running: Bound=True (event Bound), phase ImportScheduled (event
// ImportScheduled), then ImportInProgress (event ImportInProgress) with
// Running=True and Ready=False TransferRunning. It requires the PVC bound.
func (s *Simulator) importing(ctx context.Context, ns, name string) (*cdiv1.DataVolume, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := s.Client.Get(ctx, key(ns, name), pvc); err != nil {
		return nil, fmt.Errorf("reading the PVC of DataVolume %s/%s: %w", ns, name, err)
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		return nil, fmt.Errorf("DataVolume %s/%s: its PVC is %s, not Bound (AwaitBound)", ns, name, pvc.Status.Phase)
	}
	dv := &cdiv1.DataVolume{}
	if err := s.Client.Get(ctx, key(ns, name), dv); err != nil {
		return nil, fmt.Errorf("reading DataVolume %s/%s: %w", ns, name, err)
	}
	if dv.Status.Phase == cdiv1.ImportInProgress {
		return dv, nil
	}
	ann := importerRunning()
	ann[annImportPod], ann[annPodPhase] = annImportPodPrefix+name, string(corev1.PodRunning)
	if _, err := s.cdiAnnotateClaim(ctx, ns, name, ann); err != nil {
		return nil, err
	}
	for _, step := range []struct {
		phase cdiv1.DataVolumePhase
		msg   string
	}{{cdiv1.ImportScheduled, "Import into %s scheduled"}, {cdiv1.ImportInProgress, "Import into %s in progress"}} {
		bound := false
		if err := s.updateDataVolume(ctx, ns, name, func(dv *cdiv1.DataVolume) {
			now := s.now()
			bound = dvCond(dv, cdiv1.DataVolumeBound) != corev1.ConditionTrue
			dv.Status.Phase = step.phase
			setDVCond(dv, cdiv1.DataVolumeBound, corev1.ConditionTrue, "Bound", fmt.Sprintf("PVC %s Bound", name), now)
			if step.phase == cdiv1.ImportInProgress {
				setDVCond(dv, cdiv1.DataVolumeRunning, corev1.ConditionTrue, cdiPodRunning, "", now)
				setDVCond(dv, cdiv1.DataVolumeReady, corev1.ConditionFalse, cdiTransferRunning, "", now)
			}
		}); err != nil {
			return nil, err
		}
		if bound {
			if err := s.recordEvent(ctx, dv, corev1.EventTypeNormal, "Bound", fmt.Sprintf("PVC %s Bound", name), componentDataVolumeImport, ""); err != nil {
				return nil, err
			}
		}
		if err := s.recordEvent(ctx, dv, corev1.EventTypeNormal, string(step.phase), fmt.Sprintf(step.msg, name), componentDataVolumeImport, ""); err != nil {
			return nil, err
		}
	}
	return dv, nil
}

// cdiAnnotateClaim is CDI's import controller writing ann on the PVC of the
// DataVolume ns/name, where it reports the importer pod.
func (s *Simulator) cdiAnnotateClaim(ctx context.Context, ns, name string, ann map[string]string) (*corev1.PersistentVolumeClaim, error) {
	return mutate(ctx, s.Client, key(ns, name), func() *corev1.PersistentVolumeClaim { return &corev1.PersistentVolumeClaim{} }, false, managerCDI,
		func(p *corev1.PersistentVolumeClaim) error {
			for k, v := range ann {
				setAnnotation(p, k, v)
			}
			return nil
		})
}

// importerRunning is what the claim's annotations say of an importer
// that runs.
func importerRunning() map[string]string {
	return map[string]string{annRunning: "true", annRunningReason: cdiPodRunning, annRunningMessage: ""}
}

// importerFailed is what they say of an importer whose container ended
// with message and was restarted, restarts times so far.
func importerFailed(restarts int32, message string) map[string]string {
	return map[string]string{
		annPodRestarts: strconv.Itoa(int(restarts)),
		annRunning:     "false", annRunningReason: ImportError, annRunningMessage: message,
	}
}

func dvCond(dv *cdiv1.DataVolume, t cdiv1.DataVolumeConditionType) corev1.ConditionStatus {
	for _, c := range dv.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// ImportProgress is CDI's importer at percent of the DataVolume ns/name's
// image: phase ImportInProgress (ImportScheduled first, with their
// events), status.progress as CDI formats it ("42.00%"). The DataVolume's
// PVC must be bound (AwaitBound).
func (s *Simulator) ImportProgress(ctx context.Context, ns, name string, percent float64) error {
	if _, err := s.importing(ctx, ns, name); err != nil {
		return err
	}
	return s.updateDataVolume(ctx, ns, name, func(dv *cdiv1.DataVolume) {
		dv.Status.Progress = cdiv1.DataVolumeProgress(fmt.Sprintf("%.2f%%", percent))
	})
}

// CompleteImport is the import succeeding: phase Succeeded, progress
// "100.0%", Ready=True, Running=False (Completed), the Normal event
// ImportSucceeded; then virt-controller starts the VM that owns the
// DataVolume (the VMI is created, Pending) once every DataVolume of its
// template has succeeded.
func (s *Simulator) CompleteImport(ctx context.Context, ns, name string) error {
	dv, err := s.importing(ctx, ns, name)
	if err != nil {
		return err
	}
	if err := s.updateDataVolume(ctx, ns, name, func(dv *cdiv1.DataVolume) {
		now := s.now()
		dv.Status.Phase = cdiv1.Succeeded
		dv.Status.Progress = "100.0%"
		setDVCond(dv, cdiv1.DataVolumeRunning, corev1.ConditionFalse, "Completed", "Import Complete", now)
		setDVCond(dv, cdiv1.DataVolumeReady, corev1.ConditionTrue, "", "", now)
	}); err != nil {
		return err
	}
	if err := s.recordEvent(ctx, dv, corev1.EventTypeNormal, "ImportSucceeded", "Successfully imported into PVC "+name, componentDataVolumeImport, ""); err != nil {
		return err
	}
	ref := metav1.GetControllerOf(dv)
	if ref == nil || ref.Kind != "VirtualMachine" {
		return nil
	}
	vm := &kubevirtv1.VirtualMachine{}
	if err := s.Client.Get(ctx, key(ns, ref.Name), vm); err != nil {
		return fmt.Errorf("reading VM %s/%s: %w", ns, ref.Name, err)
	}
	if st, _ := s.dataVolumesStatus(ctx, vm); st != "" {
		return s.syncVM(ctx, ns, vm.Name)
	}
	switch rs, _ := vm.RunStrategy(); rs {
	case kubevirtv1.RunStrategyAlways, kubevirtv1.RunStrategyRerunOnFailure, kubevirtv1.RunStrategyOnce:
		return s.createVMIFromVM(ctx, ns, vm.Name)
	}
	return s.syncVM(ctx, ns, vm.Name)
}

// FailImport is CDI's importer failing restarts times with message (its
// termination message, such as "Unable to process data: ... no such
// host"), as an unreachable or corrupt image does: the importer pod's
// container restarts, so CDI keeps the DataVolume in ImportInProgress
// with status.restartCount, Running=False reason Error with the message;
// it records the Warning event ErrImportFailed on the PVC (from
// import-controller) for each failure and a Warning event Error with the
// message on the DataVolume (from datavolume-import-controller); and
// virt-controller shows the VM as DataVolumeError. The DataVolume's PVC
// must be bound (AwaitBound).
func (s *Simulator) FailImport(ctx context.Context, ns, name string, restarts int32, message string) error {
	dv, err := s.importing(ctx, ns, name)
	if err != nil {
		return err
	}
	if restarts < 1 {
		return fmt.Errorf("FailImport: restarts %d, want at least 1", restarts)
	}
	pvc, err := s.cdiAnnotateClaim(ctx, ns, name, importerFailed(restarts, message))
	if err != nil {
		return err
	}
	for range restarts {
		if err := s.recordEvent(ctx, pvc, corev1.EventTypeWarning, ErrImportFailed, message, componentImport, ""); err != nil {
			return err
		}
	}
	if err := s.updateDataVolume(ctx, ns, name, func(dv *cdiv1.DataVolume) {
		dv.Status.Phase = cdiv1.ImportInProgress
		dv.Status.RestartCount = restarts
		setDVCond(dv, cdiv1.DataVolumeRunning, corev1.ConditionFalse, ImportError, message, s.now())
	}); err != nil {
		return err
	}
	if err := s.recordEvent(ctx, dv, corev1.EventTypeWarning, ImportError, message, componentDataVolumeImport, ""); err != nil {
		return err
	}
	return s.syncOwnerVM(ctx, dv)
}

// ScratchSpaceRequired is the importer's termination message when the
// image must be converted through scratch space
// (containerized-data-importer pkg/common ScratchSpaceRequired).
const ScratchSpaceRequired = "scratch space required and none found"

// RestartImporter is CDI's importer pod exiting once with message and
// being restarted, as an import that needs scratch space does: the
// importer exits with ScratchSpaceRequired, CDI creates the scratch claim
// and starts the importer again. Meanwhile the DataVolume's restartCount
// grows by one and Running is False, reason Error, with the message, and
// virt-controller shows the VM DataVolumeError for that while
// (kubevirt/containerized-data-importer#3762: "intended behavior"). The
// import must be in progress (ImportProgress).
func (s *Simulator) RestartImporter(ctx context.Context, ns, name, message string) error {
	var restarts int32
	if err := s.updateDataVolume(ctx, ns, name, func(dv *cdiv1.DataVolume) {
		dv.Status.RestartCount++
		restarts = dv.Status.RestartCount
		setDVCond(dv, cdiv1.DataVolumeRunning, corev1.ConditionFalse, ImportError, message, s.now())
	}); err != nil {
		return err
	}
	if _, err := s.cdiAnnotateClaim(ctx, ns, name, importerFailed(restarts, message)); err != nil {
		return err
	}
	return s.syncDataVolumeOwner(ctx, ns, name)
}

// ResumeImport is the restarted importer running again: Running=True
// (PodRunning), the restart count kept.
func (s *Simulator) ResumeImport(ctx context.Context, ns, name string) error {
	if err := s.updateDataVolume(ctx, ns, name, func(dv *cdiv1.DataVolume) {
		setDVCond(dv, cdiv1.DataVolumeRunning, corev1.ConditionTrue, cdiPodRunning, "", s.now())
	}); err != nil {
		return err
	}
	if _, err := s.cdiAnnotateClaim(ctx, ns, name, importerRunning()); err != nil {
		return err
	}
	return s.syncDataVolumeOwner(ctx, ns, name)
}

// syncDataVolumeOwner is syncOwnerVM for the DataVolume ns/name.
func (s *Simulator) syncDataVolumeOwner(ctx context.Context, ns, name string) error {
	dv := &cdiv1.DataVolume{}
	if err := s.Client.Get(ctx, key(ns, name), dv); err != nil {
		return fmt.Errorf("reading DataVolume %s/%s: %w", ns, name, err)
	}
	return s.syncOwnerVM(ctx, dv)
}

// syncOwnerVM is virt-controller syncing the VM that owns dv, if a VM does.
func (s *Simulator) syncOwnerVM(ctx context.Context, dv *cdiv1.DataVolume) error {
	if ref := metav1.GetControllerOf(dv); ref != nil && ref.Kind == "VirtualMachine" {
		return s.syncVM(ctx, dv.Namespace, ref.Name)
	}
	return nil
}

// dataVolumesStatus is what virt-controller shows for a VM whose
// DataVolumes are not all Succeeded (kv:pkg/virt-controller/watch/vm.go):
// DataVolumeError when one has failed or its importer ends with an error,
// else Provisioning; "" when they all succeeded or the VM has none.
func (s *Simulator) dataVolumesStatus(ctx context.Context, vm *kubevirtv1.VirtualMachine) (kubevirtv1.VirtualMachinePrintableStatus, error) {
	status := kubevirtv1.VirtualMachinePrintableStatus("")
	for _, t := range vm.Spec.DataVolumeTemplates {
		dv := &cdiv1.DataVolume{}
		if err := s.Client.Get(ctx, key(vm.Namespace, t.Name), dv); err != nil {
			if apierrors.IsNotFound(err) {
				status = kubevirtv1.VirtualMachineStatusProvisioning
				continue
			}
			return "", err
		}
		if dv.Status.Phase == cdiv1.Failed {
			return kubevirtv1.VirtualMachineStatusDataVolumeError, nil
		}
		for _, c := range dv.Status.Conditions {
			if c.Type == cdiv1.DataVolumeRunning && c.Status == corev1.ConditionFalse && (c.Reason == ImportError || c.Reason == "ImagePullFailed") {
				return kubevirtv1.VirtualMachineStatusDataVolumeError, nil
			}
		}
		if dv.Status.Phase != cdiv1.Succeeded {
			status = kubevirtv1.VirtualMachineStatusProvisioning
		}
	}
	return status, nil
}
