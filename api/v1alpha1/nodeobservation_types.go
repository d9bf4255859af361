package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Node layer names, as status.layers of a NodeObservation spells them.
const (
	NodeLayerKubelet      = "kubelet"
	NodeLayerVirtHandler  = "virtHandler"
	NodeLayerDomainStats  = "domainStats"
	NodeLayerLauncherPath = "launcherPath"
)

// NodeLayerNames are a NodeObservation's layers in their fixed order (the
// order of ties in the overall verdict).
var NodeLayerNames = [...]string{NodeLayerKubelet, NodeLayerVirtHandler, NodeLayerDomainStats, NodeLayerLauncherPath}

// NodeLayers holds one verdict per layer of what a node gives its VMs.
type NodeLayers struct {
	// Kubelet reads the Node's Ready condition (which the node lifecycle
	// controller turns Unknown when the kubelet stops renewing its Lease)
	// and its MemoryPressure, DiskPressure and PIDPressure conditions.
	Kubelet LayerStatus `json:"kubelet"`
	// VirtHandler reads virt-handler's kubevirt.io/heartbeat annotation
	// and kubevirt.io/schedulable label on the Node, and virt-handler's
	// pod on the node.
	VirtHandler LayerStatus `json:"virtHandler"`
	// DomainStats says whether virt-handler's domain stats of the node's
	// VMs reach Prometheus, as the VMObservations of its VMs found.
	DomainStats LayerStatus `json:"domainStats"`
	// LauncherPath says whether the path virt-api → virt-handler on the
	// node → virt-launcher answers, as the guest probes of its VMs found.
	LauncherPath LayerStatus `json:"launcherPath"`
}

// Get is the layer called name, nil for a name that is not a node layer.
func (l *NodeLayers) Get(name string) *LayerStatus {
	if l == nil {
		return nil
	}
	switch name {
	case NodeLayerKubelet:
		return &l.Kubelet
	case NodeLayerVirtHandler:
		return &l.VirtHandler
	case NodeLayerDomainStats:
		return &l.DomainStats
	case NodeLayerLauncherPath:
		return &l.LauncherPath
	}
	return nil
}

// VMCounts counts the VMs on a node by their VMObservation's verdict.
// Every count is written, 0 included, so that the printer columns read 0
// rather than <none>.
type VMCounts struct {
	// Total is the number of VMIs whose status names the node.
	Total int32 `json:"total"`
	// Healthy counts the VMs whose VMObservation's verdict is Healthy.
	// +optional
	Healthy int32 `json:"healthy"`
	// Progressing counts the VMs whose verdict is Progressing.
	// +optional
	Progressing int32 `json:"progressing"`
	// Suspended counts the VMs whose verdict is Suspended.
	// +optional
	Suspended int32 `json:"suspended"`
	// Degraded counts the VMs whose verdict is Degraded.
	// +optional
	Degraded int32 `json:"degraded"`
	// Failed counts the VMs whose verdict is Failed.
	// +optional
	Failed int32 `json:"failed"`
	// Unknown counts the VMs whose verdict is Unknown.
	// +optional
	Unknown int32 `json:"unknown"`
	// Unobserved counts the VMIs on the node without a VMObservation (yet),
	// or whose VMObservation has no verdict yet.
	// +optional
	Unobserved int32 `json:"unobserved"`
}

