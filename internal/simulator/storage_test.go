package simulator

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/vmobs/vmobs/internal/scheme"
)

// The storage actors' decisions, on a fake client holding what the PV
// binder and the attach-detach controller would have written; their runs
// with the real kube-controller-manager are test/storage's.

func storageSim(t *testing.T, objs ...client.Object) *Simulator {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).
		WithStatusSubresource(&storagev1.VolumeAttachment{}, &cdiv1.DataVolume{}).Build()
	s := New(c, WithClock(func() time.Time { return t0 }))
	if err := s.InstallCSIDriver(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// pendingClaim is a Pending claim of class the PV binder has handed to
// CSIDriver, with the selected node when node is set.
func pendingClaim(name, class, node string) *corev1.PersistentVolumeClaim {
	c, _ := ClaimSpec{Namespace: "ns", Name: name, StorageClass: class}.claim()
	c.UID = types.UID("uid-0000-" + name)
	c.Status.Phase = corev1.ClaimPending
	c.Annotations = map[string]string{StorageProvisionerAnnotation: CSIDriver}
	if node != "" {
		c.Annotations[SelectedNodeAnnotation] = node
	}
	return c
}

func TestProvision(t *testing.T) {
	ctx := context.Background()
	other := pendingClaim("other", StorageClassNoProvisioner, "")
	other.Annotations[StorageProvisionerAnnotation] = orphanProvisioner
	s := storageSim(t,
		pendingClaim("now", StorageClassImmediate, ""),
		pendingClaim("waits", StorageClassWFFC, ""),
		pendingClaim("placed", StorageClassWFFC, "node-b"),
		other,
	)
	made, err := s.Provision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pvc-uid-0000-now", "pvc-uid-0000-placed"}
	if strings.Join(made, ",") != strings.Join(want, ",") {
		t.Fatalf("provisioned %v, want %v (none for a WaitForFirstConsumer claim without a node, none for another provisioner)", made, want)
	}
	pv := &corev1.PersistentVolume{}
	if err := s.Client.Get(ctx, key("", "pvc-uid-0000-placed"), pv); err != nil {
		t.Fatal(err)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.Name != "placed" || ref.UID != "uid-0000-placed" {
		t.Errorf("claimRef %+v, want the claim", ref)
	}
	terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
	if got := terms[0].MatchExpressions[0]; got.Key != TopologyKey || got.Values[0] != "node-b" {
		t.Errorf("node affinity %+v, want %s in [node-b]", got, TopologyKey)
	}
	if pv.Annotations[provisionedByAnnotation] != CSIDriver || pv.Spec.CSI.Driver != CSIDriver {
		t.Errorf("PV %s not CSIDriver's: %v %+v", pv.Name, pv.Annotations, pv.Spec.CSI)
	}
	again, err := s.Provision(ctx)
	if err != nil || len(again) != 0 {
		t.Errorf("a second pass made %v (%v), want nothing", again, err)
	}
	evs, err := s.Events(ctx, "PersistentVolumeClaim", "ns", "now")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Reason != "Provisioning" || evs[1].Reason != "ProvisioningSucceeded" {
		t.Errorf("events %v, want Provisioning then ProvisioningSucceeded", evs)
	}
}

func TestAttachVolumes(t *testing.T) {
	ctx := context.Background()
	pv := func(name, claim string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{
				ClaimRef:               &corev1.ObjectReference{Namespace: "ns", Name: claim},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: CSIDriver, VolumeHandle: "h-" + name}},
			},
		}
	}
	va := func(name, pv, attacher string) *storagev1.VolumeAttachment {
		return &storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: storagev1.VolumeAttachmentSpec{Attacher: attacher, NodeName: "node-a",
				Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)}},
		}
	}
	s := storageSim(t, pv("pv-ok", "ok"), pv("pv-bad", "bad"),
		va("csi-ok", "pv-ok", CSIDriver), va("csi-bad", "pv-bad", CSIDriver), va("csi-other", "pv-ok", "other.csi.example"))
	s.SetAttachError("ns", "bad", "rpc error: code = Internal desc = no")
	wrote, err := s.AttachVolumes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(wrote, ",") != "csi-bad,csi-ok" {
		t.Fatalf("wrote %v, want csi-bad,csi-ok (not another driver's)", wrote)
	}
	get := func(name string) storagev1.VolumeAttachment {
		v := storagev1.VolumeAttachment{}
		if err := s.Client.Get(ctx, key("", name), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if ok := get("csi-ok"); !ok.Status.Attached || ok.Status.AttachError != nil || len(ok.Finalizers) != 1 || ok.Finalizers[0] != "external-attacher/csi-simulator-vmobs-io" {
		t.Errorf("csi-ok: %+v %v, want attached with the attacher's finalizer", ok.Status, ok.Finalizers)
	}
	if bad := get("csi-bad"); bad.Status.Attached || bad.Status.AttachError == nil || bad.Status.AttachError.Message != "rpc error: code = Internal desc = no" || !bad.Status.AttachError.Time.Time.Equal(t0) {
		t.Errorf("csi-bad: %+v, want the attach error at t0", bad.Status)
	}
	if wrote, _ := s.AttachVolumes(ctx); len(wrote) != 0 {
		t.Errorf("a second pass wrote %v, want nothing", wrote)
	}
	s.SetAttachError("ns", "bad", "")
	if wrote, _ := s.AttachVolumes(ctx); len(wrote) != 1 || !get("csi-bad").Status.Attached {
		t.Errorf("after the error is lifted: wrote %v, csi-bad %+v", wrote, get("csi-bad").Status)
	}
}

func TestDataVolumesStatus(t *testing.T) {
	dv := func(name string, phase cdiv1.DataVolumePhase, running ...cdiv1.DataVolumeCondition) *cdiv1.DataVolume {
		return &cdiv1.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Status: cdiv1.DataVolumeStatus{Phase: phase, Conditions: running}}
	}
	failing := cdiv1.DataVolumeCondition{Type: cdiv1.DataVolumeRunning, Status: corev1.ConditionFalse, Reason: ImportError}
	for _, tc := range []struct {
		name string
		dvs  []client.Object
		want kubevirtv1.VirtualMachinePrintableStatus
	}{
		{"all succeeded", []client.Object{dv("a", cdiv1.Succeeded), dv("b", cdiv1.Succeeded)}, ""},
		{"one importing", []client.Object{dv("a", cdiv1.Succeeded), dv("b", cdiv1.ImportInProgress)}, kubevirtv1.VirtualMachineStatusProvisioning},
		{"one not created yet", []client.Object{dv("a", cdiv1.Succeeded)}, kubevirtv1.VirtualMachineStatusProvisioning},
		{"importer failing", []client.Object{dv("a", cdiv1.ImportInProgress, failing), dv("b", cdiv1.Succeeded)}, kubevirtv1.VirtualMachineStatusDataVolumeError},
		{"failed", []client.Object{dv("a", cdiv1.Succeeded), dv("b", cdiv1.Failed)}, kubevirtv1.VirtualMachineStatusDataVolumeError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := storageSim(t, tc.dvs...)
			vm := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm"}, Spec: kubevirtv1.VirtualMachineSpec{
				DataVolumeTemplates: []kubevirtv1.DataVolumeTemplateSpec{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}},
			}}
			got, err := s.dataVolumesStatus(context.Background(), vm)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}
