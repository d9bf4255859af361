package cachestore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	storagev1client "k8s.io/client-go/kubernetes/typed/storage/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/storagefacts"
)

// StorageStores are the stores the storage layer reads: the claims, the
// VolumeAttachments, CDI's DataVolumes (nil when the cluster does not serve
// them) and the Warning Events, each a Kept store of its own (no informer:
// their facts are smaller than an informer's machinery for an object), and
// the StorageClasses, an informer's (a handful a cluster; OpenStorage).
type StorageStores struct {
	Claims      *Claims
	Attachments *Attachments
	// DataVolumes is nil when CDI's CRD is not served: the storage layer
	// then reads no DataVolume, as KubeVirt treats CDI as optional.
	DataVolumes *DataVolumes
	Events      *Events
	Classes     Index
}

// Claims keeps the facts of each PersistentVolumeClaim under its
// namespace/name, compact (projection.ClaimFacts, 80 bytes with its
// allocation instead of 224), behind a pointer: a scan of the claims
// (ClaimsOfVolume) then copies no facts.
type Claims = Kept[types.NamespacedName, *projection.ClaimFacts, *projection.ClaimFacts]

// DataVolumes keeps the facts of each CDI DataVolume under its
// namespace/name, behind a pointer: every Succeeded one (a fleet's
// DataVolumes are almost all) shares succeededDataVolume, its name being
// the key's, and costs its map slot only.
type DataVolumes = Kept[types.NamespacedName, *storagefacts.DataVolume, *storagefacts.DataVolume]

// succeededDataVolume is the facts of every Succeeded DataVolume but its
// name (storagefacts.FromDataVolume keeps no more of one).
var succeededDataVolume = &storagefacts.DataVolume{Phase: storagefacts.DataVolumeSucceeded}

// Attachments keeps the facts of the VolumeAttachments of each
// PersistentVolume under its name, by their names: the rules look them up
// by the claim's volume. An attachment of an inline volume (no PV) is not
// kept: no claim backs it.
type Attachments = Kept[string, storagefacts.Attachment, []storagefacts.Attachment]

// NewStorageStores are the storage layer's stores for the namespaces (all
// when none), listed and watched through cfg and httpClient (the
// manager's); dataVolumes says CDI's CRD is served. The caller runs them
// (Runnables) and opens the StorageClasses' informer (OpenStorage).
func NewStorageStores(cfg *rest.Config, httpClient *http.Client, namespaces []string, dataVolumes bool) (*StorageStores, error) {
	core, err := corev1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating the claims' and events' client: %w", err)
	}
	storage, err := storagev1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating the VolumeAttachments' client: %w", err)
	}
	if len(namespaces) == 0 {
		namespaces = []string{corev1.NamespaceAll}
	}
	each := func(lw func(ns string) toolscache.ListerWatcher) map[string]toolscache.ListerWatcher {
		lws := make(map[string]toolscache.ListerWatcher, len(namespaces))
		for _, ns := range namespaces {
			lws[ns] = lw(ns)
		}
		return lws
	}
	claims := each(func(ns string) toolscache.ListerWatcher {
		return toolscache.NewListWatchFromClient(core.RESTClient(), "persistentvolumeclaims", ns, fields.Everything())
	})
	// Warning Events only: the API server filters (type is a field
	// selector of events).
	events := newEvents(each(func(ns string) toolscache.ListerWatcher {
		return toolscache.NewListWatchFromClient(core.RESTClient(), "events", ns, warningEvents)
	}))
	st := &StorageStores{
		Claims: newClaims(claims),
		Attachments: newAttachments(map[string]toolscache.ListerWatcher{
			corev1.NamespaceAll: toolscache.NewListWatchFromClient(storage.RESTClient(), "volumeattachments", corev1.NamespaceAll, fields.Everything()),
		}),
		Events: events,
	}
	if dataVolumes {
		dyn, err := dynamic.NewForConfigAndClient(cfg, httpClient)
		if err != nil {
			return nil, fmt.Errorf("creating the DataVolumes' client: %w", err)
		}
		st.DataVolumes = newDataVolumes(each(func(ns string) toolscache.ListerWatcher {
			return dataVolumeLW(dyn.Resource(projection.DataVolumeGVR).Namespace(ns))
		}))
	}
	return st, nil
}

