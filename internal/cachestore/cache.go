package cachestore

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/projection"
)

const (
	// HandlerApp is the kubevirt.io label of virt-handler's pods.
	HandlerApp = "virt-handler"
	// PodLabel selects the only pods vmobs caches: virt-launcher pods, and
	// virt-handler's, one per node, whose readiness the NodeObservation
	// reads.
	PodLabel = kubevirtv1.AppLabel + " in (virt-handler,virt-launcher)"
)

// Options bounds what the manager caches: launcher and virt-handler pods
// only, and of
// every object only its projection (internal/projection): what the
// engine, the write decision, the indexes and the predicates read, in
// compact form. The informers' stores hold the projections; the controller
// reads them through Store, never through the manager's client.
//
// namespaces limits the cache (and so the controller) to those namespaces;
// empty means all. informers, when not nil, records the informers the cache
// makes: pass the same to Open (the reconciler's Informers), which needs it
// when namespaces is not empty.
func Options(namespaces []string, vmSelector labels.Selector, informers *Informers) cache.Options {
	launchers, err := labels.Parse(PodLabel)
	if err != nil {
		panic(err) // a constant
	}
	// ByObject is keyed by object pointers: each kind must have exactly one
	// key, or controller-runtime keeps one of the entries at random and
	// drops the label selector or the transform of the other.
	var (
		pod  = &corev1.Pod{}
		node = &corev1.Node{}
		vmi  = &kubevirtv1.VirtualMachineInstance{}
		vm   = &kubevirtv1.VirtualMachine{}
		vmim = &kubevirtv1.VirtualMachineInstanceMigration{}
		obs  = &v1alpha1.VMObservation{}
		nobs = &v1alpha1.NodeObservation{}
		inc  = &v1alpha1.VMIncident{}
	)
	// Sharded, VMs, VMIs and VMObservations keep the labels the selector
	// names, and VMIs their owners (controllers/shard.go).
	var sharding projection.Sharding
	if vmSelector != nil && !vmSelector.Empty() {
		sharding.Labels = SelectorKeys(vmSelector)
	}
	project := projection.TransformSharded(sharding)
	byObject := map[client.Object]cache.ByObject{
		pod:  {Label: launchers, Transform: project},
		node: {Transform: project},
		vmi:  {Transform: project},
		vm:   {Transform: project},
		vmim: {Transform: project},
		obs:  {Transform: project},
		// One per node, whole: the controller compares its status with
		// the one it computes. Only the managed fields are dropped.
		nobs: {Transform: cache.TransformStripManagedFields()},
		// A few, whole, for the same reason (controllers/vmincident_controller.go).
		inc: {Transform: cache.TransformStripManagedFields()},
	}
	storageByObject(byObject, project)
	// The selector decides a VM's shard from the VM's own labels (a
	// standalone VMI's from the VMI's), which KubeVirt does not copy to
	// the VMI: VMIs are cached whole, like pods and nodes (controllers/shard.go).
	if vmSelector != nil && !vmSelector.Empty() {
		for _, o := range []client.Object{vm, obs} {
			bo := byObject[o]
			bo.Label = vmSelector
			byObject[o] = bo
		}
	}
	opts := cache.Options{ByObject: byObject}
	if informers != nil {
		opts.NewInformer = informers.newInformer
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// SelectorKeys lists the label keys a selector names, in its order.
func SelectorKeys(sel labels.Selector) []string {
	reqs, _ := sel.Requirements()
	var keys []string
	for _, r := range reqs {
		if len(keys) == 0 || keys[len(keys)-1] != r.Key() {
			keys = append(keys, r.Key())
		}
	}
	return keys
}
