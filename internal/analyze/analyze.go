package analyze

import (
	"fmt"
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/history"
	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/policyset"
	"github.com/vmobs/vmobs/internal/verdict"
)

// Result is what AnalyzeAll found: the groups it evaluated, the
// VMObservations, and what it left out.
type Result struct {
	// Groups are the VMs found, sorted by namespace and name.
	Groups []VMGroup
	// Observations are the VMObservations computed, in the same order.
	// A group whose evaluation failed has none (see Notes).
	Observations []v1alpha1.VMObservation
	// Notes lists objects left out of the grouping and evaluations that
	// failed.
	Notes []Note
}

// Analyze evaluates every VM in objs at now with policy (and each VM's
// declared spec.policy overrides) and returns one complete VMObservation
// per VM, sorted by namespace and name. The same objects and now give the
// same output.
func Analyze(objs Objects, now time.Time, policy verdict.Policy) []v1alpha1.VMObservation {
	return AnalyzeAll(objs, now, policy).Observations
}

// AnalyzeAll is Analyze that also returns the groups and the notes.
func AnalyzeAll(objs Objects, now time.Time, policy verdict.Policy) Result {
	groups, notes := GroupVMs(objs)
	res := Result{Groups: groups, Notes: notes}
	for i := range groups {
		obs, err := Observe(&groups[i], now, policy)
		if err != nil {
			res.Notes = append(res.Notes, Note{
				Object:  "VM " + groups[i].Namespace + "/" + groups[i].Name,
				Message: err.Error() + "; not analysed",
			})
			continue
		}
		res.Observations = append(res.Observations, obs)
	}
	return res
}

// Observe evaluates one group into a complete VMObservation. It returns an
// error only if the engine panics, so that one VM cannot stop the analysis
// of the others.
func Observe(g *VMGroup, now time.Time, policy verdict.Policy) (obs v1alpha1.VMObservation, err error) {
	// The policy as the controller derives it: spec.policy, then the
	// policies that select the VM, then the flags.
	var own *v1alpha1.PolicyOverrides
	if g.Observation != nil {
		own = g.Observation.Spec.Policy
	}
	var vmLabels map[string]string
	if g.VM != nil {
		vmLabels = g.VM.Labels
	}
	pol := policyset.Resolve(own, g.Policies, vmLabels, g.VM != nil)
	policy = policy.WithOverrides(pol.Overrides)
	in := g.Input
	in.Policy, in.Now = policy, now
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("verdict engine failed: %v", r)
		}
	}()
	res := verdict.Evaluate(in)
	res.Status.Policy = pol.Status
	// The flight recorder, as the controller keeps it: a dumped
	// VMObservation's history carried forward with what the objects show.
	var prev *v1alpha1.VMObservationStatus
	if g.Observation != nil {
		prev = &g.Observation.Status
	}
	history.Apply(prev, &res.Status, in)
	return newObservation(g, res.Status), nil
}

// newObservation builds the object the controller would write.
func newObservation(g *VMGroup, status v1alpha1.VMObservationStatus) v1alpha1.VMObservation {
	obs := v1alpha1.VMObservation{
		TypeMeta: metav1.TypeMeta{
			APIVersion: v1alpha1.GroupVersion.String(),
			Kind:       "VMObservation",
		},
		ObjectMeta: metav1.ObjectMeta{Namespace: g.Namespace, Name: g.Name},
		Spec:       v1alpha1.VMObservationSpec{VMName: g.Name},
		Status:     status,
	}
	if d := g.Observation; d != nil {
		obs.Labels = maps.Clone(d.Labels)
		if d.Spec.Policy != nil {
			obs.Spec.Policy = d.Spec.Policy.DeepCopy()
		}
		obs.Status.ObservedGeneration = d.Generation
	} else {
		// What the controller would create.
		obs.Labels = map[string]string{membership.ManagedByLabel: membership.ManagedByValue}
	}
	// The owner the controller gives it; a pasted object without a UID
	// cannot be an owner.
	if ref, ok := membership.Owner(g.VM, g.VMI); ok && ref.UID != "" {
		obs.OwnerReferences = []metav1.OwnerReference{ref}
	}
	return obs
}
