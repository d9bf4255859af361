package storagefacts

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// SelectedNodeAnnotation is where the scheduler records the node it chose
// for a WaitForFirstConsumer claim
// (k8s:pkg/controller/volume/persistentvolume/util AnnSelectedNode).
const SelectedNodeAnnotation = "volume.kubernetes.io/selected-node"

// Kinds of the objects events are kept for.
const (
	KindPVC        = "PersistentVolumeClaim"
	KindDataVolume = "DataVolume"
	KindPod        = "Pod"
	KindVM         = "VirtualMachine"
	KindVMI        = "VirtualMachineInstance"
)

// Event reasons the storage rules read (internal/verdict/storage.go), as
// their writers spell them: the attach-detach controller
// (k8s:pkg/controller/volume/attachdetach/reconciler) and the kubelet's
// volume manager (k8s:pkg/kubelet/volumemanager) on the launcher pod, the
// PV binder and the external provisioner on the claim
// (k8s:pkg/controller/volume/persistentvolume/pv_controller.go,
// sigs.k8s.io/sig-storage-lib-external-provisioner controller.go).
const (
	ReasonFailedAttachVolume = "FailedAttachVolume"
	ReasonFailedMount        = "FailedMount"
	ReasonFailedMapVolume    = "FailedMapVolume"
	ReasonProvisioningFailed = "ProvisioningFailed"
)

// Read says whether a storage rule reads a Warning Event about an object of
// kind with reason: a launcher pod's attach, mount and map failures, a
// claim's ProvisioningFailed, and any event of a DataVolume (its newest
// explains an import that fails). No rule reads the others (a VM's or
// VMI's events, a pod's scheduling or probe warnings, a claim's import
// errors, which its DataVolume repeats): the controller's cache keeps only
// their names (internal/projection), and Assemble leaves them out, so that
// they neither cost memory nor push an event a rule reads out of the newest
// MaxEvents. A rule that reads another reason adds it here.
func Read(kind, reason string) bool {
	switch kind {
	case KindPod:
		return reason == ReasonFailedAttachVolume || reason == ReasonFailedMount || reason == ReasonFailedMapVolume
	case KindPVC:
		return reason == ReasonProvisioningFailed
	case KindDataVolume:
		return true
	}
	return false
}

// VolumeRef is a volume of the VM a claim backs, as its spec names it.
type VolumeRef struct {
	Name, ClaimName, DataVolume string
	Hotplug                     bool
}

// VolumesOf lists the VM's volumes backed by a claim: those of the VM's
// template, and those of the VMI (hotplugged ones included), by name. A
// dataVolume volume's claim has the DataVolume's name
// (kv:pkg/storage/types/pvc.go). Other volume kinds (containerDisk,
// cloudInit, configMap, ...) live and die with the launcher pod and are not
// the storage layer's.
func VolumesOf(vm *kubevirtv1.VirtualMachine, vmi *kubevirtv1.VirtualMachineInstance) []VolumeRef {
	var out []VolumeRef
	add := func(vols []kubevirtv1.Volume, hot func(string) bool) {
		for i := range vols {
			v := &vols[i]
			r := VolumeRef{Name: v.Name}
			switch {
			case v.PersistentVolumeClaim != nil:
				r.ClaimName, r.Hotplug = v.PersistentVolumeClaim.ClaimName, v.PersistentVolumeClaim.Hotpluggable
			case v.DataVolume != nil:
				r.ClaimName, r.DataVolume, r.Hotplug = v.DataVolume.Name, v.DataVolume.Name, v.DataVolume.Hotpluggable
			case v.MemoryDump != nil:
				r.ClaimName, r.Hotplug = v.MemoryDump.ClaimName, true
			default:
				continue
			}
			if r.ClaimName == "" {
				continue
			}
			r.Hotplug = r.Hotplug || hot(v.Name)
			if j := slices.IndexFunc(out, func(o VolumeRef) bool { return o.Name == r.Name }); j >= 0 {
				out[j].Hotplug = out[j].Hotplug || r.Hotplug
				continue
			}
			out = append(out, r)
		}
	}
	never := func(string) bool { return false }
	if vm != nil && vm.Spec.Template != nil {
		add(vm.Spec.Template.Spec.Volumes, never)
	}
	if vmi != nil {
		add(vmi.Spec.Volumes, func(name string) bool {
			for i := range vmi.Status.VolumeStatus {
				if vs := &vmi.Status.VolumeStatus[i]; vs.Name == name && vs.HotplugVolume != nil {
					return true
				}
			}
			return false
		})
	}
	slices.SortFunc(out, func(a, b VolumeRef) int { return strings.Compare(a.Name, b.Name) })
	if len(out) > MaxVolumes {
		out = out[:MaxVolumes]
	}
	return out
}

