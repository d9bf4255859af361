package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// VMObservationPolicySpec selects VMs of the policy's namespace and sets
// the policy defaults of their VMObservations.
type VMObservationPolicySpec struct {
	// Selector selects VirtualMachines of this namespace by their labels
	// (metadata.labels of the VirtualMachine). An empty selector selects
	// every VM of the namespace.
	Selector metav1.LabelSelector `json:"selector"`

	// Policy holds the defaults for the selected VMs. A VMObservation's own
	// spec.policy wins over them, field by field; they win over the
	// controller's flags. Where several policies select a VM, the most
	// specific sets a field (docs/policy.md).
	Policy PolicyOverrides `json:"policy"`
}

// VMObservationPolicyStatus says which VMs the policy selects and whether
// another policy overrules it.
type VMObservationPolicyStatus struct {
	// ObservedGeneration is the metadata.generation the status was computed
	// for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// SelectedVMs is how many VirtualMachines of the namespace the selector
	// selects.
	// +optional
	SelectedVMs int32 `json:"selectedVMs,omitempty"`
	// Overruled names the policies that select some of the same VMs with
	// the same specificity, set some of the same fields, and win the tie by
	// name: for those fields and VMs this policy's value is not used.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	Overruled []string `json:"overruled,omitempty"`
	// Conditions: Ready is True once the policy is in force; with a
	// selector that cannot be read, Ready is False and Stalled (kstatus)
	// True, reason InvalidSelector.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// VMObservationPolicy condition reasons (its Ready and Stalled
// conditions; a VMObservation's reasons are in reasons.go).
const (
	// ReasonPolicyInForce is Ready=True's reason: the policy applies to
	// the VMs it selects.
	ReasonPolicyInForce = "InForce"
	// ReasonInvalidSelector is the reason of Ready=False and Stalled=True:
	// the selector cannot be read, and the policy selects nothing.
	ReasonInvalidSelector = "InvalidSelector"
)

// VMObservationPolicy sets policy defaults for the VMObservations of the
// VMs it selects in its namespace, so that a fleet's policy is declared
// once rather than in every VMObservation.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vmobspolicy,categories=kubevirt
// +kubebuilder:printcolumn:name="Selected",type=integer,JSONPath=`.status.selectedVMs`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VMObservationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VMObservationPolicySpec   `json:"spec"`
	Status VMObservationPolicyStatus `json:"status,omitempty"`
}

// VMObservationPolicyList is a list of VMObservationPolicies.
//
// +kubebuilder:object:root=true
type VMObservationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VMObservationPolicy `json:"items"`
}

// PolicyStatus is where a VMObservation's policy comes from: the fields
// set by spec.policy or by a VMObservationPolicy (every other field is the
// controller's flag), each with its source.
type PolicyStatus struct {
	// Effective holds the fields set by spec.policy or a policy, with the
	// values in force.
	// +optional
	Effective *PolicyOverrides `json:"effective,omitempty"`
	// Sources lists, for spec.policy and each VMObservationPolicy that sets
	// a field of this VM, the fields it sets; spec first, then the policies
	// from the most specific.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Sources []PolicySource `json:"sources,omitempty"`
	// Overruled names the policies that select this VM and set a field
	// another policy of the same specificity sets too, and lose the tie by
	// name.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	Overruled []string `json:"overruled,omitempty"`
}

// PolicySource is one source of a VM's policy and the fields it sets.
type PolicySource struct {
	// Policy is the VMObservationPolicy's name; empty for the
	// VMObservation's own spec.policy.
	// +optional
	Policy string `json:"policy,omitempty"`
	// Fields are the JSON names of the spec.policy fields it sets, e.g.
	// guestAgentExpected.
	// +listType=atomic
	Fields []string `json:"fields"`
}

// The kinds of this file register with the package's SchemeBuilder.
func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &VMObservationPolicy{}, &VMObservationPolicyList{})
		return nil
	})
}
