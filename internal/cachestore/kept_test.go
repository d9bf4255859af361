package cachestore

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/storagefacts"
)

// TestKeptAttachments keeps the VolumeAttachments of a PersistentVolume
// under it, by name: a second one (a migration's target) joins the first,
// a repeat changes nothing and wakes no one, a deletion takes one out and
// the last one's the key, and an inline volume's attachment (no PV) is not
// kept.
func TestKeptAttachments(t *testing.T) {
	s := newAttachments(nil)
	var woken []string
	s.notify = func(pvs []string) { woken = append(woken, pvs...) }
	va := func(name, pv, node string, attached bool) *storagev1.VolumeAttachment {
		a := &storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
			Spec:       storagev1.VolumeAttachmentSpec{NodeName: node, Attacher: "csi.example.com"},
			Status:     storagev1.VolumeAttachmentStatus{Attached: attached},
		}
		if pv != "" {
			a.Spec.Source.PersistentVolumeName = ptr.To(pv)
		}
		return a
	}
	step := func(what string, do func(any) error, o any, wantNames []string, wantWoken bool) {
		t.Helper()
		woken = nil
		if err := do(o); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		as, _ := s.Get("pv-1")
		var names []string
		for _, a := range as {
			names = append(names, a.Name+"@"+a.Node)
		}
		if !slices.Equal(names, wantNames) || (len(woken) > 0) != wantWoken {
			t.Errorf("%s: pv-1 has %v (woke %v), want %v (woken: %v)", what, names, woken, wantNames, wantWoken)
		}
	}
	step("attach", s.put, va("csi-b", "pv-1", "node-b", false), []string{"csi-b@node-b"}, true)
	step("a migration's target", s.put, va("csi-a", "pv-1", "node-a", false), []string{"csi-a@node-a", "csi-b@node-b"}, true)
	again := va("csi-b", "pv-1", "node-b", false)
	again.ResourceVersion = "2"
	step("a resync", s.put, again, []string{"csi-a@node-a", "csi-b@node-b"}, false)
	step("attached", s.put, va("csi-b", "pv-1", "node-b", true), []string{"csi-a@node-a", "csi-b@node-b"}, true)
	step("the source detached", s.remove, toolscache.DeletedFinalStateUnknown{Key: "csi-b", Obj: va("csi-b", "pv-1", "node-b", true)}, []string{"csi-a@node-a"}, true)
	step("an inline volume's", s.put, va("csi-inline", "", "node-a", true), []string{"csi-a@node-a"}, false)
	step("the last detached", s.remove, va("csi-a", "pv-1", "node-a", false), nil, true)
	if n := s.Keys(); n != 0 {
		t.Errorf("%d volumes kept after every attachment went, want 0", n)
	}
	if err := s.put(&corev1.Pod{}); err == nil {
		t.Error("a pod was kept as an attachment")
	}
}

