// Package storagefacts holds what the storage layer reads of one VM's
// volumes: the PersistentVolumeClaims and CDI DataVolumes behind them, the
// StorageClasses they name, the VolumeAttachments of their
// PersistentVolumes and the Warning Events about all of these and about the
// VM's own objects. The caller (the controller from its cache, `vmobs
// analyze` from a must-gather) gathers the objects and hands them to
// Assemble; the engine (internal/verdict) reads the facts. Like
// internal/vmifacts it imports neither side, and it holds only what the
// rules read, so the facts are small and change only when a rule's input
// does.
package storagefacts

import (
	"slices"
	"strings"
	"time"
)

// Facts are one VM's storage facts. A nil *Facts means the caller did not
// read storage objects at all (a pasted VMI, a controller with the storage
// source off): the storage layer then judges only what the VM and VMI say.
type Facts struct {
	// DataVolumesRead says DataVolumes were read: CDI's CRD is served.
	// Without it a volume's DataVolume is unknown, not missing.
	DataVolumesRead bool
	// ClaimsNotRead says no claim was read at all (a paste of Events
	// without the objects they describe): a volume's missing claim is
	// unknown, not missing.
	ClaimsNotRead bool
	// Volumes are the VM's volumes backed by a claim, by name.
	Volumes []Volume
	// Events are the Warning Events of the VM's launcher pods that the
	// rules read (Read), newest first (at most MaxEvents).
	Events []Event
}

// Volume is one volume of the VM that a PersistentVolumeClaim backs
// (persistentVolumeClaim, dataVolume, or a hotplugged one of either).
type Volume struct {
	// Name is the volume's name in the VM's spec.
	Name string
	// ClaimName is the PVC's name (a dataVolume volume's claim has the
	// DataVolume's name, kv:pkg/storage/types/pvc.go).
	ClaimName string
	// DataVolume is the DataVolume's name when the volume is a dataVolume.
	DataVolume string
	// Hotplug says the volume was hotplugged into the running VMI.
	Hotplug bool
	// PVC is the claim, nil when it does not exist (yet).
	PVC *PVC
	// DV is the DataVolume, nil when it does not exist or is not read.
	DV *DataVolume
	// Attachments are the VolumeAttachments of the claim's
	// PersistentVolume, by name.
	Attachments []Attachment
}

// PVC is what is read of a PersistentVolumeClaim.
type PVC struct {
	Name string
	// Phase is status.phase: Pending, Bound or Lost.
	Phase string
	// Created is metadata.creationTimestamp: a claim's wait for binding
	// counts from it (the PV binder writes no time of its own).
	Created time.Time
	// StorageClassName is spec.storageClassName ("" for none).
	StorageClassName string
	// Class is the StorageClass it names; nil when none is named.
	Class *StorageClass
	// AccessModes and VolumeMode are spec.accessModes and spec.volumeMode.
	AccessModes []string
	VolumeMode  string
	// VolumeName is spec.volumeName: the bound PersistentVolume.
	VolumeName string
	// SelectedNode is the volume.kubernetes.io/selected-node annotation:
	// the scheduler's choice for a WaitForFirstConsumer claim.
	SelectedNode string
	// Conditions are status.conditions (Resizing,
	// FileSystemResizePending, ModifyingVolume, ...).
	Conditions []Condition
	// Events are the claim's Warning Events, newest first.
	Events []Event
}

// StorageClass is what is read of the StorageClass a claim names.
type StorageClass struct {
	Name string
	// Exists is false when the claim names a class that does not exist.
	Exists bool
	// Provisioner and BindingMode are the class's provisioner and
	// volumeBindingMode (Immediate or WaitForFirstConsumer).
	Provisioner string
	BindingMode string
}

// NoProvisioner is the provisioner of a StorageClass whose volumes an
// administrator creates by hand: nothing provisions its claims.
const NoProvisioner = "kubernetes.io/no-provisioner"

// WaitForFirstConsumer is the volume binding mode that binds a claim only
// once a pod that uses it is scheduled.
const WaitForFirstConsumer = "WaitForFirstConsumer"

