// Package v1alpha1 holds the VMObservation API: one derived object per
// KubeVirt VM that says how alive the VM is, layer by layer, and why; and
// NodeObservation, one per node that runs VMs, for what the node gives them.
//
// +kubebuilder:object:generate=true
// +groupName=observability.vmobs.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "observability.vmobs.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	// It is apimachinery's builder, as in kubebuilder's current scaffold:
	// controller-runtime's pkg/scheme is deprecated, and an API package
	// should not need controller-runtime to be imported.
	SchemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &VMObservation{}, &VMObservationList{}, &NodeObservation{}, &NodeObservationList{})
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
