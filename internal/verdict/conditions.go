package verdict

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// conditions maps the verdicts onto kstatus (Ready, Reconciling, Stalled)
// and one condition per layer, always in that order. A condition keeps its
// previous lastTransitionTime while its status is unchanged, like
// meta.SetStatusCondition but with the engine's truncated now, so that an
// unchanged world gives a byte-identical status. observedGeneration is left
// to the caller.
func (e *engine) conditions(st *v1alpha1.VMObservationStatus, worst *v1alpha1.LayerStatus) []metav1.Condition {
	f := &e.f
	// Apart from the arena, which this keeps within a smaller size class.
	out := make([]metav1.Condition, 0, 7)
	var prev []metav1.Condition
	if f.in.Previous != nil {
		prev = f.in.Previous.Conditions
	}
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		c := metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.Time{Time: f.now}}
		for i := range prev {
			if prev[i].Type == typ && prev[i].Status == status && !prev[i].LastTransitionTime.IsZero() {
				if t := mt(prev[i].LastTransitionTime); !t.After(f.now) {
					c.LastTransitionTime = metav1.Time{Time: t}
				}
				break
			}
		}
		out = append(out, c)
	}

	v := st.Verdict
	set(v1alpha1.ConditionReady, readyStatus(v), st.Reason, st.Message)

	if v == v1alpha1.VerdictProgressing {
		set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, st.Reason, st.Message)
	} else {
		set(v1alpha1.ConditionReconciling, metav1.ConditionFalse, v1alpha1.ReasonNotProgressing, "")
	}

	switch {
	case v == v1alpha1.VerdictFailed:
		set(v1alpha1.ConditionStalled, metav1.ConditionTrue, st.Reason, st.Message)
	case v == v1alpha1.VerdictDegraded && worst.LastTransitionTime != nil:
		at := ceilSec(worst.LastTransitionTime.Add(f.pol.StalledAfter))
		if crossed(f.now, at) {
			set(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonDegradedPastThreshold,
				bound("Degraded ("+st.Reason+") since "+rfc(worst.LastTransitionTime.Time)+", longer than "+
					f.pol.StalledAfter.String()+": "+st.Message, maxMessage))
			break
		}
		e.deadline(at)
		set(v1alpha1.ConditionStalled, metav1.ConditionFalse, v1alpha1.ReasonNotStalled, "")
	default:
		set(v1alpha1.ConditionStalled, metav1.ConditionFalse, v1alpha1.ReasonNotStalled, "")
	}

	for _, l := range [...]struct {
		typ string
		ls  *v1alpha1.LayerStatus
	}{
		{v1alpha1.ConditionControlPlaneHealthy, &st.Layers.ControlPlane},
		{v1alpha1.ConditionNodeHealthy, &st.Layers.Node},
		{v1alpha1.ConditionGuestHealthy, &st.Layers.Guest},
		{v1alpha1.ConditionStorageHealthy, &st.Layers.Storage},
	} {
		set(l.typ, readyStatus(l.ls.Verdict), l.ls.Reason, l.ls.Message)
	}
	return out
}

// readyStatus: Healthy and Suspended are what the user asked for; Unknown
// stays Unknown.
func readyStatus(v v1alpha1.Verdict) metav1.ConditionStatus {
	switch v {
	case v1alpha1.VerdictHealthy, v1alpha1.VerdictSuspended:
		return metav1.ConditionTrue
	case v1alpha1.VerdictUnknown:
		return metav1.ConditionUnknown
	}
	return metav1.ConditionFalse
}

// launcherPods lists the VMI's launcher pods by name with their role.
func (e *engine) launcherPods() []v1alpha1.LauncherPod {
	f := &e.f
	if len(f.pods) == 0 {
		return nil
	}
	n := min(len(f.pods), maxLauncherPods)
	var out []v1alpha1.LauncherPod
	if n <= len(e.a.pods) {
		out = e.a.pods[:0:n]
	} else {
		out = make([]v1alpha1.LauncherPod, 0, n)
	}
	for i, p := range f.pods[:n] {
		ready, _, _, _ := podReadiness(p)
		out = append(out, v1alpha1.LauncherPod{
			Name: p.Name, UID: p.UID, Node: p.Spec.NodeName, Phase: bound(string(p.Status.Phase), maxPhase),
			Ready: ready, Role: f.roles[i], Restarts: podRestarts(p),
		})
	}
	return out
}

// maxLauncherPods is the CRD's MaxItems.
const maxLauncherPods = 16
