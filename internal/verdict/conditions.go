package verdict

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// conditions maps the verdicts onto kstatus (Ready, Reconciling, Stalled)
// and one condition per layer, always in that order. observedGeneration is
// left to the caller.
func (e *engine) conditions(st *v1alpha1.VMObservationStatus, worst *v1alpha1.LayerStatus) []metav1.Condition {
	f := &e.f
	// Apart from the arena, which this keeps within a smaller size class.
	out := make([]metav1.Condition, 0, 7)
	var prev []metav1.Condition
	if f.in.Previous != nil {
		prev = f.in.Previous.Conditions
	}
	out, at := KStatus(out, prev, f.now, st.Verdict, st.Reason, st.Message, worst.LastTransitionTime, f.pol.StalledAfter)
	e.deadline(at)
	for _, l := range [...]struct {
		typ string
		ls  *v1alpha1.LayerStatus
	}{
		{v1alpha1.ConditionControlPlaneHealthy, &st.Layers.ControlPlane},
		{v1alpha1.ConditionNodeHealthy, &st.Layers.Node},
		{v1alpha1.ConditionGuestHealthy, &st.Layers.Guest},
		{v1alpha1.ConditionStorageHealthy, &st.Layers.Storage},
	} {
		out = SetCondition(out, prev, f.now, l.typ, readyStatus(l.ls.Verdict), l.ls.Reason, l.ls.Message)
	}
	return out
}

// KStatus appends to out the kstatus conditions of an overall verdict v
// (with its reason and message): Ready, Reconciling and Stalled, in that
// order. Stalled turns True at once for Failed, and for Degraded once the
// worst layer has been so (since degradedSince) for stalledAfter; until
// then, at is that instant, when the conditions change by themselves. The
// VMObservation and the NodeObservation both map their verdicts here.
func KStatus(out, prev []metav1.Condition, now time.Time, v v1alpha1.Verdict, reason, msg string, degradedSince *metav1.Time, stalledAfter time.Duration) (_ []metav1.Condition, at time.Time) {
	now = trunc(now)
	out = SetCondition(out, prev, now, v1alpha1.ConditionReady, readyStatus(v), reason, msg)
	if v == v1alpha1.VerdictProgressing {
		out = SetCondition(out, prev, now, v1alpha1.ConditionReconciling, metav1.ConditionTrue, reason, msg)
	} else {
		out = SetCondition(out, prev, now, v1alpha1.ConditionReconciling, metav1.ConditionFalse, v1alpha1.ReasonNotProgressing, "")
	}
	switch {
	case v == v1alpha1.VerdictFailed:
		out = SetCondition(out, prev, now, v1alpha1.ConditionStalled, metav1.ConditionTrue, reason, msg)
	case v == v1alpha1.VerdictDegraded && degradedSince != nil:
		stall := ceilSec(degradedSince.Add(stalledAfter))
		if crossed(now, stall) {
			out = SetCondition(out, prev, now, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonDegradedPastThreshold,
				bound("Degraded ("+reason+") since "+rfc(degradedSince.Time)+", longer than "+
					stalledAfter.String()+": "+msg, maxMessage))
			break
		}
		at = stall
		out = SetCondition(out, prev, now, v1alpha1.ConditionStalled, metav1.ConditionFalse, v1alpha1.ReasonNotStalled, "")
	default:
		out = SetCondition(out, prev, now, v1alpha1.ConditionStalled, metav1.ConditionFalse, v1alpha1.ReasonNotStalled, "")
	}
	return out, at
}

// SetCondition appends a condition to out. It keeps its previous
// lastTransitionTime (in prev) while its status is unchanged, like
// meta.SetStatusCondition but with a truncated now, so that an unchanged
// world gives a byte-identical status.
func SetCondition(out, prev []metav1.Condition, now time.Time, typ string, status metav1.ConditionStatus, reason, msg string) []metav1.Condition {
	c := metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.Time{Time: now}}
	for i := range prev {
		if prev[i].Type == typ && prev[i].Status == status && !prev[i].LastTransitionTime.IsZero() {
			if t := mt(prev[i].LastTransitionTime); !t.After(now) {
				c.LastTransitionTime = metav1.Time{Time: t}
			}
			break
		}
	}
	return append(out, c)
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