// Objects are what a caller gathered for one VM, in its namespace, each
// folded already (FromPVC, FromStorageClass, FromDataVolume,
// FromAttachment, FromEvent): the controller's cache holds them folded, and
// Fold folds the objects of a must-gather.
type Objects struct {
	// PVCs by name.
	PVCs map[string]PVC
	// Classes by name: the StorageClasses the claims name. A missing entry
	// is a class that does not exist.
	Classes map[string]StorageClass
	// DataVolumesRead says DataVolumes were read (CDI's CRD is served);
	// DataVolumes holds them by name.
	DataVolumesRead bool
	DataVolumes     map[string]DataVolume
	// ClaimsNotRead says the dump holds no claims at all: see
	// Facts.ClaimsNotRead.
	ClaimsNotRead bool
	// Attachments are the VolumeAttachments by the PersistentVolume they
	// attach, with the state of the Node they name.
	Attachments map[string][]Attachment
	// Events are the Warning Events of the VM's objects (the VM, its VMI,
	// its launcher pods, its claims and DataVolumes), in any order.
	Events []Event
}

// Assemble builds the facts of the volumes from the gathered objects.
func Assemble(vols []VolumeRef, o Objects) *Facts {
	f := &Facts{DataVolumesRead: o.DataVolumesRead, ClaimsNotRead: o.ClaimsNotRead}
	byObject := map[string][]Event{}
	for _, e := range o.Events {
		if !Read(e.Kind, e.Reason) {
			continue
		}
		switch e.Kind {
		case KindPVC, KindDataVolume:
			byObject[e.Kind+"/"+e.Name] = append(byObject[e.Kind+"/"+e.Name], e)
		case KindPod:
			f.Events = append(f.Events, e)
		}
	}
	f.Events = Newest(f.Events)
	for _, r := range vols {
		v := Volume{Name: r.Name, ClaimName: r.ClaimName, DataVolume: r.DataVolume, Hotplug: r.Hotplug}
		if p, ok := o.PVCs[r.ClaimName]; ok {
			if p.StorageClassName != "" {
				c, ok := o.Classes[p.StorageClassName]
				if !ok {
					c = StorageClass{Name: p.StorageClassName}
				}
				p.Class = &c
			}
			p.Events = Newest(byObject[KindPVC+"/"+p.Name])
			v.PVC = &p
			if p.VolumeName != "" {
				v.Attachments = slices.Clone(o.Attachments[p.VolumeName])
				slices.SortFunc(v.Attachments, func(a, b Attachment) int { return strings.Compare(a.Name, b.Name) })
			}
		}
		if r.DataVolume != "" && o.DataVolumesRead {
			if d, ok := o.DataVolumes[r.DataVolume]; ok {
				d.Events = Newest(byObject[KindDataVolume+"/"+d.Name])
				v.DV = &d
			}
		}
		f.Volumes = append(f.Volumes, v)
	}
	return f
}

// Fold folds the typed objects of one namespace (a must-gather's) into
// Objects: the claims, the StorageClasses, DataVolumes as unstructured
// content (dataVolumesRead says the dump holds DataVolumes at all), the
// VolumeAttachments with the Nodes they name (a nil nodes map: the dump
// holds no Nodes, and their state is not judged) and the Warning Events.
func Fold(pvcs []*corev1.PersistentVolumeClaim, classes []*storagev1.StorageClass, dataVolumesRead bool, dvs []map[string]any,
	vas []*storagev1.VolumeAttachment, nodes map[string]*corev1.Node, events []*corev1.Event) Objects {
	o := Objects{
		PVCs: map[string]PVC{}, Classes: map[string]StorageClass{}, DataVolumesRead: dataVolumesRead,
		DataVolumes: map[string]DataVolume{}, Attachments: map[string][]Attachment{},
	}
	for _, p := range pvcs {
		if p != nil {
			o.PVCs[p.Name] = FromPVC(p)
		}
	}
	for _, c := range classes {
		if c != nil {
			o.Classes[c.Name] = *FromStorageClass(c.Name, c)
		}
	}
	for _, d := range dvs {
		if dv := FromDataVolume(d); dv.Name != "" {
			o.DataVolumes[dv.Name] = dv
		}
	}
	for _, va := range vas {
		if va == nil || va.Spec.Source.PersistentVolumeName == nil {
			continue
		}
		a := FromAttachment(va)
		a.NodeMissing, a.NodeNotReady = NodeState(a.Node, nodes)
		pv := *va.Spec.Source.PersistentVolumeName
		o.Attachments[pv] = append(o.Attachments[pv], a)
	}
	for _, ev := range events {
		if ev != nil && ev.Type == corev1.EventTypeWarning {
			o.Events = append(o.Events, FromEvent(ev))
		}
	}
	return o
}

// NodeState says whether the node is missing or not Ready, as far as the
// nodes tell; a nil map tells nothing.
func NodeState(name string, nodes map[string]*corev1.Node) (missing, notReady bool) {
	if name == "" || nodes == nil {
		return false, false
	}
	n := nodes[name]
	if n == nil {
		return true, false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return false, c.Status != corev1.ConditionTrue
		}
	}
	return false, true
}

