package cachestore

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/storagefacts"
)

// TestStorageObjects puts a VM's storage objects, as the API server hands
// them, into the storage stores (the StorageClass into an informer's
// indexer), and reads them back the way the reconciler does: the facts
// hold what the rules read, events of other objects and kinds stay out,
// and a claim, a DataVolume or an attachment maps to the VM.
func TestStorageObjects(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	newStore := func() toolscache.Indexer {
		return toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	}
	s := &Store{VMs: newStore(), VMIs: newStore(), Nodes: newStore(), Pods: newStore()}
	st := &StorageStores{Claims: newClaims(nil), Classes: newStore(), Attachments: newAttachments(nil), Events: newEvents(nil), DataVolumes: newDataVolumes(nil)}
	for _, ix := range []Index{s.VMs, s.VMIs} {
		if err := ix.AddIndexers(toolscache.Indexers{IndexVMClaim: vmClaimIndex}); err != nil {
			t.Fatal(err)
		}
	}
	put := func(into interface{ put(any) error }, o any) {
		t.Helper()
		if err := into.put(o); err != nil {
			t.Fatal(err)
		}
	}
	add := func(into Index, o any) {
		t.Helper()
		p, err := projection.Transform(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := into.(toolscache.Indexer).Add(p); err != nil {
			t.Fatal(err)
		}
	}
	vm := &kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "prod"},
		Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{Spec: kubevirtv1.VirtualMachineInstanceSpec{
			Volumes: []kubevirtv1.Volume{
				{Name: "rootdisk", VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: "vm1-root"}}},
				{Name: "data", VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
					PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "vm1-data"}}}},
				{Name: "cloudinit", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: "#cloud-config"}}},
			},
		}}},
	}
	add(s.VMs, vm)
	add(s.Nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}}})
	put(st.Claims, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "vm1-root", Namespace: "prod", Annotations: map[string]string{storagefacts.SelectedNodeAnnotation: "node-a", "other": "x"}},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("fast"), VolumeName: "pv-1", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	})
	put(st.Claims, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "vm1-data", Namespace: "prod", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("missing")},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	})
	add(st.Classes, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "csi.example.com",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)})
	put(st.Attachments, &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "csi-abc"},
		Spec:       storagev1.VolumeAttachmentSpec{NodeName: "node-b", Attacher: "csi.example.com", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")}},
		Status:     storagev1.VolumeAttachmentStatus{Attached: true},
	})
	dv := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "vm1-root", "namespace": "prod"},
		"status": map[string]any{"phase": "ImportInProgress", "progress": "12.00%", "restartCount": int64(1), "conditions": []any{
			map[string]any{"type": "Running", "status": "True", "reason": "Pod is running"},
			map[string]any{"type": "Other", "status": "True"},
		}},
	}}
	dv.SetGroupVersionKind(projection.DataVolumeGVK)
	put(st.DataVolumes, dv)
	event := func(name, typ, kind, obj, reason string, last time.Duration) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "prod"},
			Type:           typ,
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: obj, Namespace: "prod"},
			Reason:         reason, Message: reason + " happened", Source: corev1.EventSource{Component: "kubelet"},
			Count: 2, FirstTimestamp: metav1.NewTime(now.Add(-time.Hour)), LastTimestamp: metav1.NewTime(now.Add(-last)),
		}
	}
	for _, ev := range []*corev1.Event{
		event("e1", corev1.EventTypeWarning, "Pod", "virt-launcher-vm1-x", "FailedMount", time.Minute),
		event("e2", corev1.EventTypeWarning, "PersistentVolumeClaim", "vm1-data", "ProvisioningFailed", 2*time.Minute),
		event("e3", corev1.EventTypeWarning, "ConfigMap", "vm1-data", "Whatever", time.Minute),
		event("e4", corev1.EventTypeNormal, "PersistentVolumeClaim", "vm1-data", "WaitForFirstConsumer", time.Minute),
		event("e5", corev1.EventTypeWarning, "Pod", "virt-launcher-other-y", "FailedMount", time.Minute),
	} {
		if err := st.Events.put(ev); err != nil {
			t.Fatal(err)
		}
	}

	vols := storagefacts.VolumesOf(vm, nil)
	o, err := st.StorageObjects("prod", "vm1", []string{"virt-launcher-vm1-x"}, vols, s.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	f := storagefacts.Assemble(vols, o)
	if len(f.Volumes) != 2 || f.Volumes[0].Name != "data" || f.Volumes[1].Name != "rootdisk" {
		t.Fatalf("volumes %+v, want data and rootdisk", f.Volumes)
	}
	data, root := f.Volumes[0], f.Volumes[1]
	if data.PVC == nil || data.PVC.Phase != "Pending" || data.PVC.Class == nil || data.PVC.Class.Exists {
		t.Errorf("data's claim %+v: want Pending, its class missing", data.PVC)
	}
	if len(data.PVC.Events) != 1 || data.PVC.Events[0].Reason != "ProvisioningFailed" {
		t.Errorf("data's events %+v: want the Warning ProvisioningFailed only", data.PVC.Events)
	}
	if root.PVC == nil || root.PVC.SelectedNode != "node-a" || root.PVC.Class.BindingMode != "WaitForFirstConsumer" || !slices.Equal(root.PVC.AccessModes, []string{"ReadWriteOnce"}) {
		t.Errorf("rootdisk's claim %+v", root.PVC)
	}
	if len(root.Attachments) != 1 || !root.Attachments[0].NodeNotReady || root.Attachments[0].Node != "node-b" {
		t.Errorf("rootdisk's attachments %+v: want one on NotReady node-b", root.Attachments)
	}
	if root.DV == nil || root.DV.Phase != "ImportInProgress" || root.DV.Progress != "12.00%" || root.DV.RestartCount != 1 || len(root.DV.Conditions) != 1 {
		t.Errorf("rootdisk's DataVolume %+v", root.DV)
	}
	if len(f.Events) != 1 || f.Events[0].Name != "virt-launcher-vm1-x" || f.Events[0].Component != "kubelet" || f.Events[0].Count != 2 {
		t.Errorf("pod events %+v: want the launcher's FailedMount only", f.Events)
	}
	for _, claim := range []string{"vm1-root", "vm1-data"} {
		if keys, err := s.VMsOfClaim("prod", claim); err != nil || !slices.Equal(keys, []string{"prod/vm1"}) {
			t.Errorf("VMs of claim %s: %v (%v), want prod/vm1", claim, keys, err)
		}
	}
	if claims := st.ClaimsOfVolume("pv-1"); len(claims) != 1 || claims[0].Name != "vm1-root" {
		t.Errorf("claims of pv-1: %v", claims)
	}
	if claims := st.ClaimsOfClass("missing"); len(claims) != 1 || claims[0].Name != "vm1-data" {
		t.Errorf("claims of class missing: %v", claims)
	}

	// Without CDI, a DataVolume volume's DataVolume is not read.
	st.DataVolumes = nil
	o, err = st.StorageObjects("prod", "vm1", nil, vols, s.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	if f := storagefacts.Assemble(vols, o); f.DataVolumesRead || f.Volumes[1].DV != nil {
		t.Errorf("without CDI: %+v", f)
	}
}
