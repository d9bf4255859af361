package controllers

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/projection"
)

type transition struct {
	layer    string
	from, to v1alpha1.Verdict
	reason   string
	message  string
}

// transitions lists the layers (and the overall verdict) whose verdict
// changed, in a fixed order.
func transitions(prev, next *v1alpha1.VMObservationStatus) []transition {
	var out []transition
	layer := func(s *v1alpha1.VMObservationStatus, name string) v1alpha1.LayerStatus {
		if l := s.Layers.Get(name); l != nil {
			return *l
		}
		return v1alpha1.LayerStatus{}
	}
	for _, name := range v1alpha1.LayerNames {
		p, n := layer(prev, name), layer(next, name)
		if p.Verdict != n.Verdict && n.Verdict != "" {
			out = append(out, transition{layer: name, from: p.Verdict, to: n.Verdict, reason: n.Reason, message: n.Message})
		}
	}
	if prev.Verdict != next.Verdict && next.Verdict != "" {
		out = append(out, transition{layer: "overall", from: prev.Verdict, to: next.Verdict, reason: next.Reason, message: next.Message})
	}
	return out
}

// recordTransitions emits an Event and counts a transition for each layer
// whose verdict changed. A layer's first verdict is an Event only when it
// is not Healthy: a controller starting over thousands of healthy VMs would
// otherwise post three Events for each (the scale harness saw them cost a
// third of the cold start and most of the memory held after it), and
// "None -> Healthy" tells a reader nothing the status does not.
//
// A Warning of a layer in quiet is not posted: the VM is a member of an
// incident, whose one Event speaks for every member (incident.go).
func (r *Reconciler) recordTransitions(obs *projection.Observation, prev, next *v1alpha1.VMObservationStatus, quiet []string) {
	var regarding *v1alpha1.VMObservation
	for _, t := range transitions(prev, next) {
		if r.Metrics != nil {
			r.Metrics.Observe(t.layer, string(t.from), string(t.to))
		}
		if r.Recorder == nil || t.layer == "overall" || (t.from == "" && t.to == v1alpha1.VerdictHealthy) {
			continue
		}
		eventType := corev1.EventTypeNormal
		switch t.to {
		case v1alpha1.VerdictDegraded, v1alpha1.VerdictFailed, v1alpha1.VerdictUnknown:
			eventType = corev1.EventTypeWarning
		}
		if eventType == corev1.EventTypeWarning && slices.Contains(quiet, t.layer) {
			continue
		}
		if regarding == nil {
			regarding = &v1alpha1.VMObservation{ObjectMeta: obs.ObjectMeta()}
		}
		r.Recorder.Eventf(regarding, nil, eventType, t.reason, "Evaluate", "%s: %s -> %s: %s", t.layer, verdictOrNone(t.from), t.to, t.message)
	}
}

func verdictOrNone(v v1alpha1.Verdict) string {
	if v == "" {
		return "None"
	}
	return string(v)
}
