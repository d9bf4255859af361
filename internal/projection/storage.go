package projection

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vmobs/vmobs/internal/storagefacts"
)

// DataVolumeGVK is CDI's DataVolume, cached as unstructured content (no
// CDI module in go.mod, docs/controller.md, Storage) when the cluster
// serves it.
var DataVolumeGVK = schema.GroupVersionKind{Group: "cdi.kubevirt.io", Version: "v1beta1", Kind: "DataVolume"}

// DataVolumeGVR is its resource.
var DataVolumeGVR = DataVolumeGVK.GroupVersion().WithResource("datavolumes")

// Claim is a PersistentVolumeClaim as the storage layer reads it: the
// folded facts (storagefacts.FromPVC), kept compact (ClaimFacts).
type Claim struct {
	Meta
	F ClaimFacts
}

// ClaimFacts are a claim's storagefacts.PVC but its name, in 72 bytes
// instead of 200 (and its access modes' slice): a store keeps one a VM
// (cachestore.Claims). The words a fleet's claims share are interned;
// PVC rebuilds the facts.
type ClaimFacts struct {
	Created Time
	// AccessModes are spec.accessModes (internWords).
	Phase, StorageClassName, VolumeMode, SelectedNode, AccessModes Sym
	VolumeName                                                     string
	// Conditions are status.conditions; nil for none, as nearly all.
	Conditions *[]storagefacts.Condition
}

// claimFactsOf packs f.
func claimFactsOf(f *storagefacts.PVC) ClaimFacts {
	c := ClaimFacts{
		Created: timeOf(f.Created), Phase: Intern(f.Phase), StorageClassName: Intern(f.StorageClassName),
		VolumeMode: Intern(f.VolumeMode), SelectedNode: Intern(f.SelectedNode), AccessModes: internWords(f.AccessModes),
		VolumeName: f.VolumeName,
	}
	if len(f.Conditions) > 0 {
		conds := slices.Clone(f.Conditions)
		for i := range conds {
			cd := &conds[i]
			cd.Type, cd.Status, cd.Reason = Intern(cd.Type).String(), Intern(cd.Status).String(), Intern(cd.Reason).String()
		}
		c.Conditions = &conds
	}
	return c
}

// PVC is the claim's facts, named name (the key it is kept under).
func (c *ClaimFacts) PVC(name string) storagefacts.PVC {
	f := storagefacts.PVC{
		Name: name, Phase: c.Phase.String(), Created: c.Created.Time(), StorageClassName: c.StorageClassName.String(),
		VolumeMode: c.VolumeMode.String(), VolumeName: c.VolumeName, SelectedNode: c.SelectedNode.String(),
	}
	f.AccessModes = splitWords(c.AccessModes)
	if c.Conditions != nil {
		f.Conditions = slices.Clone(*c.Conditions)
	}
	return f
}

// Class is a StorageClass as the storage layer reads it.
type Class struct {
	Meta
	F storagefacts.StorageClass
}

// Attachment is a VolumeAttachment as the storage layer reads it: the
// PersistentVolume it attaches and the folded status.
type Attachment struct {
	Meta
	PV string
	F  storagefacts.Attachment
}

// DataVolume is a CDI DataVolume as the storage layer reads it.
type DataVolume struct {
	Meta
	F storagefacts.DataVolume
}

// Event is a Warning Event as the storage layer reads it, on its way into
// the controller's Event store (cachestore.Events), which keeps the facts
// of the newest few per involved object and no informer object at all. An
// event no rule reads (storagefacts.Read) keeps its name only: F is nil,
// and the store drops it.
type Event struct {
	Meta
	F *storagefacts.Event
}

// Relevant says a rule reads the event: it has its facts.
func (e *Event) Relevant() bool { return e.F != nil }

func fromClaim(p *corev1.PersistentVolumeClaim) *Claim {
	f := storagefacts.FromPVC(p)
	return &Claim{Meta: metaOf(&p.ObjectMeta, nil, nil, nil), F: claimFactsOf(&f)} // F has the selected node
}

func fromClass(c *storagev1.StorageClass) *Class {
	return &Class{Meta: metaOf(&c.ObjectMeta, nil, nil, nil), F: *storagefacts.FromStorageClass(c.Name, c)}
}

func fromAttachment(va *storagev1.VolumeAttachment) *Attachment {
	out := &Attachment{Meta: metaOf(&va.ObjectMeta, nil, nil, nil), F: storagefacts.FromAttachment(va)}
	out.F.Node = Intern(out.F.Node).String()
	if pv := va.Spec.Source.PersistentVolumeName; pv != nil {
		out.PV = *pv
	}
	return out
}

// FromEvent is the Event of a decoded Warning Event: the facts
// (storagefacts.FromEvent, its strings interned) when a rule reads it.
func FromEvent(e *corev1.Event) *Event {
	out := &Event{Meta: Meta{Name: e.Name, Namespace: Intern(e.Namespace)}}
	if e.Type == corev1.EventTypeWarning && storagefacts.Read(e.InvolvedObject.Kind, e.Reason) {
		f := storagefacts.FromEvent(e)
		f.Kind, f.Reason, f.Component = Intern(f.Kind).String(), Intern(f.Reason).String(), Intern(f.Component).String()
		out.F, out.ResourceVersion = &f, e.ResourceVersion
	}
	return out
}

func fromDataVolume(u *unstructured.Unstructured) *DataVolume {
	m := Meta{Name: u.GetName(), Namespace: Intern(u.GetNamespace()), UID: uidOf(u.GetUID()), ResourceVersion: u.GetResourceVersion()}
	f := storagefacts.FromDataVolume(u.Object)
	f.Phase = Intern(f.Phase).String()
	for i := range f.Conditions {
		c := &f.Conditions[i]
		c.Type, c.Status, c.Reason = Intern(c.Type).String(), Intern(c.Status).String(), Intern(c.Reason).String()
	}
	return &DataVolume{Meta: m, F: f}
}

// DeepCopyObject implements runtime.Object.
func (c *Claim) DeepCopyObject() runtime.Object {
	o := *c
	o.Meta = c.Meta.deepCopy()
	if c.F.Conditions != nil {
		conds := slices.Clone(*c.F.Conditions)
		o.F.Conditions = &conds
	}
	return &o
}

// DeepCopyObject implements runtime.Object.
func (c *Class) DeepCopyObject() runtime.Object {
	o := *c
	o.Meta = c.Meta.deepCopy()
	return &o
}

// DeepCopyObject implements runtime.Object.
func (a *Attachment) DeepCopyObject() runtime.Object {
	o := *a
	o.Meta = a.Meta.deepCopy()
	if e := a.F.AttachError; e != nil {
		c := *e
		o.F.AttachError = &c
	}
	if e := a.F.DetachError; e != nil {
		c := *e
		o.F.DetachError = &c
	}
	return &o
}

// DeepCopyObject implements runtime.Object.
func (d *DataVolume) DeepCopyObject() runtime.Object {
	o := *d
	o.Meta = d.Meta.deepCopy()
	o.F.Conditions = clone(d.F.Conditions)
	return &o
}

// DeepCopyObject implements runtime.Object.
func (e *Event) DeepCopyObject() runtime.Object {
	o := *e
	o.Meta = e.Meta.deepCopy()
	if e.F != nil {
		f := *e.F
		o.F = &f
	}
	return &o
}
