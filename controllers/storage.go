package controllers

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// watchStorage opens the storage stores and watches them, each change
// mapped through an index to the VMs it affects; a change of the Warning
// Events kept about an object (a new one among its newest, a repeat of
// one, since its time is the evidence time, or one gone) maps to the VMs
// of that object. CDI is optional, as KubeVirt treats it: without its CRD
// no DataVolume informer is made and the storage layer reads no
// DataVolume.
func (r *Reconciler) watchStorage(mgr ctrl.Manager, b *builder.TypedBuilder[ctrl.Request]) (*builder.TypedBuilder[ctrl.Request], error) {
	if !r.opts.Storage {
		return b, nil
	}
	cdi := r.opts.DataVolumes
	st, err := r.Store.OpenStorage(context.Background(), mgr.GetCache(), r.Informers, r.opts.Events, cdi)
	if err != nil {
		return nil, err
	}
	r.storage = st
	c := mgr.GetCache()
	b = b.
		WatchesRawSource(runtimekit.WatchKind(c, &corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(r.claimToVMs), claimChanged())).
		WatchesRawSource(runtimekit.WatchKind(c, &storagev1.StorageClass{}, handler.EnqueueRequestsFromMapFunc(r.classToVMs), classChanged())).
		WatchesRawSource(runtimekit.WatchKind(c, &storagev1.VolumeAttachment{}, handler.EnqueueRequestsFromMapFunc(r.attachmentToVMs), attachmentChanged())).
		WatchesRawSource(st.Events.Source(r.eventToVMs))
	if cdi {
		dv := &unstructured.Unstructured{}
		dv.SetGroupVersionKind(projection.DataVolumeGVK)
		b = b.WatchesRawSource(runtimekit.WatchKind(c, dv, handler.EnqueueRequestsFromMapFunc(r.claimToVMs), dataVolumeChanged()))
	}
	mgr.GetLogger().WithName("storage").Info("Reading storage", "dataVolumes", cdi)
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
func (r *Reconciler) claimToVMs(ctx context.Context, o client.Object) []reconcile.Request {
	keys, err := r.Store.VMsOfClaim(o.GetNamespace(), o.GetName())
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing VMs of a claim failed", "claim", o.GetName())
		return nil
	}
	return keysToRequests(keys)
}

// classToVMs maps a StorageClass to the VMs of the claims that name it.
func (r *Reconciler) classToVMs(ctx context.Context, o client.Object) []reconcile.Request {
	claims, err := cachestore.ByIndex[*projection.Claim](r.storage.Claims, cachestore.IndexClaimClass, o.GetName())
	return r.claimsToVMs(ctx, claims, err)
}

// attachmentToVMs maps a VolumeAttachment to the VMs of the claim bound
// to its PersistentVolume.
func (r *Reconciler) attachmentToVMs(ctx context.Context, o client.Object) []reconcile.Request {
	a, ok := o.(*projection.Attachment)
	if !ok || a.PV == "" {
		return nil
	}
	claims, err := r.storage.ClaimsOfVolume(a.PV)
	return r.claimsToVMs(ctx, claims, err)
}

func (r *Reconciler) claimsToVMs(ctx context.Context, claims []*projection.Claim, err error) []reconcile.Request {
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing claims failed")
		return nil
	}
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
		keys, err := r.Store.VMsOfClaim(ns, o.Name)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing VMs of a claim failed", "claim", o.Name)
			return nil
		}
		return keysToRequests(keys)
	}
	return nil
}

// The storage projections hold only what the rules read: any change but
// the resourceVersion may change a verdict.

func claimChanged() predicate.Funcs {
	return updateOnly(func(o, n *projection.Claim) bool { oc, nc := *o, *n; return changed(&oc, &nc, &oc.Meta, &nc.Meta) })
}

func classChanged() predicate.Funcs {
	return updateOnly(func(o, n *projection.Class) bool { oc, nc := *o, *n; return changed(&oc, &nc, &oc.Meta, &nc.Meta) })
}

func attachmentChanged() predicate.Funcs {
	return updateOnly(func(o, n *projection.Attachment) bool {
		oc, nc := *o, *n
		return changed(&oc, &nc, &oc.Meta, &nc.Meta)
	})
}

func dataVolumeChanged() predicate.Funcs {
	return updateOnly(func(o, n *projection.DataVolume) bool {
		oc, nc := *o, *n
		return changed(&oc, &nc, &oc.Meta, &nc.Meta)
	})
}
