package analyze

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/verdict"
)

// The analyzer derives a VM's policy as the controller does: the
// VMObservationPolicies of the input that select the VM, under the
// declared spec.policy (internal/policyset).
func TestAnalyzeAppliesPolicies(t *testing.T) {
	vm := func(name string, labels map[string]string) *kubevirtv1.VirtualMachine {
		return &kubevirtv1.VirtualMachine{
			TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: name, Labels: labels},
			Spec:       kubevirtv1.VirtualMachineSpec{RunStrategy: ptr.To(kubevirtv1.RunStrategyHalted)},
		}
	}
	windows := &v1alpha1.VMObservationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "windows"},
		Spec: v1alpha1.VMObservationPolicySpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"os": "windows"}},
			Policy:   v1alpha1.PolicyOverrides{GuestAgentExpected: ptr.To(true)},
		},
	}
	elsewhere := windows.DeepCopy()
	elsewhere.Namespace, elsewhere.Name = "dev", "elsewhere"
	objs := Objects{
		VMs:      []*kubevirtv1.VirtualMachine{vm("win", map[string]string{"os": "windows"}), vm("linux", map[string]string{"os": "linux"})},
		Policies: []*v1alpha1.VMObservationPolicy{windows, elsewhere},
	}
	got := map[string]*v1alpha1.PolicyStatus{}
	for _, o := range Analyze(objs, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), verdict.DefaultPolicy()) {
		got[o.Name] = o.Status.Policy
	}
	if p := got["win"]; p == nil || len(p.Sources) != 1 || p.Sources[0].Policy != "windows" || p.Effective == nil || !*p.Effective.GuestAgentExpected {
		t.Errorf("win: status.policy %+v, want guestAgentExpected from policy windows", p)
	}
	if p, ok := got["linux"]; !ok || p != nil {
		t.Errorf("linux: status.policy %+v (analysed: %v), want none", p, ok)
	}
}
