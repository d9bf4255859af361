// Package cachestore is what vmobs caches and how it reads it: the
// manager's cache options (launcher pods only, every object as its
// projection), the informers' stores of the kinds vmobs caches, and the
// indexes that map a secondary object to the VM it affects. The reconciler
// (controllers) reads the cache here, never through the manager's client.
package cachestore

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/projection"
)

// Store is the manager's informer stores of the kinds vmobs caches. They
// hold projections (see Options), which controller-runtime's cache
// reader cannot hand out as typed objects: everything vmobs reads of them
// it reads here.
type Store struct {
	VMs, VMIs, Pods, Nodes, Migrations, Observations Index
	// Policies holds the VMObservationPolicies, whole: they are few.
	Policies Index
}

// Index is what vmobs reads of an informer's store: a toolscache.Indexer,
// or several of them when the cache is limited to namespaces.
type Index interface {
	GetByKey(key string) (item any, exists bool, err error)
	ByIndex(indexName, indexedValue string) ([]any, error)
	ListIndexFuncValues(indexName string) []string
	List() []any
	AddIndexers(newIndexers toolscache.Indexers) error
}

// Open returns the stores of the cache's informers, creating the
// informers if need be (they start with the cache). informers is what
// Options was given: a cache limited to namespaces hands out
// informers with no store (one per namespace behind each), and the Store
// then reads the ones informers saw made.
func Open(ctx context.Context, c cache.Cache, informers *Informers) (*Store, error) {
	s := &Store{}
	for _, k := range []struct {
		obj client.Object
		dst *Index
	}{
		{&kubevirtv1.VirtualMachine{}, &s.VMs}, {&kubevirtv1.VirtualMachineInstance{}, &s.VMIs},
		{&corev1.Pod{}, &s.Pods}, {&corev1.Node{}, &s.Nodes},
		{&kubevirtv1.VirtualMachineInstanceMigration{}, &s.Migrations}, {&v1alpha1.VMObservation{}, &s.Observations},
		{&v1alpha1.VMObservationPolicy{}, &s.Policies},
	} {
		ix, err := indexOf(ctx, c, informers, k.obj)
		if err != nil {
			return nil, err
		}
		*k.dst = ix
	}
	return s, nil
}

// indexOf is the store of obj's informer in c: the informer's own, or,
// where controller-runtime wraps it in one that exposes none (a cache
// limited to namespaces), those informers recorded as they were made.
func indexOf(ctx context.Context, c cache.Cache, informers *Informers, obj client.Object) (Index, error) {
	inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, err
	}
	if ix, ok := inf.(interface{ GetIndexer() toolscache.Indexer }); ok {
		return ix.GetIndexer(), nil
	}
	made := informers.of(obj)
	if len(made) == 0 {
		return nil, fmt.Errorf("the informer of %T (%T) has no indexer, and none was seen made", obj, inf)
	}
	return made, nil
}

// Informers records the informers a cache makes (cache.Options.NewInformer),
// by the Go type of the objects they hold. controller-runtime wraps the
// informers of a cache limited to namespaces, one per namespace (and one
// for each cluster-scoped kind), in one that exposes no store; this is how
// the Store reaches theirs. The zero value is ready to use.
type Informers struct {
	mu     sync.Mutex
	byType map[reflect.Type]indexers
}

// newInformer is a cache.Options.NewInformer that records what it makes.
//
// It leaves out the namespace index controller-runtime gives every
// informer: only its cache reader's List in a namespace uses it, and
// nothing lists these kinds through that reader (it cannot hand out
// projections as typed objects); it cost an index entry per object, a
// few hundred bytes a VM over its VM, VMI, pod and VMObservation.
func (i *Informers) newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, ix toolscache.Indexers) toolscache.SharedIndexInformer {
	ix = maps.Clone(ix)
	delete(ix, toolscache.NamespaceIndex)
	inf := toolscache.NewSharedIndexInformer(lw, obj, resync, ix)
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.byType == nil {
		i.byType = map[reflect.Type]indexers{}
	}
	t := reflect.TypeOf(obj)
	i.byType[t] = append(i.byType[t], inf.GetIndexer())
	return inf
}