func dataVolumeLW(r dynamic.ResourceInterface) toolscache.ListerWatcher {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return r.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return r.Watch(ctx, opts)
		},
	}
}

// Runnables are the stores' Reflectors, for the manager to run.
func (st *StorageStores) Runnables() []manager.Runnable {
	out := []manager.Runnable{st.Claims, st.Attachments, st.Events}
	if st.DataVolumes != nil {
		out = append(out, st.DataVolumes)
	}
	return out
}

// HasSynced says every store has been listed.
func (st *StorageStores) HasSynced() bool {
	return st.Claims.HasSynced() && st.Attachments.HasSynced() && st.Events.HasSynced() &&
		(st.DataVolumes == nil || st.DataVolumes.HasSynced())
}

func namespaceOf(k types.NamespacedName) string { return k.Namespace }

func newClaims(lws map[string]toolscache.ListerWatcher) *Claims {
	return newKept(keptKind[types.NamespacedName, *projection.ClaimFacts, *projection.ClaimFacts]{
		name: "persistentvolumeclaims", expected: &corev1.PersistentVolumeClaim{},
		item: named(func(c *projection.Claim) *projection.ClaimFacts {
			f := c.F // not the projection's: it holds the metadata too
			return &f
		}),
		put: one[*projection.ClaimFacts], remove: none[*projection.ClaimFacts], equal: deepEqual[*projection.ClaimFacts],
		namespace: namespaceOf,
	}, lws)
}

func newDataVolumes(lws map[string]toolscache.ListerWatcher) *DataVolumes {
	return newKept(keptKind[types.NamespacedName, *storagefacts.DataVolume, *storagefacts.DataVolume]{
		name: "datavolumes", expected: &unstructured.Unstructured{},
		item: named(func(d *projection.DataVolume) *storagefacts.DataVolume {
			f := d.F
			shared := *succeededDataVolume
			if shared.Name = f.Name; reflect.DeepEqual(f, shared) {
				return succeededDataVolume
			}
			return &f
		}),
		put: one[*storagefacts.DataVolume], remove: none[*storagefacts.DataVolume], equal: deepEqual[*storagefacts.DataVolume],
		namespace: namespaceOf,
	}, lws)
}

func newAttachments(lws map[string]toolscache.ListerWatcher) *Attachments {
	return newKept(keptKind[string, storagefacts.Attachment, []storagefacts.Attachment]{
		name: "volumeattachments", expected: &storagev1.VolumeAttachment{},
		item: func(o any) (string, storagefacts.Attachment, bool, error) {
			a, err := projected[*projection.Attachment](o)
			if err != nil || a.PV == "" {
				return "", storagefacts.Attachment{}, false, err
			}
			return a.PV, a.F, true, nil
		},
		put: func(cur []storagefacts.Attachment, a storagefacts.Attachment) ([]storagefacts.Attachment, bool) {
			i := slices.IndexFunc(cur, func(x storagefacts.Attachment) bool { return x.Name == a.Name })
			if i >= 0 && reflect.DeepEqual(cur[i], a) {
				return cur, false
			}
			next := slices.Clone(cur)
			if i >= 0 {
				next[i] = a
			} else {
				next = append(next, a)
				slices.SortFunc(next, func(x, y storagefacts.Attachment) int { return strings.Compare(x.Name, y.Name) })
			}
			return slices.Clip(next), true
		},
		remove: func(cur []storagefacts.Attachment, a storagefacts.Attachment) ([]storagefacts.Attachment, bool, bool) {
			i := slices.IndexFunc(cur, func(x storagefacts.Attachment) bool { return x.Name == a.Name })
			if i < 0 {
				return cur, len(cur) > 0, false
			}
			next := slices.Delete(slices.Clone(cur), i, i+1)
			return next, len(next) > 0, true
		},
		equal:     deepEqual[[]storagefacts.Attachment],
		namespace: func(string) string { return "" },
	}, lws)
}

