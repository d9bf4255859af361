package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// HistoryEvent names what a history entry records: a verdict transition
// or a life event of the VM's objects.
// +kubebuilder:validation:Enum=VerdictChanged;VMIStarted;VMIFinished;VMIReplaced;MigrationStarted;MigrationSucceeded;MigrationFailed;MigrationAborted;LauncherOOMKilled;LauncherEvicted;NodeNotReady;NodeReady;AgentConnected;AgentDisconnected
type HistoryEvent string

// The history's events. Only VerdictChanged is a transition of vmobs' own
// verdicts; the others are life events read from the timestamps KubeVirt
// and Kubernetes put on their objects (docs/history.md).
const (
	// EventVerdictChanged: a layer's verdict, or the overall one, changed.
	EventVerdictChanged HistoryEvent = "VerdictChanged"
	// EventVMIStarted: the VMI entered Running.
	EventVMIStarted HistoryEvent = "VMIStarted"
	// EventVMIFinished: the VMI entered Succeeded or Failed; the entry's
	// reason is the VMI's status.reason.
	EventVMIFinished HistoryEvent = "VMIFinished"
	// EventVMIReplaced: a new VMI of the VM replaced the one the status
	// named (a restart); the message names the old VMI's UID.
	EventVMIReplaced HistoryEvent = "VMIReplaced"
	// EventMigrationStarted: a migration of the VMI was created.
	EventMigrationStarted HistoryEvent = "MigrationStarted"
	// EventMigrationSucceeded: a migration of the VMI succeeded.
	EventMigrationSucceeded HistoryEvent = "MigrationSucceeded"
	// EventMigrationFailed: a migration of the VMI failed; the entry's
	// reason is KubeVirt's failure reason.
	EventMigrationFailed HistoryEvent = "MigrationFailed"
	// EventMigrationAborted: a migration of the VMI was aborted on request.
	EventMigrationAborted HistoryEvent = "MigrationAborted"
	// EventLauncherOOMKilled: a container of a launcher pod was killed for
	// running out of memory.
	EventLauncherOOMKilled HistoryEvent = "LauncherOOMKilled"
	// EventLauncherEvicted: a launcher pod was evicted.
	EventLauncherEvicted HistoryEvent = "LauncherEvicted"
	// EventNodeNotReady: the VMI's node turned NotReady (or Unknown).
	EventNodeNotReady HistoryEvent = "NodeNotReady"
	// EventNodeReady: the VMI's node turned Ready after the VMI was created.
	EventNodeReady HistoryEvent = "NodeReady"
	// EventAgentConnected: the guest agent connected.
	EventAgentConnected HistoryEvent = "AgentConnected"
	// EventAgentDisconnected: the guest agent, connected before, was seen
	// disconnected.
	EventAgentDisconnected HistoryEvent = "AgentDisconnected"
)

// LayerOverall names the overall verdict in a history entry, beside the
// layers.
const LayerOverall = "overall"

// HistoryEntry is one entry of status.history.
type HistoryEntry struct {
	// Time is when it happened, as the objects say (a phase transition, a
	// condition's transition, a container's end), else when vmobs saw it.
	Time metav1.Time `json:"time"`
	// Event is what happened.
	Event HistoryEvent `json:"event"`
	// Layer is the layer it concerns: controlPlane, node, guest, storage,
	// or overall for a transition of the overall verdict.
	// +kubebuilder:validation:Enum=controlPlane;node;guest;storage;overall
	Layer string `json:"layer"`
	// From is the verdict before a VerdictChanged.
	// +optional
	From Verdict `json:"from,omitempty"`
	// To is the verdict after a VerdictChanged.
	// +optional
	To Verdict `json:"to,omitempty"`
	// Reason is the new verdict's reason, or KubeVirt's word for a life
	// event (the VMI's status.reason, a migration's failure reason).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`
	// Message is the new verdict's message or a life event's detail, cut.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Message string `json:"message,omitempty"`
	// Object points at the object the entry was read from, as Kind/name
	// (in the VMObservation's namespace unless the kind is cluster scoped).
	// +optional
	// +kubebuilder:validation:MaxLength=320
	Object string `json:"object,omitempty"`
	// Field is the field of Object the entry was read from.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Field string `json:"field,omitempty"`
}

// History is the VM's flight recorder: the newest entries, newest first,
// and how many older ones were dropped to keep it within its bounds (the
// policy's historyLimit entries and 4 KiB).
type History struct {
	// Entries are the newest entries, newest first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Entries []HistoryEntry `json:"entries,omitempty"`
	// Dropped counts the entries dropped from the ring since the
	// VMObservation was created.
	// +optional
	Dropped int64 `json:"dropped,omitempty"`
}

// VMLife is the VM's uptime and restarts.
type VMLife struct {
	// Started is when the current VMI entered Running.
	// +optional
	Started *metav1.Time `json:"started,omitempty"`
	// Restarts counts the VMIs that replaced another VMI of this VM since
	// the VMObservation was created (a stop and a later start is not a
	// restart).
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
	// LastRestart describes the newest restart.
	// +optional
	LastRestart *Restart `json:"lastRestart,omitempty"`
	// EndedVMI is the VMI this VM ran last, kept while it has none (from
	// a VMI's end to its replacement, which may be seen apart), so that the
	// replacement counts as a restart; cleared when the VM is stopped on
	// purpose.
	// +optional
	EndedVMI *EndedVMI `json:"endedVMI,omitempty"`
}

// EndedVMI is what the status last said of a VMI that is gone.
type EndedVMI struct {
	// UID is the VMI's UID.
	UID types.UID `json:"uid"`
	// Phase is its last phase the status recorded.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Reason is its last status.reason the status recorded.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`
}

// Restart is one replacement of a VMI by the next.
type Restart struct {
	// Time is when the new VMI was created.
	Time metav1.Time `json:"time"`
	// OldUID is the replaced VMI's UID.
	// +optional
	OldUID types.UID `json:"oldUID,omitempty"`
	// Phase is the replaced VMI's last phase the status recorded.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Reason is the replaced VMI's last status.reason the status recorded.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`
	// Layer is the layer that caused the restart: guest for a VMI that
	// Succeeded (the guest shut down), node for one that Failed, controlPlane
	// for one replaced while running (a restart or stop asked of KubeVirt).
	// +kubebuilder:validation:Enum=controlPlane;node;guest
	Layer string `json:"layer"`
}
