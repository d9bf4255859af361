package nodeverdict

import (
	"cmp"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

const (
	// DefaultIncidentThreshold is how many of a node's VMs must turn
	// non-Healthy under a node cause for the node to name an incident
	// (--node-incident-threshold).
	DefaultIncidentThreshold = 3
	// IncidentWindow: a VM is a member when its node layer turned at most
	// this long before the node's cause began (or after): a VM already
	// unhealthy before then has a cause of its own.
	IncidentWindow = 5 * time.Minute
	// IncidentRetention is how long a resolved incident stays in the
	// status, so that who was hit, and for how long, can still be read.
	IncidentRetention = time.Hour
	// maxMembers is the CRD's MaxItems of incident.members.
	maxMembers = 64
)

// causeLayers are the layers whose finding can be the node's cause: the
// node's own signals. The two source layers say something of the sources
// as much as of the node.
var causeLayers = [...]string{v1alpha1.NodeLayerKubelet, v1alpha1.NodeLayerVirtHandler}

// incident names the node as the shared cause of its VMs turning
// non-Healthy: it opens when a cause layer is Unknown, Degraded or Failed
// and at least threshold VMs of the node are too (their node layer
// turned within IncidentWindow of the cause), stays open while a cause
// holds (its members follow the VMs), and is Resolved when none holds,
// for IncidentRetention.
func incident(in Input, layers *v1alpha1.NodeLayers, now time.Time, res *Result) *v1alpha1.NodeIncident {
	var prev *v1alpha1.NodeIncident
	if in.Previous != nil {
		prev = in.Previous.Incident
	}
	var cause *v1alpha1.LayerStatus
	causeName := ""
	for _, name := range causeLayers {
		l := layers.Get(name)
		if l.Verdict.Severity() >= v1alpha1.VerdictUnknown.Severity() && (cause == nil || l.Verdict.Severity() > cause.Verdict.Severity()) {
			cause, causeName = l, name
		}
	}
	if cause == nil {
		if prev == nil {
			return nil
		}
		out := prev.DeepCopy()
		if out.State == v1alpha1.IncidentOpen {
			out.State, out.ResolvedTime = v1alpha1.IncidentResolved, &metav1.Time{Time: now}
		}
		if out.ResolvedTime == nil {
			// A resolved incident without its time (hand-edited): it
			// ends now.
			out.ResolvedTime = &metav1.Time{Time: now}
		}
		end := out.ResolvedTime.Add(IncidentRetention)
		if !now.Before(end) {
			return nil
		}
		res.next(end, now)
		return out
	}
	start := now
	if cause.LastTransitionTime != nil {
		start = cause.LastTransitionTime.Time
	}
	members := membersOf(in.VMs, start)
	if prev != nil && prev.State == v1alpha1.IncidentOpen {
		// The same incident while a cause holds, whichever: its cause,
		// start and first evidence are those it opened with.
		out := prev.DeepCopy()
		setMembers(out, members)
		return out
	}
	threshold := cmp.Or(in.IncidentThreshold, DefaultIncidentThreshold)
	if len(members) < threshold {
		if prev != nil && prev.ResolvedTime != nil && now.Before(prev.ResolvedTime.Add(IncidentRetention)) {
			res.next(prev.ResolvedTime.Add(IncidentRetention), now)
			return prev.DeepCopy()
		}
		return nil
	}
	out := &v1alpha1.NodeIncident{
		State: v1alpha1.IncidentOpen, Cause: cause.Reason, Layer: causeName, Message: cause.Message,
		StartTime: metav1.Time{Time: start},
	}
	if len(cause.Evidence) > 0 {
		ev := cause.Evidence[0]
		out.FirstEvidence = &ev
	}
	setMembers(out, members)
	return out
}

// membersOf lists the VMs, namespace/name, that are Unknown, Degraded or
// Failed and whose node layer turned no earlier than IncidentWindow before
// start (or whose time is not known).
func membersOf(vms []VM, start time.Time) []string {
	var out []string
	for _, vm := range vms {
		if vm.Verdict.Severity() < v1alpha1.VerdictUnknown.Severity() || vm.Verdict.Severity() > v1alpha1.VerdictFailed.Severity() {
			continue
		}
		if !vm.NodeSince.IsZero() && vm.NodeSince.Before(start.Add(-IncidentWindow)) {
			continue
		}
		out = append(out, vm.Namespace+"/"+vm.Name)
	}
	slices.Sort(out)
	return out
}

func setMembers(out *v1alpha1.NodeIncident, members []string) {
	out.MemberCount = int32(len(members))
	out.Members = slices.Clip(members[:min(len(members), maxMembers)])
	if len(out.Members) == 0 {
		out.Members = nil
	}
}
