package projection

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Meta is the part of metav1.ObjectMeta vmobs reads: identity, version,
// creation and deletion, and the labels and annotations of its kind that
// the engine, the indexes, the predicates or the sharding read. It
// implements metav1.Object, so that controller-runtime's event plumbing
// carries a projection like any object; the setters of what it does not
// keep drop the value.
type Meta struct {
	Name            string
	Namespace       Sym
	UID             UID
	ResourceVersion string
	Created         Time
	// Deleted is the deletion timestamp; 0 while not being deleted.
	Deleted Time
	// Kept are the labels and annotations kept, in one list.
	Kept Pairs
}

// Value is the value of a kept label or annotation, "" when there is none.
func (m *Meta) Value(key string) string { return m.Kept.Value(key) }

// Pair is a kept label or annotation.
type Pair struct {
	Key   Sym
	Value string
	Label bool
}

// Pairs are the kept labels or annotations of an object, in the order of
// the keys asked for.
type Pairs []Pair

// keep copies the entries of the label and annotation maps whose key is
// one of labels or annotations; values of the keys in vocab are interned.
func keep(lm, am map[string]string, labels, annotations []string, vocab map[string]bool) Pairs {
	n := 0
	each := func(f func(k, v string, label bool)) {
		for _, src := range [...]struct {
			m     map[string]string
			keys  []string
			label bool
		}{{lm, labels, true}, {am, annotations, false}} {
			for _, k := range src.keys {
				if v, ok := src.m[k]; ok {
					f(k, v, src.label)
				}
			}
		}
	}
	each(func(string, string, bool) { n++ })
	if n == 0 {
		return nil
	}
	out := make(Pairs, 0, n)
	each(func(k, v string, label bool) {
		if vocab[k] {
			v = Intern(v).String()
		}
		out = append(out, Pair{Key: Intern(k), Value: v, Label: label})
	})
	return out
}

// filter is the map of the kept pairs whose key is a label (or not).
func (p Pairs) filter(labels bool) map[string]string {
	var m map[string]string
	for _, kv := range p {
		if kv.Label == labels {
			if m == nil {
				m = make(map[string]string, len(p))
			}
			m[kv.Key.String()] = kv.Value
		}
	}
	return m
}

// Get returns the value of key and whether it is kept.
func (p Pairs) Get(key string) (string, bool) {
	for i := range p {
		if p[i].Key.String() == key {
			return p[i].Value, true
		}
	}
	return "", false
}

// Value returns the value of key, "" when it is not kept.
func (p Pairs) Value(key string) string {
	v, _ := p.Get(key)
	return v
}

func metaOf(m *metav1.ObjectMeta, labels, annotations []string, vocab map[string]bool) Meta {
	return Meta{
		Name:            m.Name,
		Namespace:       Intern(m.Namespace),
		UID:             uidOf(m.UID),
		ResourceVersion: m.ResourceVersion,
		Created:         metaTime(m.CreationTimestamp),
		Deleted:         timePtr(m.DeletionTimestamp),
		Kept:            keep(m.Labels, m.Annotations, labels, annotations, vocab),
	}
}

// ObjectMeta rebuilds the metav1.ObjectMeta the projection was made from,
// as far as it was kept.
func (m *Meta) ObjectMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace.String(),
		UID:               m.UID.UID(),
		ResourceVersion:   m.ResourceVersion,
		CreationTimestamp: m.Created.Meta(),
		DeletionTimestamp: m.Deleted.Ptr(),
		Labels:            m.Kept.filter(true),
		Annotations:       m.Kept.filter(false),
	}
}

// deepCopy copies what is not shared: the pair slice (strings are
// immutable, Syms shared by design).
func (m *Meta) deepCopy() Meta {
	c := *m
	c.Kept = clone(m.Kept)
	return c
}

