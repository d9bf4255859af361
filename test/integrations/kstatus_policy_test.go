package integrations

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/controllers"
	"github.com/vmobs/vmobs/internal/testsupport/kstatus"
)

// TestKstatusOfPolicies reads VMObservationPolicies, with the status the
// controller computes, as Flux and cli-utils do: Current once in force at
// the spec's generation, InProgress while the status is older than the
// spec, Failed with a selector that cannot be read.
func TestKstatusOfPolicies(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	policy := func(gen int64, sel metav1.LabelSelector) *v1alpha1.VMObservationPolicy {
		return &v1alpha1.VMObservationPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "VMObservationPolicy"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "windows", Generation: gen},
			Spec:       v1alpha1.VMObservationPolicySpec{Selector: sel, Policy: v1alpha1.PolicyOverrides{GuestAgentExpected: ptr.To(true)}},
		}
	}
	windows := metav1.LabelSelector{MatchLabels: map[string]string{"os": "windows"}}
	invalid := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "os", Operator: "Near"}}}
	vms := []map[string]string{{"os": "windows"}}

	inForce := policy(1, windows)
	inForce.Status = controllers.PolicyStatus(inForce, nil, vms, now)
	edited := inForce.DeepCopy()
	edited.Generation = 2
	broken := policy(3, invalid)
	broken.Status = controllers.PolicyStatus(broken, nil, vms, now)

	for _, tc := range []struct {
		name string
		p    *v1alpha1.VMObservationPolicy
		want status.Status
	}{
		{"in force", inForce, status.CurrentStatus},
		{"spec edited, status not yet", edited, status.InProgressStatus},
		{"invalid selector", broken, status.FailedStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := kstatus.Of(t, tc.p)
			if res.Status != tc.want {
				t.Errorf("kstatus %s (%q), want %s", res.Status, res.Message, tc.want)
			}
		})
	}
}