// named is the item of a kind kept one an object under its
// namespace/name: the facts of its projection P.
func named[P client.Object, F any](facts func(P) *F) func(any) (types.NamespacedName, *F, bool, error) {
	return func(o any) (types.NamespacedName, *F, bool, error) {
		p, err := projected[P](o)
		if err != nil {
			return types.NamespacedName{}, nil, false, err
		}
		return types.NamespacedName{Namespace: p.GetNamespace(), Name: p.GetName()}, facts(p), true, nil
	}
}

// projected is the projection of what a Reflector hands over: a decoded
// object, projected here, or its projection (a streamed list's).
func projected[P any](o any) (P, error) {
	if _, ok := o.(P); !ok {
		var err error
		if o, err = projection.Transform(o); err != nil {
			var zero P
			return zero, err
		}
	}
	p, ok := o.(P)
	if !ok || reflect.ValueOf(p).IsNil() {
		var zero P
		return zero, fmt.Errorf("not a %T: %T", zero, o)
	}
	return p, nil
}

// one and none keep one value a key: the object's facts (compared by what
// they hold, through a pointer too).
func one[V any](cur, v V) (V, bool) { return v, !reflect.DeepEqual(cur, v) }

func none[V any](V, V) (V, bool, bool) {
	var zero V
	return zero, false, true
}

func deepEqual[V any](a, b V) bool { return reflect.DeepEqual(a, b) }

// storageByObject adds the StorageClasses to the cache's options.
func storageByObject(byObject map[client.Object]cache.ByObject, project toolscache.TransformFunc) {
	byObject[&storagev1.StorageClass{}] = cache.ByObject{Transform: project}
}

// OpenStorage opens the StorageClasses' informer into st and registers the
// indexes of the VMs and VMIs that map a claim to its VMs; before the
// informers start.
func (s *Store) OpenStorage(ctx context.Context, c cache.Cache, informers *Informers, st *StorageStores) error {
	if st == nil || st.Events == nil || st.Claims == nil || st.Attachments == nil {
		return errors.New("the storage layer needs its stores (cachestore.NewStorageStores)")
	}
	classes, err := indexOf(ctx, c, informers, &storagev1.StorageClass{})
	if err != nil {
		return err
	}
	st.Classes = classes
	for _, ix := range []Index{s.VMs, s.VMIs} {
		if err := ix.AddIndexers(toolscache.Indexers{IndexVMClaim: vmClaimIndex}); err != nil {
			return err
		}
	}
	return nil
}

// IndexVMClaim indexes VMs and VMIs by the buckets of namespace/claim of
// every volume a claim backs (VMsOfClaim): a claim's, a DataVolume's or an
// event's change maps to the VM through it.
const IndexVMClaim = "vmobs.spec.volumes.claim"

// ClaimsOfVolume are the claims bound to the PersistentVolume pv, and
// ClaimsOfClass those of the StorageClass: a scan of the claims, as an
// attachment's or a class's change is rare (a VM's start, stop or
// migration) where an index would cost every claim its entry.
func (st *StorageStores) ClaimsOfVolume(pv string) []types.NamespacedName {
	return st.claimsWhere(func(c *projection.ClaimFacts) bool { return c.VolumeName == pv })
}

// ClaimsOfClass: see ClaimsOfVolume.
func (st *StorageStores) ClaimsOfClass(class string) []types.NamespacedName {
	return st.claimsWhere(func(c *projection.ClaimFacts) bool { return c.StorageClassName.String() == class })
}

func (st *StorageStores) claimsWhere(match func(*projection.ClaimFacts) bool) []types.NamespacedName {
	var out []types.NamespacedName
	st.Claims.Range(func(k types.NamespacedName, c *projection.ClaimFacts) {
		if match(c) {
			out = append(out, k)
		}
	})
	return out
}