// DataVolume is what is read of a CDI DataVolume
// (cdi.kubevirt.io/v1beta1).
type DataVolume struct {
	Name string
	// Phase is status.phase (Pending, ImportScheduled, ImportInProgress,
	// CloneInProgress, Succeeded, Failed, WaitForFirstConsumer, ...).
	Phase string
	// Progress is status.progress ("45.20%", "N/A").
	Progress string
	// RestartCount is status.restartCount: how often the importer,
	// cloner or uploader pod restarted.
	RestartCount int32
	// Conditions are status.conditions Running (the only one a rule
	// reads: Bound and Ready repeat the phase). A Succeeded DataVolume
	// keeps its name and phase only.
	Conditions []Condition
	// Events are the DataVolume's Warning Events, newest first.
	Events []Event
}

// Condition is a condition of a claim or a DataVolume.
type Condition struct {
	Type, Status, Reason, Message string
	// LastTransition is its lastTransitionTime (a DataVolume's
	// lastHeartbeatTime moves on every update and is not kept).
	LastTransition time.Time
}

// Cond is the condition of the type, nil when absent.
func Cond(conds []Condition, typ string) *Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// Attachment is what is read of a VolumeAttachment (storage.k8s.io/v1):
// the attach-detach controller creates it for a PV on a node, the CSI
// driver's external attacher writes its status.
type Attachment struct {
	Name string
	// Node is spec.nodeName.
	Node string
	// Attached is status.attached.
	Attached bool
	// AttachError and DetachError are status.attachError and
	// .detachError; nil when none.
	AttachError, DetachError *VolumeError
	// NodeMissing says the Node does not exist; NodeNotReady that its
	// Ready condition is not True.
	NodeMissing, NodeNotReady bool
}

// VolumeError is a VolumeAttachment's attach or detach error.
type VolumeError struct {
	Message string
	Time    time.Time
}

// Event is what is kept of a Warning Event.
type Event struct {
	// Kind and Name are the involvedObject's.
	Kind, Name string
	// Reason is the event's reason (FailedMount, FailedAttachVolume,
	// ProvisioningFailed, ...).
	Reason string
	// Message is cut to MaxMessage bytes.
	Message string
	// Component is who reported it: source.component, else
	// reportingComponent (kubelet, attachdetach-controller,
	// persistentvolume-controller, the CSI provisioner's name, ...).
	Component string
	// Count is how often it was seen (count, or series.count).
	Count int32
	// First and Last are when it was first and last seen.
	First, Last time.Time
}

// Unread names Warning Events of one object that no storage rule can read
// again, whatever comes (internal/verdict UnreadEvents): all of them, or
// those last seen before Before. The controller's Event store forgets
// them.
type Unread struct {
	// Kind and Name are the involved object's.
	Kind, Name string
	// All is every event of the object; else those last seen before
	// Before.
	All    bool
	Before time.Time
}

// Covers says e is one of the events u names.
func (u Unread) Covers(e Event) bool {
	return e.Kind == u.Kind && e.Name == u.Name && (u.All || e.Last.Before(u.Before))
}

const (
	// MaxEvents is how many Warning Events are kept per involved object,
	// newest first.
	MaxEvents = 3
	// MaxMessage is how much of an event's message is kept.
	MaxMessage = 256
	// MaxVolumes is how many volumes the facts hold; a VM with more is
	// judged on the first ones by name.
	MaxVolumes = 16
)

// Newest sorts events newest first (Newer) and keeps at most MaxEvents of
// them, their messages cut; the slice is reused.
func Newest(evs []Event) []Event {
	for i := range evs {
		evs[i].Message = Cut(evs[i].Message, MaxMessage)
	}
	slices.SortStableFunc(evs, Newer)
	if len(evs) > MaxEvents {
		evs = evs[:MaxEvents:MaxEvents]
	}
	return evs
}

// Newer orders events newest first: by last seen (lastTimestamp, or the
// series' last observed time, or eventTime: FromEvent), then by reason. It
// is negative when a comes first. The controller's Event store keeps the
// first MaxEvents of each involved object in this order, as Newest does.
func Newer(a, b Event) int {
	if c := b.Last.Compare(a.Last); c != 0 {
		return c
	}
	return strings.Compare(a.Reason, b.Reason)
}

// Cut shortens s to at most n bytes on a rune boundary, marking the cut.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	cut := n - len(ellipsis)
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + ellipsis
}