// FromPVC keeps what the rules read of a claim.
func FromPVC(pvc *corev1.PersistentVolumeClaim) PVC {
	p := PVC{
		Name: pvc.Name, Phase: string(pvc.Status.Phase), Created: pvc.CreationTimestamp.Time,
		VolumeName: pvc.Spec.VolumeName, SelectedNode: pvc.Annotations[SelectedNodeAnnotation],
	}
	if pvc.Spec.StorageClassName != nil {
		p.StorageClassName = *pvc.Spec.StorageClassName
	}
	if pvc.Spec.VolumeMode != nil {
		p.VolumeMode = string(*pvc.Spec.VolumeMode)
	}
	for _, m := range pvc.Spec.AccessModes {
		p.AccessModes = append(p.AccessModes, string(m))
	}
	for _, c := range pvc.Status.Conditions {
		p.Conditions = append(p.Conditions, Condition{
			Type: string(c.Type), Status: string(c.Status), Reason: c.Reason,
			Message: Cut(c.Message, MaxMessage), LastTransition: c.LastTransitionTime.Time,
		})
	}
	return p
}

// FromStorageClass keeps what the rules read of the class called name; sc
// is nil when it does not exist.
func FromStorageClass(name string, sc *storagev1.StorageClass) *StorageClass {
	c := &StorageClass{Name: name}
	if sc == nil {
		return c
	}
	c.Exists, c.Provisioner = true, sc.Provisioner
	c.BindingMode = string(storagev1.VolumeBindingImmediate)
	if sc.VolumeBindingMode != nil {
		c.BindingMode = string(*sc.VolumeBindingMode)
	}
	return c
}

// FromAttachment keeps what the rules read of a VolumeAttachment (the
// state of its Node is the caller's, NodeState).
func FromAttachment(va *storagev1.VolumeAttachment) Attachment {
	a := Attachment{Name: va.Name, Node: va.Spec.NodeName, Attached: va.Status.Attached}
	conv := func(e *storagev1.VolumeError) *VolumeError {
		if e == nil {
			return nil
		}
		return &VolumeError{Message: Cut(e.Message, MaxMessage), Time: e.Time.Time}
	}
	a.AttachError, a.DetachError = conv(va.Status.AttachError), conv(va.Status.DetachError)
	return a
}

// FromEvent keeps what the rules read of an Event.
func FromEvent(ev *corev1.Event) Event {
	e := Event{
		Kind: ev.InvolvedObject.Kind, Name: ev.InvolvedObject.Name, Reason: ev.Reason,
		Message: Cut(ev.Message, MaxMessage), Component: ev.Source.Component, Count: ev.Count,
		First: ev.FirstTimestamp.Time, Last: ev.LastTimestamp.Time,
	}
	if e.Component == "" {
		e.Component = ev.ReportingController
	}
	if ev.Series != nil {
		e.Count = max(e.Count, ev.Series.Count)
		if t := ev.Series.LastObservedTime.Time; t.After(e.Last) {
			e.Last = t
		}
	}
	// events.k8s.io/v1 writers set eventTime and no timestamps.
	if e.Last.IsZero() {
		e.Last = ev.EventTime.Time
	}
	if e.First.IsZero() {
		e.First = e.Last
	}
	return e
}

// CDI's final DataVolume phase and the condition the rules read
// (containerized-data-importer-api pkg/apis/core/v1beta1/types.go).
const (
	DataVolumeSucceeded = "Succeeded"
	DataVolumeRunning   = "Running"
)

// FromDataVolume keeps what the rules read of a DataVolume given as an
// unstructured object's content (cdi.kubevirt.io/v1beta1 DataVolume;
// kubevirt.io/containerized-data-importer-api types/datavolume.go).
func FromDataVolume(obj map[string]any) DataVolume {
	var d DataVolume
	if md, ok := obj["metadata"].(map[string]any); ok {
		d.Name, _ = md["name"].(string)
	}
	st, _ := obj["status"].(map[string]any)
	d.Phase, _ = st["phase"].(string)
	if d.Phase == DataVolumeSucceeded {
		// No rule reads more of a DataVolume whose import is done
		// (internal/verdict judgeDataVolume, dvImporting): a fleet's
		// DataVolumes are almost all Succeeded, and their conditions'
		// messages cost more than the rest of the projection.
		return d
	}
	d.Progress, _ = st["progress"].(string)
	switch n := st["restartCount"].(type) {
	case int64:
		d.RestartCount = int32(min(max(n, 0), 1<<31-1))
	case float64:
		d.RestartCount = int32(min(max(n, 0), 1<<31-1))
	}
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		var cd Condition
		cd.Type, _ = m["type"].(string)
		cd.Status, _ = m["status"].(string)
		cd.Reason, _ = m["reason"].(string)
		msg, _ := m["message"].(string)
		cd.Message = Cut(msg, MaxMessage)
		if s, ok := m["lastTransitionTime"].(string); ok {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				cd.LastTransition = t
			}
		}
		if cd.Type == DataVolumeRunning {
			d.Conditions = append(d.Conditions, cd)
		}
	}
	return d
}