// clone is slices.Clone that keeps nil and gives exact capacity.
func clone[S ~[]E, E any](s S) S {
	if s == nil {
		return nil
	}
	return append(make(S, 0, len(s)), s...)
}

// convert makes each element of in with f, into a slice of in's length
// (exact capacity); nil for an empty in, which the cache keeps as nothing.
func convert[In, Out any](in []In, f func(*In) Out) []Out {
	if len(in) == 0 {
		return nil
	}
	out := make([]Out, len(in))
	for i := range in {
		out[i] = f(&in[i])
	}
	return out
}

// GetObjectKind implements runtime.Object: projections carry no type
// meta, as typed objects from an informer carry none.
func (m *Meta) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// metav1.Object.

func (m *Meta) GetNamespace() string                        { return m.Namespace.String() }
func (m *Meta) SetNamespace(ns string)                      { m.Namespace = Intern(ns) }
func (m *Meta) GetName() string                             { return m.Name }
func (m *Meta) SetName(name string)                         { m.Name = name }
func (m *Meta) GetGenerateName() string                     { return "" }
func (m *Meta) SetGenerateName(string)                      {}
func (m *Meta) GetUID() types.UID                           { return m.UID.UID() }
func (m *Meta) SetUID(uid types.UID)                        { m.UID = uidOf(uid) }
func (m *Meta) GetResourceVersion() string                  { return m.ResourceVersion }
func (m *Meta) SetResourceVersion(v string)                 { m.ResourceVersion = v }
func (m *Meta) GetGeneration() int64                        { return 0 }
func (m *Meta) SetGeneration(int64)                         {}
func (m *Meta) GetSelfLink() string                         { return "" }
func (m *Meta) SetSelfLink(string)                          {}
func (m *Meta) GetCreationTimestamp() metav1.Time           { return m.Created.Meta() }
func (m *Meta) SetCreationTimestamp(t metav1.Time)          { m.Created = metaTime(t) }
func (m *Meta) GetDeletionTimestamp() *metav1.Time          { return m.Deleted.Ptr() }
func (m *Meta) SetDeletionTimestamp(t *metav1.Time)         { m.Deleted = timePtr(t) }
func (m *Meta) GetDeletionGracePeriodSeconds() *int64       { return nil }
func (m *Meta) SetDeletionGracePeriodSeconds(*int64)        {}
func (m *Meta) GetLabels() map[string]string                { return m.Kept.filter(true) }
func (m *Meta) SetLabels(l map[string]string)               { m.Kept = keepAll(l, m.Kept.filter(false)) }
func (m *Meta) GetAnnotations() map[string]string           { return m.Kept.filter(false) }
func (m *Meta) SetAnnotations(a map[string]string)          { m.Kept = keepAll(m.Kept.filter(true), a) }
func (m *Meta) GetFinalizers() []string                     { return nil }
func (m *Meta) SetFinalizers([]string)                      {}
func (m *Meta) GetOwnerReferences() []metav1.OwnerReference { return nil }
func (m *Meta) SetOwnerReferences([]metav1.OwnerReference)  {}
func (m *Meta) GetManagedFields() []metav1.ManagedFieldsEntry {
	return nil
}
func (m *Meta) SetManagedFields([]metav1.ManagedFieldsEntry) {}

// keepAll keeps every entry of labels and annotations, sorted by key.
func keepAll(labels, annotations map[string]string) Pairs {
	keys := func(m map[string]string) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	return keep(labels, annotations, keys(labels), keys(annotations), nil)
}

// OwnerRef is a compact metav1.OwnerReference.
type OwnerRef struct {
	APIVersion, Kind Sym
	Name             string
	UID              UID
	// Controller and BlockOwnerDeletion: 0 nil, 1 false, 2 true.
	Controller, BlockOwnerDeletion int8
}

