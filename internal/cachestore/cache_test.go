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
	// storage layer's claims, StorageClasses, VolumeAttachments and
	// DataVolumes: every kind the controller reads is cached as its
	// projection; NodeObservations (one per node) and VMIncidents whole,
	// without managed fields. Warning Events have no informer: they live
	// in their own store (Events).
	if len(seen) != 12 {
		t.Fatalf("%d kinds configured, want 12", len(seen))
	}
	if ev, ok := seen["*v1.Event"]; ok {
		t.Errorf("events have an informer (%+v): they belong in the Events store", ev)
	}
	for kind, bo := range seen {
		if bo.Transform == nil {
			t.Errorf("%s is cached without its projection", kind)
		}
	}
}

// Without CDI's CRD the cache must not name DataVolumes: controller-runtime
// maps every entry's kind when it builds the cache, and fails on one the
// API server does not serve.
func TestWithoutDataVolumes(t *testing.T) {
	opts := Options(nil, nil, nil)
	without := WithoutDataVolumes(opts)
	if len(without.ByObject) != len(opts.ByObject)-1 {
		t.Fatalf("%d entries without DataVolumes, %d with", len(without.ByObject), len(opts.ByObject))
	}
	for obj := range without.ByObject {
		if k := fmt.Sprintf("%T", obj); k == "*unstructured.Unstructured" {
			t.Errorf("%s left in", k)
		}
	}
}
