// Package drain predicts what draining a node does to every VM on it, the
// way KubeVirt answers the drain's evictions, and compares the prediction
// with what a drain did. It is pure: the caller gathers the objects and
// passes the time in. docs/drain-check.md describes the outcomes and every
// reason, with the KubeVirt source each rule follows.
//
// Its result types are JSON-friendly and have DeepCopy methods, so an API
// status can carry them (a NodeObservation's drain section).
// +kubebuilder:object:generate=true
package drain

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Outcome is what a drain of the node does to one VM.
type Outcome string

const (
	// OutcomeLiveMigrates: the eviction is refused, the VMI is marked for
	// evacuation and KubeVirt's evacuation controller migrates it
	// (kv:pkg/virt-controller/watch/drain/evacuation/evacuation.go).
	OutcomeLiveMigrates Outcome = "LiveMigrates"
	// OutcomeRestartsElsewhere: the launcher pod is evicted, the VMI shuts
	// down, and the VM's controller starts a new VMI on another node
	// (runStrategy Always).
	OutcomeRestartsElsewhere Outcome = "RestartsElsewhere"
	// OutcomeStaysDown: the launcher pod is evicted, the VMI shuts down and
	// nothing starts it again (or its restart has no node to run on).
	OutcomeStaysDown Outcome = "StaysDown"
	// OutcomeBlocksDrain: the eviction is refused for as long as the drain
	// retries it, by KubeVirt's eviction admitter or by a
	// PodDisruptionBudget; the drain never finishes on its own.
	OutcomeBlocksDrain Outcome = "BlocksDrain"
	// OutcomeLeftToExternal: evictionStrategy External: the admitter marks
	// the VMI for evacuation and refuses the eviction, and KubeVirt leaves
	// the VMI to an external controller; the drain waits for it.
	OutcomeLeftToExternal Outcome = "LeftToExternal"
	// OutcomeUnaffected: the VMI is not running on the node any more
	// (final, or being deleted): the drain has nothing to do with it.
	OutcomeUnaffected Outcome = "Unaffected"
	// OutcomeUnknown: an input the outcome depends on is missing or
	// unreadable; the reasons say which.
	OutcomeUnknown Outcome = "Unknown"
)

// Outcomes are every outcome, in the order tables and matrices show them.
var Outcomes = []Outcome{
	OutcomeLiveMigrates, OutcomeRestartsElsewhere, OutcomeStaysDown, OutcomeBlocksDrain,
	OutcomeLeftToExternal, OutcomeUnaffected, OutcomeUnknown,
}

// Reason is one reason for a VM's outcome, or a note beside it.
type Reason struct {
	// Code is a CamelCase word from the table in docs/drain-check.md.
	Code string `json:"code"`
	// Message says it for people, naming the objects involved.
	Message string `json:"message"`
	// Source is the code the rule follows (kv:path for KubeVirt's).
	// +optional
	Source string `json:"source,omitempty"`
}

// VMPrediction is the predicted outcome of a drain for one VMI on the node.
type VMPrediction struct {
	// Namespace and Name of the VMI (and of its VM, when it has one).
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// UID of the VMI predicted for: a VMI of the same name with another UID
	// after the drain is a restart.
	// +optional
	UID string `json:"uid,omitempty"`
	// Outcome is what the drain does to the VM.
	Outcome Outcome `json:"outcome"`
	// Reasons are every reason that leads to Outcome, not only the first.
	Reasons []Reason `json:"reasons,omitempty"`
	// Notes are what bears on the drain's progress but not its outcome
	// (migration limits, inputs that could not be read, a PodDisruptionBudget
	// the admitter makes moot).
	// +optional
	Notes []Reason `json:"notes,omitempty"`
	// EvictionStrategy is the strategy KubeVirt applies to the VMI, and
	// EvictionStrategySource where it comes from: spec, cluster (the
	// KubeVirt CR) or default (KubeVirt's default, None).
	EvictionStrategy       string `json:"evictionStrategy,omitempty"`
	EvictionStrategySource string `json:"evictionStrategySource,omitempty"`
	// RunStrategy is the VM's runStrategy; empty for a VMI without a VM.
	// +optional
	RunStrategy string `json:"runStrategy,omitempty"`
}

// Key is namespace/name.
func (p VMPrediction) Key() string { return p.Namespace + "/" + p.Name }

// Migrations is what KubeVirt's migration limits make of the migrations a
// drain starts. The limits order the migrations; they change no outcome.
type Migrations struct {
	// Count is the number of VMs predicted to live-migrate.
	Count int `json:"count"`
	// PerNode and PerCluster are parallelOutboundMigrationsPerNode and
	// parallelMigrationsPerCluster, as the KubeVirt CR sets them or
	// KubeVirt's defaults (2 and 5, kv:pkg/virt-config/virt-config.go).
	PerNode    int `json:"perNode"`
	PerCluster int `json:"perCluster"`
	// Rounds is how many waves of migrations the drain takes at least:
	// Count over the smaller limit, rounded up.
	Rounds int `json:"rounds"`
}

// Prediction is the predicted outcome of draining a node, per VM.
type Prediction struct {
	// Node is the node drained.
	Node string `json:"node"`
	// Time is when the prediction was made (the now passed in).
	Time metav1.Time `json:"time"`
	// VMs are the VMIs on the node, by namespace and name.
	VMs []VMPrediction `json:"vms"`
	// Counts are the number of VMs per outcome (outcomes with none left out).
	Counts map[Outcome]int `json:"counts,omitempty"`
	// Migrations are the live migrations the drain starts.
	Migrations Migrations `json:"migrations"`
	// TargetNodes is the number of other nodes a VMI could move to
	// (schedulable, Ready, kubevirt.io/schedulable=true), before each VMI's
	// own selectors and tolerations.
	TargetNodes int `json:"targetNodes"`
	// Notes are what bears on the whole node (the node not found, objects
	// that could not be read).
	// +optional
	Notes []Reason `json:"notes,omitempty"`
}