// Owners are an object's owner references. Nearly every object vmobs
// caches has exactly one, to a KubeVirt VM or VMI: a launcher pod's VMI
// and a VMI's VM (controller references, as virt-controller writes them),
// a VMObservation's VM (as vmobs writes it). That one is kept in place as
// its kind, flags, name and UID, the name left empty when it is the
// object's own (a VM, its VMI and its VMObservation share one); any other
// set of references (or one whose UID is not a UUID) is kept as a list. A
// list cost 112 bytes for the one reference (a slice, the reference, its
// name), the compact form 48 or, with a name of its own, 72.
type Owners struct {
	uid  [16]byte // UID.id
	name string
	list *[]OwnerRef
	// kind is 1 + the index in ownerKinds of the compact reference, 0
	// when there is none.
	kind uint8
	// controller and block: as in OwnerRef.
	controller, block int8
}

// ownerKinds are the kinds of reference kept compact.
var ownerKinds = [...]struct{ apiVersion, kind string }{
	{"kubevirt.io/v1", "VirtualMachine"},
	{"kubevirt.io/v1", "VirtualMachineInstance"},
}

// ownersOf keeps refs; self is the name of the object they are of.
func ownersOf(refs []metav1.OwnerReference, self string) Owners {
	if len(refs) == 0 {
		return Owners{}
	}
	if len(refs) == 1 {
		r := &refs[0]
		for i, k := range ownerKinds {
			if u := uidOf(r.UID); r.APIVersion == k.apiVersion && r.Kind == k.kind && u.other == nil && !u.IsZero() {
				o := Owners{uid: u.id, kind: uint8(i + 1), controller: boolPtr(r.Controller), block: boolPtr(r.BlockOwnerDeletion)}
				if r.Name != self {
					o.name = r.Name
				}
				return o
			}
		}
	}
	list := make([]OwnerRef, len(refs))
	for i := range refs {
		r := &refs[i]
		list[i] = OwnerRef{
			APIVersion: Intern(r.APIVersion), Kind: Intern(r.Kind), Name: r.Name, UID: uidOf(r.UID),
			Controller: boolPtr(r.Controller), BlockOwnerDeletion: boolPtr(r.BlockOwnerDeletion),
		}
	}
	return Owners{list: &list}
}

// refs rebuilds the references of the object named self.
func (o *Owners) refs(self string) []metav1.OwnerReference {
	if o.kind > 0 {
		k := ownerKinds[o.kind-1]
		name := o.name
		if name == "" {
			name = self
		}
		return []metav1.OwnerReference{{
			APIVersion: k.apiVersion, Kind: k.kind, Name: name, UID: UID{id: o.uid}.UID(),
			Controller: ptrBool(o.controller), BlockOwnerDeletion: ptrBool(o.block),
		}}
	}
	if o.list == nil {
		return nil
	}
	out := make([]metav1.OwnerReference, len(*o.list))
	for i, r := range *o.list {
		out[i] = metav1.OwnerReference{
			APIVersion: r.APIVersion.String(), Kind: r.Kind.String(), Name: r.Name, UID: r.UID.UID(),
			Controller: ptrBool(r.Controller), BlockOwnerDeletion: ptrBool(r.BlockOwnerDeletion),
		}
	}
	return out
}

// Named says whether a reference of the object named self names name,
// without rebuilding them.
func (o *Owners) Named(name, self string) bool {
	if o.kind > 0 {
		return name == o.name || (o.name == "" && name == self)
	}
	return o.list != nil && slices.ContainsFunc(*o.list, func(r OwnerRef) bool { return r.Name == name })
}

// deepCopy copies the list, the one part that is not immutable.
func (o Owners) deepCopy() Owners {
	if o.list != nil {
		l := clone(*o.list)
		o.list = &l
	}
	return o
}

func boolPtr(b *bool) int8 {
	switch {
	case b == nil:
		return 0
	case *b:
		return 2
	}
	return 1
}

func ptrBool(v int8) *bool {
	if v == 0 {
		return nil
	}
	b := v == 2
	return &b
}
