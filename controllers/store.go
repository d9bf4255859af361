package controllers

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/projection"
)

// Store is the manager's informer stores of the kinds vmobs caches. They
// hold projections (see CacheOptions), which controller-runtime's cache
// reader cannot hand out as typed objects: everything vmobs reads of them
// it reads here.
type Store struct {
	VMs, VMIs, Pods, Nodes, Migrations, Observations toolscache.Indexer
}

// OpenStore returns the stores of the cache's informers, creating the
// informers if need be (they start with the cache).
func OpenStore(ctx context.Context, c cache.Cache) (*Store, error) {
	s := &Store{}
	for _, k := range []struct {
		obj client.Object
		dst *toolscache.Indexer
	}{
		{&kubevirtv1.VirtualMachine{}, &s.VMs}, {&kubevirtv1.VirtualMachineInstance{}, &s.VMIs},
		{&corev1.Pod{}, &s.Pods}, {&corev1.Node{}, &s.Nodes},
		{&kubevirtv1.VirtualMachineInstanceMigration{}, &s.Migrations}, {&v1alpha1.VMObservation{}, &s.Observations},
	} {
		inf, err := c.GetInformer(ctx, k.obj, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, err
		}
		ix, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
		if !ok {
			return nil, fmt.Errorf("the informer of %T (%T) has no indexer", k.obj, inf)
		}
		*k.dst = ix.GetIndexer()
	}
	return s, nil
}

// Index names. Each maps a secondary object to the key of the VM it
// affects, so an event costs an index lookup, never a cluster-wide List.
const (
	// IndexMigrationVMI indexes VMIMs by namespace/spec.vmiName.
	IndexMigrationVMI = "vmobs.spec.vmiName"
	// IndexPodVMI indexes launcher pods by a bucket of the namespace/name
	// of their controlling VMI (podBucket).
	IndexPodVMI = "vmobs.controller.vmi"
	// IndexVMINode indexes VMIs by every node their status names (the node
	// they run on, the migration's source and target, activePods' nodes).
	IndexVMINode = "vmobs.status.nodes"
)

// AddIndexes registers the controller's indexes; before the informers
// start. One value per object: controller-runtime's own field indexes
// store each twice (with and without the namespace), and an index entry
// costs more than the projection of a small object.
func (s *Store) AddIndexes() error {
	if err := s.Migrations.AddIndexers(toolscache.Indexers{IndexMigrationVMI: migrationVMIIndex}); err != nil {
		return err
	}
	if err := s.Pods.AddIndexers(toolscache.Indexers{IndexPodVMI: podVMIIndex}); err != nil {
		return err
	}
	return s.VMIs.AddIndexers(toolscache.Indexers{IndexVMINode: vmiNodeIndex})
}

func migrationVMIIndex(o any) ([]string, error) {
	m, ok := o.(*projection.Migration)
	if !ok || m.VMIName == "" {
		return nil, nil
	}
	return []string{m.GetNamespace() + "/" + m.VMIName}, nil
}

func podVMIIndex(o any) ([]string, error) {
	p, ok := o.(*projection.Pod)
	if !ok {
		return nil, nil
	}
	if name := controllingVMI(p); name != "" {
		return []string{podBucket(p.GetNamespace(), name)}, nil
	}
	return nil, nil
}

// podBuckets is how many values the pod index has. Each value costs the
// index a set (a Go map of about 200 bytes, whatever it holds): one per VMI
// cost more than a launcher pod's projection. A bucket holds the pods of
// several VMIs, and a lookup filters them (launcherPods).
const podBuckets = 256

var podBucketNames = func() (names [podBuckets]string) {
	for i := range names {
		names[i] = strconv.Itoa(i)
	}
	return names
}()

// podBucket is the pod index value of the VMI namespace/name.
func podBucket(namespace, name string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace))
	_, _ = h.Write([]byte{'/'})
	_, _ = h.Write([]byte(name))
	return podBucketNames[h.Sum32()%podBuckets]
}

// launcherPods are the pods the VMI namespace/name controls.
func (s *Store) launcherPods(namespace, name string) ([]*projection.Pod, error) {
	pods, err := byIndex[*projection.Pod](s.Pods, IndexPodVMI, podBucket(namespace, name))
	if err != nil {
		return nil, err
	}
	out := pods[:0]
	for _, p := range pods {
		// The namespace and an owner of that name first: the bucket
		// holds other VMIs' pods, and controllingVMI builds maps.
		if p.GetNamespace() == namespace && slices.ContainsFunc(p.Owners, func(r projection.OwnerRef) bool { return r.Name == name }) &&
			controllingVMI(p) == name {
			out = append(out, p)
		}
	}
	return out, nil
}

func vmiNodeIndex(o any) ([]string, error) {
	v, ok := o.(*projection.VMI)
	if !ok {
		return nil, nil
	}
	return membership.NodeNames(v.ToVMI(), nil), nil
}

// controllingVMI is the name of the VMI that controls a launcher pod, or
// "" (the index needs a name; a pod known only by its created-by label has
// none).
func controllingVMI(o client.Object) string {
	ref, _ := membership.LauncherRef(o)
	return ref.Name
}

// get returns the projection stored under key, if any.
func get[T any](s toolscache.Indexer, key string) (T, bool, error) {
	var zero T
	o, ok, err := s.GetByKey(key)
	if err != nil || !ok {
		return zero, false, err
	}
	t, ok := o.(T)
	if !ok {
		return zero, false, fmt.Errorf("the cache holds a %T under %s, not a projection", o, key)
	}
	return t, true, nil
}

// byIndex returns the projections an index maps value to.
func byIndex[T any](s toolscache.Indexer, index, value string) ([]T, error) {
	objs, err := s.ByIndex(index, value)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		t, ok := o.(T)
		if !ok {
			return nil, fmt.Errorf("the cache holds a %T in index %s, not a projection", o, index)
		}
		out = append(out, t)
	}
	return out, nil
}
