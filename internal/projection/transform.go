// Package projection holds the compact forms in which the vmobs manager
// caches KubeVirt's objects and its own VMObservations: for each kind only
// what the verdict engine, the write decision, the indexes and the watch
// predicates read, with repeated strings interned and slices of exact
// capacity. The informers' transform (Transform) turns each decoded object
// into its projection, so the informer stores hold projections; the
// controller rebuilds the typed objects the engine reads from them (To*),
// for one reconcile at a time.
//
// Every projection implements client.Object, so controller-runtime's event
// plumbing carries it; controller-runtime's cache reader cannot return one
// as a typed object, so the controller reads the informers' stores
// directly.
//
// The engine's table tests run every case through Transform and the To*
// functions and require the same status, so a projection that drops a
// field the engine reads fails there, not in a cluster.
package projection

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// Transform is the informers' transform for every kind vmobs caches: it
// returns the projection of a decoded object, and anything else (a
// projection already, a tombstone, another kind) unchanged. client-go may
// hand an object to the transform more than once; a projection passes.
func Transform(o any) (any, error) { return project(o, Sharding{}) }

// Sharding is what a sharded controller reads besides (docs/controller.md,
// Sharding): the labels its selector names, on VMIs and VMObservations
// (VMs keep all of theirs), and whether a VM controls a VMI (the owner
// references of VMIs).
type Sharding struct {
	Labels []string
}

// TransformSharded is Transform for a controller sharded by a selector
// naming s.Labels; with none it is Transform.
func TransformSharded(s Sharding) func(any) (any, error) {
	return func(o any) (any, error) { return project(o, s) }
}

func project(o any, s Sharding) (any, error) {
	switch x := o.(type) {
	case *corev1.Pod:
		if x != nil {
			return FromPod(x), nil
		}
	case *corev1.Node:
		if x != nil {
			return FromNode(x), nil
		}
	case *kubevirtv1.VirtualMachineInstance:
		if x != nil {
			return fromVMI(x, s), nil
		}
	case *kubevirtv1.VirtualMachine:
		if x != nil {
			return FromVM(x), nil
		}
	case *kubevirtv1.VirtualMachineInstanceMigration:
		if x != nil {
			return FromMigration(x), nil
		}
	case *v1alpha1.VMObservation:
		if x != nil {
			return fromObservation(x, s), nil
		}
	case *corev1.PersistentVolumeClaim:
		if x != nil {
			return fromClaim(x), nil
		}
	case *storagev1.StorageClass:
		if x != nil {
			return fromClass(x), nil
		}
	case *storagev1.VolumeAttachment:
		if x != nil {
			return fromAttachment(x), nil
		}
	case *corev1.Event:
		if x != nil {
			return FromEvent(x), nil
		}
	case *unstructured.Unstructured:
		if x != nil && x.GroupVersionKind() == DataVolumeGVK {
			return fromDataVolume(x), nil
		}
	}
	return o, nil
}

var (
	_ client.Object = &Pod{}
	_ client.Object = &Node{}
	_ client.Object = &VMI{}
	_ client.Object = &VM{}
	_ client.Object = &Migration{}
	_ client.Object = &Observation{}
	_ client.Object = &Claim{}
	_ client.Object = &Class{}
	_ client.Object = &Attachment{}
	_ client.Object = &DataVolume{}
	_ client.Object = &Event{}
)
