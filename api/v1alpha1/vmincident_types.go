package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// IncidentCauseKind is the kind of shared cause a VMIncident names.
// +kubebuilder:validation:Enum=StorageClass;CSIDriver;VirtAPI;DomainStats;VirtHandlerRollout
type IncidentCauseKind string

const (
	// CauseStorageClass: the storage layer of the members is not Healthy
	// and their claims name this StorageClass.
	CauseStorageClass IncidentCauseKind = "StorageClass"
	// CauseCSIDriver: the storage layer of the members is not Healthy and
	// their claims' StorageClasses, more than one, share this provisioner.
	CauseCSIDriver IncidentCauseKind = "CSIDriver"
	// CauseVirtAPI: the guest probes of the members fail on the path
	// through virt-api (GuestInfoUnreachable), on more than one node.
	CauseVirtAPI IncidentCauseKind = "VirtAPI"
	// CauseDomainStats: virt-handler's domain stats of the members are
	// missing from Prometheus (DomainStatsMissing).
	CauseDomainStats IncidentCauseKind = "DomainStats"
	// CauseVirtHandlerRollout: virt-handler stopped beating on the nodes
	// of the members, on more than one node, each running this revision
	// of virt-handler's DaemonSet (its pods' controller-revision-hash)
	// while another node runs another: a rollout in progress.
	CauseVirtHandlerRollout IncidentCauseKind = "VirtHandlerRollout"
)

// IncidentCause is what the members of an incident share.
type IncidentCause struct {
	// Kind is the kind of cause: StorageClass, CSIDriver, VirtAPI,
	// DomainStats or VirtHandlerRollout.
	Kind IncidentCauseKind `json:"kind"`
	// Name is the StorageClass's name, the CSI driver's (the
	// provisioner's) name, the virt-handler revision's, or empty for
	// VirtAPI and DomainStats, which are one source for the whole fleet.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// IncidentMember is a VM of an incident.
type IncidentMember struct {
	// Namespace of the VM.
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// Name of the VM.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// VMIncidentStatus is an incident as vmobs sees it: its cause, since
// when, the VMs it holds, and whether it still holds. Times are truncated
// to seconds.
type VMIncidentStatus struct {
	// State is Open while the cause holds (a member still shows it),
	// Resolved after.
	// +optional
	State IncidentState `json:"state,omitempty"`
	// Cause is what the members share.
	// +optional
	Cause *IncidentCause `json:"cause,omitempty"`
	// Layer is the VMObservation layer the members' finding is on
	// (storage, node, ...).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Layer string `json:"layer,omitempty"`
	// Reason is the members' layer reason of the first member
	// (VolumeAttachFailed, DomainStatsMissing, ...).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`
	// Message is the first member's layer message when the incident
	// opened.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// FirstEvidence is the first field the first member's finding rests
	// on.
	// +optional
	FirstEvidence *Evidence `json:"firstEvidence,omitempty"`
	// StartTime is when the first member's layer turned.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// ResolvedTime is when the last member stopped showing the cause.
	// +optional
	ResolvedTime *metav1.Time `json:"resolvedTime,omitempty"`
	// MemberCount is how many VMs the incident holds.
	// +optional
	MemberCount int32 `json:"memberCount"`
	// Members are the VMs, sorted by namespace and name, the first 64.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Members []IncidentMember `json:"members,omitempty"`
	// Conditions are Ready, Reconciling and Stalled (kstatus): an Open
	// incident is Ready=False (reason the cause kind), a Resolved one
	// Ready=True.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// The kinds of incident an IncidentRef points at.
const (
	// IncidentKindVMIncident: a shared cause that is not a node.
	IncidentKindVMIncident = "VMIncident"
	// IncidentKindNodeObservation: the VM's node is the cause; its
	// NodeObservation's status.incident names it.
	IncidentKindNodeObservation = "NodeObservation"
)

// IncidentRef points a VMObservation at the incident it is a member of.
type IncidentRef struct {
	// Kind is VMIncident (a shared cause that is not a node) or
	// NodeObservation (the node is the cause: its status.incident).
	// +kubebuilder:validation:Enum=VMIncident;NodeObservation
	Kind string `json:"kind"`
	// Name is the VMIncident's (or the NodeObservation's: the node's) name.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// VMIncident is one shared cause, other than a node, of several VMs
// turning non-Healthy at once: a StorageClass or CSI driver, virt-api, the
// domain-stats source. It is named after its cause, so the same cause is
// the same object across restarts, owned by nothing, and deleted an hour
// after it resolves (docs/incidents.md).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=vminc,categories=kubevirt
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Cause",type=string,JSONPath=`.status.cause.kind`
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.status.cause.name`
// +kubebuilder:printcolumn:name="VMs",type=integer,JSONPath=`.status.memberCount`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`
// +kubebuilder:printcolumn:name="Started",type=date,JSONPath=`.status.startTime`
// +kubebuilder:printcolumn:name="Resolved",type=date,JSONPath=`.status.resolvedTime`,priority=1
type VMIncident struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status VMIncidentStatus `json:"status,omitempty"`
}

// VMIncidentList is a list of VMIncidents.
//
// +kubebuilder:object:root=true
type VMIncidentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VMIncident `json:"items"`
}

// The kinds of this file register with the package's SchemeBuilder.
func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &VMIncident{}, &VMIncidentList{})
		return nil
	})
}