// TestKeptClaims keeps a claim's facts under its namespace/name, in place
// of the projection an informer would keep; a relist of a namespace's
// feed replaces that namespace's claims only and wakes the changed ones.
func TestKeptClaims(t *testing.T) {
	s := newClaims(map[string]toolscache.ListerWatcher{"a": nil, "b": nil})
	var woken []types.NamespacedName
	s.notify = func(ks []types.NamespacedName) { woken = append(woken, ks...) }
	feed := map[string]*keptFeed[types.NamespacedName, *projection.ClaimFacts, *projection.ClaimFacts]{}
	for _, f := range s.feeds {
		feed[f.namespace] = f
	}
	claim := func(ns, name string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("fast"), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}},
			Status:     corev1.PersistentVolumeClaimStatus{Phase: phase},
		}
	}
	streamed, err := projection.Transform(claim("a", "c2", corev1.ClaimPending))
	if err != nil {
		t.Fatal(err)
	}
	if err := feed["a"].Replace([]any{claim("a", "c1", corev1.ClaimBound), streamed}, "1"); err != nil {
		t.Fatal(err)
	}
	if err := feed["b"].Replace([]any{claim("b", "c1", corev1.ClaimBound)}, "1"); err != nil {
		t.Fatal(err)
	}
	if !s.HasSynced() || len(woken) != 0 {
		t.Fatalf("after the first lists: synced %v, woke %v; want synced, none woken", s.HasSynced(), woken)
	}
	c, ok := s.Get(types.NamespacedName{Namespace: "a", Name: "c2"})
	if f := c.PVC("c2"); !ok || f.Name != "c2" || f.Phase != "Pending" || f.StorageClassName != "fast" || !slices.Equal(f.AccessModes, []string{"ReadWriteMany"}) {
		t.Errorf("a/c2 kept as %+v (%v)", f, ok)
	}
	// a/c2 bound, a/c1 gone, b untouched.
	if err := feed["a"].Replace([]any{claim("a", "c2", corev1.ClaimBound)}, "2"); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(woken, func(x, y types.NamespacedName) int { return strings.Compare(x.String(), y.String()) })
	if want := []types.NamespacedName{{Namespace: "a", Name: "c1"}, {Namespace: "a", Name: "c2"}}; !slices.Equal(woken, want) {
		t.Errorf("the relist woke %v, want %v", woken, want)
	}
	if _, ok := s.Get(types.NamespacedName{Namespace: "b", Name: "c1"}); !ok || s.Keys() != 2 {
		t.Errorf("after a's relist: %d claims, b/c1 kept %v; want 2, kept", s.Keys(), ok)
	}
}

// BenchmarkClaimsOfVolume scans 5,000 claims for the one bound to a
// PersistentVolume, as an attachment's change maps to its VMs.
func BenchmarkClaimsOfVolume(b *testing.B) {
	st := &StorageStores{Claims: newClaims(nil)}
	for i := range 5000 {
		c := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("vm-%d-root", i), Namespace: fmt.Sprintf("ns-%d", i/100)},
			Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("fast"), VolumeName: fmt.Sprintf("pvc-%08d", i)},
			Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
		}
		if err := st.Claims.put(c); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if got := st.ClaimsOfVolume("pvc-00002500"); len(got) != 1 {
			b.Fatalf("%d claims of the volume", len(got))
		}
	}
}

// TestKeptSucceededDataVolumes: every Succeeded DataVolume shares one
// value, its name the key's, and reads back whole; one on its way keeps
// its own.
func TestKeptSucceededDataVolumes(t *testing.T) {
	st := &StorageStores{DataVolumes: newDataVolumes(nil), Claims: newClaims(nil), Attachments: newAttachments(nil), Events: newEvents(nil)}
	dv := func(name, phase string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": name, "namespace": "ns"},
			"status":   map[string]any{"phase": phase, "progress": "100.0%"},
		}}
		u.SetGroupVersionKind(projection.DataVolumeGVK)
		return u
	}
	for _, d := range []*unstructured.Unstructured{dv("a", storagefacts.DataVolumeSucceeded), dv("b", storagefacts.DataVolumeSucceeded), dv("c", "ImportInProgress")} {
		if err := st.DataVolumes.put(d); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := st.DataVolumes.Get(types.NamespacedName{Namespace: "ns", Name: "a"})
	b, _ := st.DataVolumes.Get(types.NamespacedName{Namespace: "ns", Name: "b"})
	c, _ := st.DataVolumes.Get(types.NamespacedName{Namespace: "ns", Name: "c"})
	if a != succeededDataVolume || b != succeededDataVolume || c == succeededDataVolume || c.Progress != "100.0%" {
		t.Errorf("kept %+v, %+v, %+v: want the Succeeded ones shared, the other its own", a, b, c)
	}
	vols := []storagefacts.VolumeRef{{Name: "root", ClaimName: "a", DataVolume: "a"}}
	o, err := st.StorageObjects("ns", "vm", nil, vols, toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := o.DataVolumes["a"]; got.Name != "a" || got.Phase != storagefacts.DataVolumeSucceeded {
		t.Errorf("read back %+v, want a, Succeeded", got)
	}
}