// vmClaimIndex indexes a bucket of each claim of a VM or VMI, and its
// lookups filter it.
func vmClaimIndex(o any) ([]string, error) {
	var vols []projection.ClaimVolume
	switch x := o.(type) {
	case *projection.VM:
		vols = x.Volumes
	case *projection.VMI:
		vols = x.Volumes
	default:
		return nil, nil
	}
	if len(vols) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(vols))
	ns := o.(client.Object).GetNamespace()
	for _, v := range vols {
		if b := bucket(ns + "/" + v.ClaimName); !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out, nil
}

// claimsOf are the volumes of a VM or VMI.
func claimsOf(o any) []projection.ClaimVolume {
	switch x := o.(type) {
	case *projection.VM:
		return x.Volumes
	case *projection.VMI:
		return x.Volumes
	}
	return nil
}

// VMsOfClaim are the keys (namespace/name) of the VMs and VMIs whose
// volumes name the claim (or the DataVolume of that name).
func (s *Store) VMsOfClaim(namespace, claim string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, ix := range []Index{s.VMs, s.VMIs} {
		objs, err := ix.ByIndex(IndexVMClaim, bucket(namespace+"/"+claim))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			obj, ok := o.(client.Object)
			if !ok || obj.GetNamespace() != namespace ||
				!slices.ContainsFunc(claimsOf(o), func(v projection.ClaimVolume) bool { return v.ClaimName == claim }) {
				continue // another key of the bucket
			}
			k := obj.GetNamespace() + "/" + obj.GetName()
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out, nil
}

// StorageObjects gathers the folded objects of the volumes of one VM in
// namespace: its claims with their StorageClasses, DataVolumes and
// attachments (with the state of the Nodes they name, read from nodes),
// and the Warning Events of the VM, its VMI, the given launcher pods, the
// claims and the DataVolumes.
func (st *StorageStores) StorageObjects(namespace, vm string, pods []string, vols []storagefacts.VolumeRef, nodes Index) (storagefacts.Objects, error) {
	o := storagefacts.Objects{
		PVCs: map[string]storagefacts.PVC{}, Classes: map[string]storagefacts.StorageClass{},
		DataVolumesRead: st.DataVolumes != nil, DataVolumes: map[string]storagefacts.DataVolume{},
		Attachments: map[string][]storagefacts.Attachment{},
	}
	events := func(kind, name string) {
		o.Events = st.Events.AppendOf(o.Events, namespace, kind, name)
	}
	for _, k := range []string{storagefacts.KindVM, storagefacts.KindVMI} {
		events(k, vm)
	}
	for _, p := range pods {
		events(storagefacts.KindPod, p)
	}
	for _, v := range vols {
		if c, ok := st.Claims.Get(types.NamespacedName{Namespace: namespace, Name: v.ClaimName}); ok {
			o.PVCs[v.ClaimName] = c.PVC(v.ClaimName)
			events(storagefacts.KindPVC, v.ClaimName)
			if sc := c.StorageClassName.String(); sc != "" {
				if cl, ok, err := Get[*projection.Class](st.Classes, sc); err != nil {
					return o, err
				} else if ok {
					o.Classes[sc] = cl.F
				}
			}
			if pv := c.VolumeName; pv != "" {
				as, _ := st.Attachments.Get(pv)
				for _, a := range as {
					var err error
					a.NodeMissing, a.NodeNotReady, err = nodeState(nodes, a.Node)
					if err != nil {
						return o, err
					}
					o.Attachments[pv] = append(o.Attachments[pv], a)
				}
			}
		}
		if v.DataVolume != "" && st.DataVolumes != nil {
			if d, ok := st.DataVolumes.Get(types.NamespacedName{Namespace: namespace, Name: v.DataVolume}); ok {
				f := *d
				f.Name = v.DataVolume // a Succeeded one's is the key's
				o.DataVolumes[v.DataVolume] = f
				events(storagefacts.KindDataVolume, v.DataVolume)
			}
		}
	}
	return o, nil
}

func nodeState(nodes Index, name string) (missing, notReady bool, err error) {
	if name == "" {
		return false, false, nil
	}
	n, ok, err := Get[*projection.Node](nodes, name)
	if err != nil || !ok {
		return !ok && err == nil, false, err
	}
	return false, n.Ready == nil || n.Ready.Status() != string(corev1.ConditionTrue), nil
}
