package controllers

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/cachestore"
	"github.com/vmobs/vmobs/internal/projection"
)

func testPolicy(name string, gen int64, sel metav1.LabelSelector, agent bool) *v1alpha1.VMObservationPolicy {
	return &v1alpha1.VMObservationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: name, Generation: gen},
		Spec:       v1alpha1.VMObservationPolicySpec{Selector: sel, Policy: v1alpha1.PolicyOverrides{GuestAgentExpected: ptr.To(agent)}},
	}
}

func TestPolicyStatus(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	win := metav1.LabelSelector{MatchLabels: map[string]string{"os": "windows"}}
	a := testPolicy("a-windows", 2, win, true)
	b := testPolicy("b-windows", 1, win, false)
	same := testPolicy("c-windows", 1, win, false)
	bad := testPolicy("bad", 3, metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "os", Operator: "Near"}}}, true)
	all := []*v1alpha1.VMObservationPolicy{a, b, same, bad}
	vms := []map[string]string{{"os": "windows"}, {"os": "windows", "tier": "db"}, {"os": "linux"}, nil}

	for _, tc := range []struct {
		p              *v1alpha1.VMObservationPolicy
		selected       int32
		overruled      []string
		ready, stalled metav1.ConditionStatus
		reason         string
		observedGen    int64
	}{
		{p: a, selected: 2, ready: metav1.ConditionTrue, stalled: metav1.ConditionFalse, reason: v1alpha1.ReasonPolicyInForce, observedGen: 2},
		// b and c agree with each other, and both lose to a.
		{p: b, selected: 2, overruled: []string{"a-windows"}, ready: metav1.ConditionTrue, stalled: metav1.ConditionFalse, reason: v1alpha1.ReasonPolicyInForce, observedGen: 1},
		{p: same, selected: 2, overruled: []string{"a-windows"}, ready: metav1.ConditionTrue, stalled: metav1.ConditionFalse, reason: v1alpha1.ReasonPolicyInForce, observedGen: 1},
		{p: bad, selected: 0, ready: metav1.ConditionFalse, stalled: metav1.ConditionTrue, reason: v1alpha1.ReasonInvalidSelector, observedGen: 3},
	} {
		t.Run(tc.p.Name, func(t *testing.T) {
			st := PolicyStatus(tc.p, all, vms, now)
			ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
			stalled := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionStalled)
			if st.SelectedVMs != tc.selected || !equalStrings(st.Overruled, tc.overruled) || st.ObservedGeneration != tc.observedGen ||
				ready == nil || ready.Status != tc.ready || ready.Reason != tc.reason || stalled == nil || stalled.Status != tc.stalled {
				t.Errorf("status %+v", st)
			}
			// The same world later: the same status, transition times kept,
			// so nothing is written again.
			prev := tc.p.DeepCopy()
			prev.Status = st
			if again := PolicyStatus(prev, all, vms, now.Add(time.Hour)); !equalStatus(again, st) {
				t.Errorf("a later pass changed the status:\n%+v\n%+v", again, st)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalStatus(a, b v1alpha1.VMObservationPolicyStatus) bool {
	return a.SelectedVMs == b.SelectedVMs && equalStrings(a.Overruled, b.Overruled) && len(a.Conditions) == len(b.Conditions) &&
		a.Conditions[0] == b.Conditions[0] && a.Conditions[1] == b.Conditions[1]
}

// A policy maps to the VMs of its namespace its selector matches, through
// the namespace index: not another namespace's, not the others.
func TestSelectedVMs(t *testing.T) {
	byNamespace := toolscache.Indexers{cachestore.IndexNamespace: toolscache.MetaNamespaceIndexFunc}
	s := &cachestore.Store{
		VMs:      toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, byNamespace),
		Policies: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, byNamespace),
	}
	for _, vm := range []struct {
		ns, name string
		labels   map[string]string
	}{{"prod", "w1", map[string]string{"os": "windows"}}, {"prod", "l1", map[string]string{"os": "linux"}}, {"dev", "w2", map[string]string{"os": "windows"}}} {
		v := &kubevirtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: vm.ns, Name: vm.name, Labels: vm.labels}}
		if err := s.VMs.(toolscache.Indexer).Add(projection.FromVM(v)); err != nil {
			t.Fatal(err)
		}
	}
	old := testPolicy("p", 1, metav1.LabelSelector{MatchLabels: map[string]string{"os": "linux"}}, true)
	updated := testPolicy("p", 2, metav1.LabelSelector{MatchLabels: map[string]string{"os": "windows"}}, true)
	got := selectedVMs(s, old, updated)
	if len(got) != 2 || got[0].String() != "prod/l1" || got[1].String() != "prod/w1" {
		t.Errorf("selected %v, want prod/l1 (the old selector's) and prod/w1 (the new one's)", got)
	}
}

// A reconcile applies the policy that selects the VM and shows it in
// status.policy; the next one, over the same world, writes nothing; a
// policy that stops selecting the VM takes its fields with it.
func TestReconcileAppliesTheSelectingPolicy(t *testing.T) {
	vm := wVMObj(func(v *kubevirtv1.VirtualMachine) { v.Labels = map[string]string{"os": "windows"} })
	pol := testPolicy("windows", 1, metav1.LabelSelector{MatchLabels: map[string]string{"os": "windows"}}, true)
	pol.Namespace = wNS
	other := testPolicy("linux", 1, metav1.LabelSelector{MatchLabels: map[string]string{"os": "linux"}}, false)
	other.Namespace = wNS
	c, w := fakeWorld(t, vm, wVMIObj(), wPodObj(), wNodeObj(), pol, other)
	r := wReconciler(c)
	wReconcile(t, r)
	st := wObservation(t, c).Status.Policy
	if st == nil || len(st.Sources) != 1 || st.Sources[0].Policy != "windows" || !equalStrings(st.Sources[0].Fields, []string{"guestAgentExpected"}) ||
		st.Effective == nil || st.Effective.GuestAgentExpected == nil || !*st.Effective.GuestAgentExpected {
		t.Fatalf("status.policy %+v, want guestAgentExpected from windows", st)
	}
	before := w.total()
	wReconcile(t, r)
	if w.total() != before {
		t.Errorf("a second reconcile of the same world wrote %v", w.counts)
	}

	// The VM is relabelled: the policy no longer selects it.
	cur := &kubevirtv1.VirtualMachine{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(vm), cur); err != nil {
		t.Fatal(err)
	}
	cur.Labels = map[string]string{"os": "plan9"}
	if err := c.Update(t.Context(), cur); err != nil {
		t.Fatal(err)
	}
	wReconcile(t, r)
	if st := wObservation(t, c).Status.Policy; st != nil {
		t.Errorf("status.policy %+v after the VM left the policy, want none", st)
	}
}
