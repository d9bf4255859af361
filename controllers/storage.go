package controllers

import (
	"context"
	"strings"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmobs/vmobs/internal/cachestore"
	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/runtimekit"
	"github.com/vmobs/vmobs/internal/storagefacts"
	"github.com/vmobs/vmobs/internal/verdict"
)

// The storage layer reads the VMs' claims, the StorageClasses they name,
// the VolumeAttachments of their volumes, CDI's DataVolumes and the
// Warning Events of all of these; read only:
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;events,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses;volumeattachments,verbs=get;list;watch
// +kubebuilder:rbac:groups=cdi.kubevirt.io,resources=datavolumes,verbs=get;list;watch

// evidencePriority is the work queue's priority of a VM woken by a Warning
// Event: below an object's change (0), so that an Event storm about a few
// VMs does not hold back the other VMs' verdicts (an event explains a
// verdict, the objects decide it), and above the informers' initial lists
// (handler.LowPriority), which the queue holds in a backlog of their own
// (runtimekit.NewQueue).
const evidencePriority = handler.LowPriority / 2

// watchStorage opens the storage stores and watches them, each change
// mapped to the VMs it affects; a change of the Warning Events kept about
// an object (a new one among its newest, a repeat of one, since its time
// is the evidence time, or one gone) maps to the VMs of that object, at
// evidencePriority. CDI
// is optional, as KubeVirt treats it: without its CRD there is no
// DataVolume store and the storage layer reads no DataVolume.
func (r *Reconciler) watchStorage(mgr ctrl.Manager, b *builder.TypedBuilder[ctrl.Request]) (*builder.TypedBuilder[ctrl.Request], error) {
	if !r.opts.Storage {
		return b, nil
	}
	st := r.opts.StorageStores
	if err := r.Store.OpenStorage(context.Background(), mgr.GetCache(), r.Informers, st); err != nil {
		return nil, err
	}
	r.storage = st
	b = b.
		WatchesRawSource(st.Claims.Source(r.claimToVMs)).
		WatchesRawSource(runtimekit.WatchKind(mgr.GetCache(), &storagev1.StorageClass{}, handler.EnqueueRequestsFromMapFunc(r.classToVMs), classChanged())).
		WatchesRawSource(st.Attachments.Source(r.attachmentToVMs)).
		WatchesRawSource(st.Events.SourceAt(evidencePriority, r.eventToVMs))
	if st.DataVolumes != nil {
		b = b.WatchesRawSource(st.DataVolumes.Source(r.claimToVMs))
	}
	mgr.GetLogger().WithName("storage").Info("Reading storage", "dataVolumes", st.DataVolumes != nil)
	return b, nil
}

// storageFacts gathers the storage facts of the VM; nil when the storage
// layer's sources are off.
func (r *Reconciler) storageFacts(in *verdict.Input) (*storagefacts.Facts, error) {
	if r.storage == nil {
		return nil, nil
	}
	vols := storagefacts.VolumesOf(in.VM, in.VMI)
	pods := make([]string, 0, len(in.Pods))
	for _, p := range in.Pods {
		pods = append(pods, p.Name)
	}
	o, err := r.storage.StorageObjects(in.Namespace, in.Name, pods, vols, r.Store.Nodes)
	if err != nil {
		return nil, err
	}
	f := storagefacts.Assemble(vols, o)
	// The events no rule can read again leave the store (they are
	// still in f, which no rule reads them from either).
	for _, u := range verdict.UnreadEvents(in.Pods, f) {
		r.storage.Events.Forget(in.Namespace, u)
	}
	return f, nil
}

func keysToRequests(keys []string) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(keys))
	for _, k := range keys {
		ns, name, _ := strings.Cut(k, "/")
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	}
	return out
}

// claimToVMs maps a claim or a DataVolume (whose claim has its name) to
// the VMs whose volumes name it.
func (r *Reconciler) claimToVMs(ctx context.Context, claim types.NamespacedName) []reconcile.Request {
	keys, err := r.Store.VMsOfClaim(claim.Namespace, claim.Name)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing VMs of a claim failed", "claim", claim.Name)
		return nil
	}
	return keysToRequests(keys)
}

// classToVMs maps a StorageClass to the VMs of the claims that name it.
func (r *Reconciler) classToVMs(ctx context.Context, o client.Object) []reconcile.Request {
	return r.claimsToVMs(ctx, r.storage.ClaimsOfClass(o.GetName()))
}

// attachmentToVMs maps the VolumeAttachments of a PersistentVolume to the
// VMs of the claim bound to it.
func (r *Reconciler) attachmentToVMs(ctx context.Context, pv string) []reconcile.Request {
	return r.claimsToVMs(ctx, r.storage.ClaimsOfVolume(pv))
}

func (r *Reconciler) claimsToVMs(ctx context.Context, claims []types.NamespacedName) []reconcile.Request {
	var out []reconcile.Request
	for _, c := range claims {
		out = append(out, r.claimToVMs(ctx, c)...)
	}
	return out
}

// eventToVMs maps an object whose Warning Events changed to the VM it
// belongs to: the VM or VMI itself, a launcher pod's VMI, a claim's or a
// DataVolume's VMs.
func (r *Reconciler) eventToVMs(ctx context.Context, o cachestore.EventObject) []reconcile.Request {
	ns := o.Namespace
	switch o.Kind {
	case storagefacts.KindVM, storagefacts.KindVMI:
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: o.Name}}}
	case storagefacts.KindPod:
		p, ok, err := cachestore.Get[*projection.Pod](r.Store.Pods, ns+"/"+o.Name)
		if err != nil || !ok {
			return nil
		}
		if ref, _ := membership.LauncherRef(p); ref.Name != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: ref.Name}}}
		}
	case storagefacts.KindPVC, storagefacts.KindDataVolume:
		return r.claimToVMs(ctx, types.NamespacedName{Namespace: ns, Name: o.Name})
	}
	return nil
}

// A StorageClass's projection holds only what the rules read: any change
// but the resourceVersion may change a verdict.
func classChanged() predicate.Funcs {
	return updateOnly(func(o, n *projection.Class) bool { oc, nc := *o, *n; return changed(&oc, &nc, &oc.Meta, &nc.Meta) })
}
