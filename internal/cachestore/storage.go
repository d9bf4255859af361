package cachestore

import (
	"context"
	"errors"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/storagefacts"
)

// StorageStores are the stores the storage layer reads: the informer
// stores of the claims, StorageClasses and VolumeAttachments, and of CDI's
// DataVolumes when the cluster serves them (nil otherwise), and the
// Warning Events the rules read (Events, no informer's).
type StorageStores struct {
	Claims, Classes, Attachments Index
	Events                       *Events
	// DataVolumes is nil when CDI's CRD is not served: the storage layer
	// then reads no DataVolume, as KubeVirt treats CDI as optional.
	DataVolumes Index
}

// Index names of the storage stores.
const (
	// IndexClaimVolume indexes claims by the bucket of their
	// PersistentVolume (spec.volumeName; ClaimsOfVolume): a
	// VolumeAttachment names the PV.
	IndexClaimVolume = "vmobs.spec.volumeName"
	// IndexClaimClass indexes claims by StorageClass name.
	IndexClaimClass = "vmobs.spec.storageClassName"
	// IndexAttachmentPV indexes VolumeAttachments by the bucket of their
	// PersistentVolume.
	IndexAttachmentPV = "vmobs.spec.source.persistentVolumeName"
	// IndexVMClaim indexes VMs and VMIs by the buckets of namespace/claim
	// of every volume a claim backs (VMsOfClaim): a claim's, a
	// DataVolume's or an event's change maps to the VM through it.
	IndexVMClaim = "vmobs.spec.volumes.claim"
)

// storageByObject adds the storage kinds to the cache's options; an entry
// whose informer is never asked for (DataVolumes without CDI) makes none.
func storageByObject(byObject map[client.Object]cache.ByObject, project toolscache.TransformFunc) {
	dv := &unstructured.Unstructured{}
	dv.SetGroupVersionKind(projection.DataVolumeGVK)
	byObject[&corev1.PersistentVolumeClaim{}] = cache.ByObject{Transform: project}
	byObject[&storagev1.StorageClass{}] = cache.ByObject{Transform: project}
	byObject[&storagev1.VolumeAttachment{}] = cache.ByObject{Transform: project}
	byObject[dv] = cache.ByObject{Transform: project}
}

// WithoutDataVolumes drops the DataVolume entry from the cache's options:
// controller-runtime maps every entry's kind when it builds the cache, and
// a cluster without CDI's CRD has no mapping for DataVolumes.
func WithoutDataVolumes(o cache.Options) cache.Options {
	byObject := make(map[client.Object]cache.ByObject, len(o.ByObject))
	for obj, bo := range o.ByObject {
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GroupVersionKind() == projection.DataVolumeGVK {
			continue
		}
		byObject[obj] = bo
	}
	o.ByObject = byObject
	return o
}

// OpenStorage opens the storage stores, with events the Warning Events'
// (run by the caller); dataVolumes says CDI's CRD is served (the caller
// asks the REST mapper). Their indexes are registered here, before the
// informers start, as are those of the VMs and VMIs that map a claim to
// its VMs.
func (s *Store) OpenStorage(ctx context.Context, c cache.Cache, informers *Informers, events *Events, dataVolumes bool) (*StorageStores, error) {
	if events == nil {
		return nil, errors.New("the storage layer needs the Warning Events' store")
	}
	st := &StorageStores{Events: events}
	dv := &unstructured.Unstructured{}
	dv.SetGroupVersionKind(projection.DataVolumeGVK)
	kinds := []struct {
		obj client.Object
		dst *Index
	}{
		{&corev1.PersistentVolumeClaim{}, &st.Claims}, {&storagev1.StorageClass{}, &st.Classes},
		{&storagev1.VolumeAttachment{}, &st.Attachments},
	}
	if dataVolumes {
		kinds = append(kinds, struct {
			obj client.Object
			dst *Index
		}{dv, &st.DataVolumes})
	}
	for _, k := range kinds {
		ix, err := indexOf(ctx, c, informers, k.obj)
		if err != nil {
			return nil, err
		}
		*k.dst = ix
	}
	for _, ix := range []struct {
		s Index
		i toolscache.Indexers
	}{
		{st.Claims, toolscache.Indexers{IndexClaimVolume: claimVolumeIndex, IndexClaimClass: claimClassIndex}},
		{st.Attachments, toolscache.Indexers{IndexAttachmentPV: attachmentPVIndex}},
		{s.VMs, toolscache.Indexers{IndexVMClaim: vmClaimIndex}},
		{s.VMIs, toolscache.Indexers{IndexVMClaim: vmClaimIndex}},
	} {
		if err := ix.s.AddIndexers(ix.i); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// The indexes of one value per object (a volume, an involved object, a
// claim) index its bucket, and their lookups filter it.

func claimVolumeIndex(o any) ([]string, error) {
	if c, ok := o.(*projection.Claim); ok && c.F.VolumeName != "" {
		return []string{bucket(c.F.VolumeName)}, nil
	}
	return nil, nil
}

// ClaimsOfVolume are the claims bound to the PersistentVolume pv.
func (st *StorageStores) ClaimsOfVolume(pv string) ([]*projection.Claim, error) {
	claims, err := ByIndex[*projection.Claim](st.Claims, IndexClaimVolume, bucket(pv))
	return slices.DeleteFunc(claims, func(c *projection.Claim) bool { return c.F.VolumeName != pv }), err
}

func claimClassIndex(o any) ([]string, error) {
	if c, ok := o.(*projection.Claim); ok && c.F.StorageClassName != "" {
		return []string{c.F.StorageClassName}, nil
	}
	return nil, nil
}

func attachmentPVIndex(o any) ([]string, error) {
	if a, ok := o.(*projection.Attachment); ok && a.PV != "" {
		return []string{bucket(a.PV)}, nil
	}
	return nil, nil
}

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
		c, ok, err := Get[*projection.Claim](st.Claims, namespace+"/"+v.ClaimName)
		if err != nil {
			return o, err
		}
		if ok {
			o.PVCs[v.ClaimName] = c.F
			events(storagefacts.KindPVC, v.ClaimName)
			if sc := c.F.StorageClassName; sc != "" {
				if cl, ok, err := Get[*projection.Class](st.Classes, sc); err != nil {
					return o, err
				} else if ok {
					o.Classes[sc] = cl.F
				}
			}
			if pv := c.F.VolumeName; pv != "" {
				as, err := ByIndex[*projection.Attachment](st.Attachments, IndexAttachmentPV, bucket(pv))
				if err != nil {
					return o, err
				}
				for _, a := range as {
					if a.PV != pv {
						continue // another volume of the bucket
					}
					f := a.F
					f.NodeMissing, f.NodeNotReady, err = nodeState(nodes, f.Node)
					if err != nil {
						return o, err
					}
					o.Attachments[pv] = append(o.Attachments[pv], f)
				}
			}
		}
		if v.DataVolume != "" && st.DataVolumes != nil {
			d, ok, err := Get[*projection.DataVolume](st.DataVolumes, namespace+"/"+v.DataVolume)
			if err != nil {
				return o, err
			}
			if ok {
				o.DataVolumes[v.DataVolume] = d.F
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
	return false, n.Ready == nil || n.Ready.Status.String() != string(corev1.ConditionTrue), nil
}