// of returns the stores of the informers made for obj's type.
func (i *Informers) of(obj runtime.Object) indexers {
	if i == nil {
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return slices.Clone(i.byType[reflect.TypeOf(obj)])
}

// indexers reads several stores as one: those of one kind's informers in
// each namespace the cache is limited to. Their keys are namespace/name,
// so an object is in one of them at most.
type indexers []toolscache.Indexer

func (ix indexers) GetByKey(key string) (any, bool, error) {
	for _, s := range ix {
		if o, ok, err := s.GetByKey(key); err != nil || ok {
			return o, ok, err
		}
	}
	return nil, false, nil
}

func (ix indexers) ByIndex(indexName, indexedValue string) ([]any, error) {
	var out []any
	for _, s := range ix {
		objs, err := s.ByIndex(indexName, indexedValue)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

func (ix indexers) ListIndexFuncValues(indexName string) []string {
	var out []string
	for _, s := range ix {
		for _, v := range s.ListIndexFuncValues(indexName) {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

func (ix indexers) List() []any {
	var out []any
	for _, s := range ix {
		out = append(out, s.List()...)
	}
	return out
}

func (ix indexers) AddIndexers(newIndexers toolscache.Indexers) error {
	for _, s := range ix {
		if err := s.AddIndexers(newIndexers); err != nil {
			return err
		}
	}
	return nil
}

// Index names. Each maps a secondary object to the key of the VM it
// affects, so an event costs an index lookup, never a cluster-wide List.
const (
	// IndexMigrationVMI indexes VMIMs by namespace/spec.vmiName.
	IndexMigrationVMI = "vmobs.spec.vmiName"
	// IndexPodVMI indexes launcher pods by a bucket of the namespace/name
	// of their controlling VMI (podBucket).
	IndexPodVMI = "vmobs.controller.vmi"
	// IndexNamespace indexes VMObservationPolicies by namespace: a
	// policy selects the VMs of its namespace. The VMs are not indexed
	// so (NamespaceVMs).
	IndexNamespace = "vmobs.namespace"
	// IndexVMINode indexes VMIs by every node their status names (the node
	// they run on, the migration's source and target, activePods' nodes).
	IndexVMINode = "vmobs.status.nodes"
	// IndexHandlerNode indexes virt-handler pods by their node.
	IndexHandlerNode = "vmobs.handler.node"
	// IndexHandlerRevision indexes virt-handler pods by their DaemonSet
	// revision (controller-revision-hash): more than one value is a
	// rollout in progress.
	IndexHandlerRevision = "vmobs.handler.revision"
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
	if err := s.Policies.AddIndexers(toolscache.Indexers{IndexNamespace: toolscache.MetaNamespaceIndexFunc}); err != nil {
		return err
	}
	if err := s.VMIs.AddIndexers(toolscache.Indexers{IndexVMINode: vmiNodeIndex}); err != nil {
		return err
	}
	// The NodeObservation controller's: virt-handler's pods (one value
	// per object, as above). It reads a node's VMObservations by the keys
	// of the node's VMIs; an index of them by node cost every VM its
	// entry and was read by nothing.
	return s.Pods.AddIndexers(toolscache.Indexers{IndexHandlerNode: handlerNodeIndex, IndexHandlerRevision: handlerRevisionIndex})
}

func handlerNodeIndex(o any) ([]string, error) {
	p, ok := o.(*projection.Pod)
	if !ok || p.App.String() != HandlerApp || p.NodeName.String() == "" {
		return nil, nil
	}
	return []string{p.NodeName.String()}, nil
}

func handlerRevisionIndex(o any) ([]string, error) {
	p, ok := o.(*projection.Pod)
	if !ok || p.App.String() != HandlerApp || p.Revision() == "" || p.GetDeletionTimestamp() != nil {
		return nil, nil
	}
	return []string{p.Revision()}, nil
}

// NamespaceVMs are the VMs of a namespace: a scan of the VMs, as only a
// policy's change or a VM's labels changing asks (5,000 VMs in about
// 0.25 ms, BenchmarkNamespaceVMs, on a loaded two-core machine), where an
// index by namespace cost every VM its entry in its namespace's set, about
// 50 bytes.
func (s *Store) NamespaceVMs(namespace string) []*projection.VM {
	var out []*projection.VM
	for _, o := range s.VMs.List() {
		if vm, ok := o.(*projection.VM); ok && vm.GetNamespace() == namespace {
			out = append(out, vm)
		}
	}
	return out
}

// NamespacePolicies are the VMObservationPolicies of a namespace.
func (s *Store) NamespacePolicies(namespace string) ([]*v1alpha1.VMObservationPolicy, error) {
	return ByIndex[*v1alpha1.VMObservationPolicy](s.Policies, IndexNamespace, namespace)
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

// buckets is how many values the indexes of one value per object (a VMI's
// pods, an object's events, a claim's VMs, a volume's claims and
// attachments) have. Each value costs the index a set (a Go map of about
// 200 bytes, whatever it holds): one per VMI cost more than a launcher
// pod's projection, and the storage indexes had four or five such values a
// VM. A bucket holds the objects of several keys, and a lookup filters
// them (LauncherPods, StorageStores).
const buckets = 256

var bucketNames = func() (names [buckets]string) {
	for i := range names {
		names[i] = strconv.Itoa(i)
	}
	return names
}()

// bucket is the index value of key.
func bucket(key string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return bucketNames[h.Sum32()%buckets]
}

// podBucket is the pod index value of the VMI namespace/name.
func podBucket(namespace, name string) string { return bucket(namespace + "/" + name) }

// LauncherPods are the pods the VMI namespace/name controls.
func (s *Store) LauncherPods(namespace, name string) ([]*projection.Pod, error) {
	pods, err := ByIndex[*projection.Pod](s.Pods, IndexPodVMI, podBucket(namespace, name))
	if err != nil {
		return nil, err
	}
	out := pods[:0]
	for _, p := range pods {
		// The namespace and an owner of that name first: the bucket
		// holds other VMIs' pods, and controllingVMI builds maps.
		if p.GetNamespace() == namespace && p.Owners.Named(name, p.Name) &&
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

// Get returns the projection stored under key, if any.
func Get[T any](s Index, key string) (T, bool, error) {
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

// ByIndex returns the projections an index maps value to.
func ByIndex[T any](s Index, index, value string) ([]T, error) {
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
