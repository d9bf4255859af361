// Package scheme builds the runtime.Scheme vmobs uses everywhere: the
// built-in types, KubeVirt's, CDI's and VMObservation.
package scheme

import (
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kubevirtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// New returns a scheme that knows the built-in types, KubeVirt's core/v1,
// CDI's cdi.kubevirt.io/v1beta1 and observability.vmobs.io/v1alpha1.
func New() *apiruntime.Scheme {
	s := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{
		clientgoscheme.AddToScheme, kubevirtv1.AddToScheme, cdiv1.AddToScheme, v1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			// Only a programming error (a type registered twice) gets here.
			panic(err)
		}
	}
	return s
}
