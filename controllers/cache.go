package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/cachetrim"
)

const (
	// LauncherLabel selects virt-launcher pods, the only pods vmobs caches.
	LauncherLabel = kubevirtv1.AppLabel + "=virt-launcher"
)

// CacheOptions bounds what the manager caches: launcher pods only, and of
// every object only the fields the engine and the predicates read (see
// internal/cachetrim). A full launcher pod costs tens of KiB in the cache,
// mostly managedFields and spec; what is left is a few KiB.
//
// The kinds vmobs only reads (VMIs, VMs, migrations, pods, nodes) are handed
// out of the cache without a deep copy: a reconcile reads a VM's objects
// and its node, and copying them cost more than evaluating them. Nothing in
// vmobs writes to an object it read from the cache, except VMObservations,
// which are still copied.
//
// namespaces limits the cache (and so the controller) to those namespaces;
// empty means all. trim false keeps whole objects (to measure what the
// transforms save).
func CacheOptions(namespaces []string, vmSelector labels.Selector, trim bool) cache.Options {
	launchers, err := labels.Parse(LauncherLabel)
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
	)
	readOnly := ptr.To(true)
	byObject := map[client.Object]cache.ByObject{
		pod:  {Label: launchers, UnsafeDisableDeepCopy: readOnly},
		node: {UnsafeDisableDeepCopy: readOnly},
		vmi:  {UnsafeDisableDeepCopy: readOnly},
		vm:   {UnsafeDisableDeepCopy: readOnly},
		vmim: {UnsafeDisableDeepCopy: readOnly},
	}
	// The selector decides a VM's shard from the VM's own labels (a
	// standalone VMI's from the VMI's), which KubeVirt does not copy to
	// the VMI: VMIs are cached whole, like pods and nodes (shard.go).
	if vmSelector != nil && !vmSelector.Empty() {
		for _, o := range []client.Object{vm, obs} {
			bo := byObject[o]
			bo.Label = vmSelector
			byObject[o] = bo
		}
	}
	opts := cache.Options{ByObject: byObject}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	if !trim {
		return opts
	}
	opts.DefaultTransform = cache.TransformStripManagedFields()
	set := func(obj client.Object, t toolscache.TransformFunc) {
		bo := byObject[obj]
		bo.Transform = t
		byObject[obj] = bo
	}
	set(pod, cachetrim.Pod)
	set(node, cachetrim.Node)
	set(vmi, cachetrim.VMI)
	set(vm, cachetrim.VM)
	// VMObservations keep the time of our last status write, read from
	// managedFields (see lastStatusWrite).
	set(obs, cachetrim.Observation)
	return opts
}
