package policyset

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

func policy(name string, sel metav1.LabelSelector, o v1alpha1.PolicyOverrides) *v1alpha1.VMObservationPolicy {
	return &v1alpha1.VMObservationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "prod"},
		Spec:       v1alpha1.VMObservationPolicySpec{Selector: sel, Policy: o},
	}
}

func labelsSel(kv ...string) metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return metav1.LabelSelector{MatchLabels: m}
}

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func TestResolve(t *testing.T) {
	windows := policy("windows", labelsSel("os", "windows"), v1alpha1.PolicyOverrides{
		GuestAgentExpected: ptr.To(true), AgentGracePeriod: dur(10 * time.Minute),
	})
	everyVM := policy("every-vm", metav1.LabelSelector{}, v1alpha1.PolicyOverrides{
		GuestAgentExpected: ptr.To(false), HeartbeatTimeout: dur(3 * time.Minute),
	})
	windowsDB := policy("windows-db", labelsSel("os", "windows", "tier", "db"), v1alpha1.PolicyOverrides{
		AgentGracePeriod: dur(20 * time.Minute),
	})
	// Same specificity as windows, another value: a tie, broken by name.
	winLegacy := policy("z-windows-legacy", labelsSel("os", "windows"), v1alpha1.PolicyOverrides{
		GuestAgentExpected: ptr.To(false), LagGrace: dur(time.Minute),
	})
	// Same specificity, same value: no conflict.
	winSame := policy("windows-same", labelsSel("os", "windows"), v1alpha1.PolicyOverrides{GuestAgentExpected: ptr.To(true)})
	badSel := policy("bad", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "os", Operator: "Near"}}},
		v1alpha1.PolicyOverrides{GuestAgentExpected: ptr.To(false)})
	win := map[string]string{"os": "windows"}
	winDB := map[string]string{"os": "windows", "tier": "db"}

	for _, tc := range []struct {
		name      string
		own       *v1alpha1.PolicyOverrides
		policies  []*v1alpha1.VMObservationPolicy
		labels    map[string]string
		hasVM     bool
		want      *v1alpha1.PolicyOverrides
		sources   []v1alpha1.PolicySource
		overruled []string
	}{
		{name: "no policy, no spec: the flags", policies: nil, labels: win, hasVM: true},
		{name: "a policy that selects nothing", policies: []*v1alpha1.VMObservationPolicy{windows}, labels: map[string]string{"os": "linux"}, hasVM: true},
		{name: "no VM: no policy applies", policies: []*v1alpha1.VMObservationPolicy{everyVM}, hasVM: false},
		{
			name: "one policy", policies: []*v1alpha1.VMObservationPolicy{windows}, labels: win, hasVM: true,
			want:    &v1alpha1.PolicyOverrides{GuestAgentExpected: ptr.To(true), AgentGracePeriod: dur(10 * time.Minute)},
			sources: []v1alpha1.PolicySource{{Policy: "windows", Fields: []string{"agentGracePeriod", "guestAgentExpected"}}},
		},
		{
			name: "the more specific wins field by field; the namespace-wide one fills the rest", labels: winDB, hasVM: true,
			policies: []*v1alpha1.VMObservationPolicy{everyVM, windows, windowsDB},
			want: &v1alpha1.PolicyOverrides{
				GuestAgentExpected: ptr.To(true), AgentGracePeriod: dur(20 * time.Minute), HeartbeatTimeout: dur(3 * time.Minute),
			},
			sources: []v1alpha1.PolicySource{
				{Policy: "windows-db", Fields: []string{"agentGracePeriod"}},
				{Policy: "windows", Fields: []string{"guestAgentExpected"}},
				{Policy: "every-vm", Fields: []string{"heartbeatTimeout"}},
			},
		},
		{
			name: "spec.policy wins over every policy", labels: winDB, hasVM: true,
			own:      &v1alpha1.PolicyOverrides{AgentGracePeriod: dur(time.Hour)},
			policies: []*v1alpha1.VMObservationPolicy{windowsDB, windows},
			want:     &v1alpha1.PolicyOverrides{GuestAgentExpected: ptr.To(true), AgentGracePeriod: dur(time.Hour)},
			sources: []v1alpha1.PolicySource{
				{Fields: []string{"agentGracePeriod"}},
				{Policy: "windows", Fields: []string{"guestAgentExpected"}},
			},
		},
		{
			name: "a tie is broken by name and the loser named", labels: win, hasVM: true,
			policies: []*v1alpha1.VMObservationPolicy{winLegacy, windows, winSame},
			want: &v1alpha1.PolicyOverrides{
				GuestAgentExpected: ptr.To(true), AgentGracePeriod: dur(10 * time.Minute), LagGrace: dur(time.Minute),
			},
			sources: []v1alpha1.PolicySource{
				{Policy: "windows", Fields: []string{"agentGracePeriod", "guestAgentExpected"}},
				{Policy: "z-windows-legacy", Fields: []string{"lagGrace"}},
			},
			overruled: []string{"z-windows-legacy"},
		},
		{
			name: "a selector that cannot be read selects nothing", labels: win, hasVM: true,
			policies: []*v1alpha1.VMObservationPolicy{badSel},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The order the policies come in does not matter.
			for _, ps := range [][]*v1alpha1.VMObservationPolicy{tc.policies, reversed(tc.policies)} {
				got := Resolve(tc.own, ps, tc.labels, tc.hasVM)
				if !reflect.DeepEqual(got.Overrides, tc.want) {
					t.Errorf("overrides %+v, want %+v", got.Overrides, tc.want)
				}
				if tc.want == nil {
					if got.Status != nil {
						t.Errorf("status %+v, want none", got.Status)
					}
					continue
				}
				if got.Status == nil {
					t.Fatal("no status")
				}
				if !reflect.DeepEqual(got.Status.Sources, tc.sources) || !reflect.DeepEqual(got.Status.Overruled, tc.overruled) {
					t.Errorf("sources %+v overruled %v, want %+v %v", got.Status.Sources, got.Status.Overruled, tc.sources, tc.overruled)
				}
				if !reflect.DeepEqual(got.Status.Effective, tc.want) {
					t.Errorf("effective %+v", got.Status.Effective)
				}
			}
		})
	}
}

func reversed[T any](s []T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// Resolve never panics on any policy the API server could hold, nor
// aliases its inputs.
func TestResolveDoesNotAlias(t *testing.T) {
	p := policy("p", metav1.LabelSelector{}, v1alpha1.PolicyOverrides{AgentGracePeriod: dur(time.Minute)})
	got := Resolve(nil, []*v1alpha1.VMObservationPolicy{p}, nil, true)
	got.Overrides.AgentGracePeriod.Duration = time.Hour
	if p.Spec.Policy.AgentGracePeriod.Duration != time.Minute {
		t.Error("Resolve returned the policy's own field")
	}
}