// NodeObservationStatus is the observed health of a node as its VMs rely
// on it. Times are truncated to seconds, so the same world gives the same
// status.
type NodeObservationStatus struct {
	// Verdict is the worst verdict of the layers that have a basis (a
	// source that is not configured has none).
	// +optional
	Verdict Verdict `json:"verdict,omitempty"`
	// Reason is the worst layer's reason.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message names the worst layer and says why.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// Layers holds the verdict of each layer.
	// +optional
	Layers *NodeLayers `json:"layers,omitempty"`
	// VMs counts the node's VMs by verdict.
	// +optional
	VMs *VMCounts `json:"vms,omitempty"`
	// Incident names the node as the one cause of several of its VMs
	// turning non-Healthy, once, while it lasts and for an hour after
	// (docs/nodeobservation.md, Incident).
	// +optional
	Incident *NodeIncident `json:"incident,omitempty"`
	// Drain is the drain check's section: from the moment the node is
	// seen cordoned, the outcome predicted for each of its VMs and where
	// each stands; once the drain has ended, its outcome against the
	// prediction (docs/drain-check.md, "On the NodeObservation"). It stays
	// after the node is uncordoned, until the next cordon.
	// +optional
	Drain *NodeDrainStatus `json:"drain,omitempty"`
	// Conditions are Ready, Reconciling and Stalled (kstatus).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// IncidentState says whether an incident's cause still holds.
// +kubebuilder:validation:Enum=Open;Resolved
type IncidentState string

const (
	// IncidentOpen: the cause holds.
	IncidentOpen IncidentState = "Open"
	// IncidentResolved: the cause no longer holds.
	IncidentResolved IncidentState = "Resolved"
)

// NodeIncident is the node as the shared cause of several of its VMs
// turning non-Healthy: one statement instead of one per VM.
type NodeIncident struct {
	// State is Open while the node's cause holds, Resolved after.
	State IncidentState `json:"state"`
	// Cause is the reason of the node's layer that is the cause
	// (NodeNotReady, NodeAgentStale, NodePressure, ...).
	// +kubebuilder:validation:MaxLength=128
	Cause string `json:"cause"`
	// Layer is the NodeObservation layer of the cause: kubelet or
	// virtHandler.
	// +kubebuilder:validation:MaxLength=32
	Layer string `json:"layer"`
	// Message is the cause's layer message when the incident opened.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// FirstEvidence is the first field the cause rests on.
	// +optional
	FirstEvidence *Evidence `json:"firstEvidence,omitempty"`
	// StartTime is when the cause began: its layer's lastTransitionTime.
	StartTime metav1.Time `json:"startTime"`
	// ResolvedTime is when the cause stopped holding.
	// +optional
	ResolvedTime *metav1.Time `json:"resolvedTime,omitempty"`
	// MemberCount is how many VMs of the node the incident holds.
	MemberCount int32 `json:"memberCount"`
	// Members are the VMs, namespace/name, sorted, the first 64.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Members []string `json:"members,omitempty"`
}

// MaxDrainVMs bounds status.drain.vms: Kubernetes' default pod limit is
// 110 per node and OpenShift's 250; VMs past it are counted in omittedVMs
// and neither tracked nor compared.
const MaxDrainVMs = 250

// NodeDrainStatus is a drain of the node: what was predicted for each VM
// when the cordon was first seen, where each stands, and, once every VM
// has an outcome or the node is uncordoned, the outcome against the
// prediction.
type NodeDrainStatus struct {
	// Cordoned says the node is unschedulable (spec.unschedulable) now.
	Cordoned bool `json:"cordoned"`
	// PredictedAt is when vmobs first saw the node cordoned and predicted
	// the drain (internal/drain, as `kubectl vmobs drain-check` does).
	PredictedAt metav1.Time `json:"predictedAt"`
	// Predicted counts the VMs per predicted outcome (LiveMigrates,
	// RestartsElsewhere, StaysDown, BlocksDrain, LeftToExternal,
	// Unaffected, Unknown).
	// +optional
	Predicted map[string]int32 `json:"predicted,omitempty"`
	// Phases counts the VMs per phase now (Pending, Migrating, Migrated,
	// ShutDown, Restarted, Blocked).
	// +optional
	Phases map[string]int32 `json:"phases,omitempty"`
	// VMs are the node's VMIs at the prediction, by namespace and name.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=250
	VMs []NodeDrainVM `json:"vms,omitempty"`
	// OmittedVMs counts the VMs past the first 250.
	// +optional
	OmittedVMs int32 `json:"omittedVMs,omitempty"`
	// Notes are what bears on the whole prediction (objects that could
	// not be read), as `code: message`.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=512
	Notes []string `json:"notes,omitempty"`
	// Outcome is set when the drain has ended: every VM migrated, shut
	// down or restarted elsewhere, or the node uncordoned.
	// +optional
	Outcome *NodeDrainOutcome `json:"outcome,omitempty"`
}

// NodeDrainVM is one VM of a drain.
type NodeDrainVM struct {
	// Namespace of the VMI.
	// +kubebuilder:validation:MaxLength=253
	Namespace string `json:"namespace"`
	// Name of the VMI (and of its VM, when it has one).
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// UID of the VMI predicted for: another UID later is a new VMI.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	UID string `json:"uid,omitempty"`
	// Predicted is the outcome predicted for it.
	// +kubebuilder:validation:MaxLength=32
	Predicted string `json:"predicted"`
	// Reasons are the codes of every reason for the predicted outcome
	// (docs/drain-check.md); `kubectl vmobs drain-check` says them in words.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=64
	Reasons []string `json:"reasons,omitempty"`
	// Phase is where the VM stands in the drain.
	// +kubebuilder:validation:MaxLength=32
	Phase string `json:"phase"`
	// Message says what the phase was read from.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Message string `json:"message,omitempty"`
	// Observed is the outcome the drain had, once it ended.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Observed string `json:"observed,omitempty"`
}

// NodeDrainOutcome is a drain's outcome against its prediction.
type NodeDrainOutcome struct {
	// EndedAt is when vmobs saw the drain end.
	EndedAt metav1.Time `json:"endedAt"`
	// Right counts the VMs whose observed outcome is the predicted one.
	Right int32 `json:"right"`
	// Wrong counts the VMs whose observed outcome is another.
	Wrong int32 `json:"wrong"`
}

// NodeObservation is the derived health of one node that runs KubeVirt
// VMs or virt-handler: a verdict per layer (kubelet, virt-handler, domain
// stats, the launcher path), the reasons and evidence behind it, and its
// VMs counted by verdict. It is named after the node, owned by nothing,
// and deleted with the node (docs/nodeobservation.md).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nodeobs,categories=kubevirt
// +kubebuilder:printcolumn:name="Verdict",type=string,JSONPath=`.status.verdict`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`
// +kubebuilder:printcolumn:name="VMs",type=integer,JSONPath=`.status.vms.total`
// +kubebuilder:printcolumn:name="Degraded",type=integer,JSONPath=`.status.vms.degraded`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Incident",type=string,JSONPath=`.status.incident.state`,priority=1
// +kubebuilder:printcolumn:name="Kubelet",type=string,JSONPath=`.status.layers.kubelet.verdict`,priority=1
// +kubebuilder:printcolumn:name="Virt-Handler",type=string,JSONPath=`.status.layers.virtHandler.verdict`,priority=1
// +kubebuilder:printcolumn:name="Unknown",type=integer,JSONPath=`.status.vms.unknown`,priority=1
// +kubebuilder:printcolumn:name="Cordoned",type=boolean,JSONPath=`.status.drain.cordoned`,priority=1
type NodeObservation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status NodeObservationStatus `json:"status,omitempty"`
}

// NodeObservationList is a list of NodeObservations.
//
// +kubebuilder:object:root=true
type NodeObservationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeObservation `json:"items"`
}
