package cachestore

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// The selector filters VMs and VMObservations; VMIs, launcher pods, nodes
// and migrations are cached whole, because a VMI's labels do not follow
// its VM's (controllers/shard.go).
func TestCacheSelectorOnVMsAndObservationsOnly(t *testing.T) {
	sel, _ := labels.Parse("observability.vmobs.io/shard=a")
	for obj, bo := range Options(nil, sel, nil).ByObject {
		kind := fmt.Sprintf("%T", obj)
		got := ""
		if bo.Label != nil {
			got = bo.Label.String()
		}
		want := ""
		switch kind {
		case "*v1.VirtualMachine", "*v1alpha1.VMObservation":
			want = sel.String()
		case "*v1.Pod":
			want = PodLabel
		}
		if got != want {
			t.Errorf("%s: cache selector %q, want %q", kind, got, want)
		}
	}
}

// One ByObject entry per kind: two would make controller-runtime keep one at
// random, losing the launcher-pod selector or the transform.
func TestCacheOptionsOneEntryPerKind(t *testing.T) {
	sel, _ := labels.Parse("team=db")
	opts := Options([]string{"a"}, sel, nil)
	seen := map[string]cache.ByObject{}
	for obj, bo := range opts.ByObject {
		kind := fmt.Sprintf("%T", obj)
		if _, dup := seen[kind]; dup {
			t.Fatalf("%s has two ByObject entries", kind)
		}
		seen[kind] = bo
	}
	if pod := seen["*v1.Pod"]; pod.Label == nil || pod.Label.String() != PodLabel {
		t.Fatalf("pod selector %v, want %s", pod.Label, PodLabel)
	}
	// Pods, nodes, VMIs, VMs, migrations and VMObservations, and the
	// storage layer's StorageClasses: every kind the controller reads is
	// cached as its projection; NodeObservations (one per node) and
	// VMIncidents whole, without managed fields. Claims,
	// VolumeAttachments, DataVolumes and Warning Events have no informer:
	// they live in stores of their own (StorageStores), and without CDI's
	// CRD the cache names no DataVolume (controller-runtime maps every
	// entry's kind when it builds the cache, and fails on one the API
	// server does not serve).
	if len(seen) != 9 {
		t.Fatalf("%d kinds configured, want 9", len(seen))
	}
	for _, k := range []string{"*v1.Event", "*v1.PersistentVolumeClaim", "*v1.VolumeAttachment", "*unstructured.Unstructured"} {
		if bo, ok := seen[k]; ok {
			t.Errorf("%s has an informer (%+v): it belongs in the storage stores", k, bo)
		}
	}
	for kind, bo := range seen {
		if bo.Transform == nil {
			t.Errorf("%s is cached without its projection", kind)
		}
	}
}
