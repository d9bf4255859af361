package nodeverdict

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/drain"
	"github.com/vmobs/vmobs/internal/verdict"
)

// NeedsPrediction says whether the caller must predict the drain: the
// node is cordoned and the stored section is of no drain or of one the
// node was uncordoned after. A drain is predicted once, when its cordon is
// first seen: kubectl drain evicts right after it cordons, but a VMI takes
// seconds to shut down or migrate, so the first sight still sees each VMI
// where it ran. A prediction made later would judge VMs already moving.
func NeedsPrediction(cordoned bool, prev *v1alpha1.NodeDrainStatus) bool {
	return cordoned && (prev == nil || !prev.Cordoned)
}

// drainSection returns the drain section of the status and, when this
// instant ends the drain, its outcome against the prediction, for the
// caller to count once the status is written. A drain ends when every VM
// it names has migrated, shut down or restarted elsewhere, or when the
// node is uncordoned (a drain done, or abandoned: the outcome is what
// happened by then). The ended section stays, uncordoned or not, until the
// next cordon.
func drainSection(in Input) (*v1alpha1.NodeDrainStatus, *drain.Comparison) {
	var prev *v1alpha1.NodeDrainStatus
	if in.Previous != nil {
		prev = in.Previous.Drain
	}
	cordoned := in.Node.Spec.Unschedulable
	var st *v1alpha1.NodeDrainStatus
	switch {
	case cordoned && in.DrainPrediction != nil:
		st = fromPrediction(*in.DrainPrediction, in.Now)
	case prev == nil:
		// No drain seen (or, cordoned, a caller that did not predict:
		// nothing to track against).
		return nil, nil
	default:
		st = prev.DeepCopy()
	}
	st.Cordoned = cordoned
	if st.Outcome != nil {
		return st, nil
	}
	objects := in.DrainObjects
	objects.Node, objects.Now = in.Node.Name, in.Now
	pred := prediction(in.Node.Name, st)
	progress := drain.Track(pred, objects)
	st.Phases = map[string]int32{}
	over := true
	for i, p := range progress.VMs {
		st.VMs[i].Phase, st.VMs[i].Message = string(p.Phase), verdict.Bound(p.Message, 256)
		st.Phases[string(p.Phase)]++
		over = over && (p.Phase == drain.PhaseMigrated || p.Phase == drain.PhaseShutDown || p.Phase == drain.PhaseRestarted)
	}
	if len(st.Phases) == 0 {
		st.Phases = nil
	}
	if cordoned && !over {
		return st, nil
	}
	c := drain.Compare(pred, objects)
	for i, v := range c.VMs {
		st.VMs[i].Observed = string(v.Observed)
	}
	st.Outcome = &v1alpha1.NodeDrainOutcome{EndedAt: metav1.NewTime(in.Now.UTC().Truncate(time.Second)), Right: int32(c.Right), Wrong: int32(c.Wrong)}
	return st, &c
}

// fromPrediction is the section of a new drain: the prediction's outcomes
// and reasons' codes per VM, the first MaxDrainVMs of them.
func fromPrediction(p drain.Prediction, now time.Time) *v1alpha1.NodeDrainStatus {
	st := &v1alpha1.NodeDrainStatus{PredictedAt: metav1.NewTime(now.UTC().Truncate(time.Second)), VMs: []v1alpha1.NodeDrainVM{}}
	for _, v := range p.VMs {
		if len(st.VMs) == v1alpha1.MaxDrainVMs {
			st.OmittedVMs++
			continue
		}
		vm := v1alpha1.NodeDrainVM{Namespace: v.Namespace, Name: v.Name, UID: v.UID, Predicted: string(v.Outcome)}
		for _, r := range v.Reasons {
			if len(vm.Reasons) < 16 {
				vm.Reasons = append(vm.Reasons, r.Code)
			}
		}
		if st.Predicted == nil {
			st.Predicted = map[string]int32{}
		}
		st.Predicted[string(v.Outcome)]++
		st.VMs = append(st.VMs, vm)
	}
	for _, n := range p.Notes {
		if len(st.Notes) < 8 {
			st.Notes = append(st.Notes, verdict.Bound(fmt.Sprintf("%s: %s", n.Code, n.Message), 512))
		}
	}
	return st
}

// prediction rebuilds, from the section, what drain.Track and
// drain.Compare read of the prediction: each VM's key, UID and outcome.
func prediction(node string, st *v1alpha1.NodeDrainStatus) drain.Prediction {
	p := drain.Prediction{Node: node, VMs: make([]drain.VMPrediction, 0, len(st.VMs))}
	for _, v := range st.VMs {
		p.VMs = append(p.VMs, drain.VMPrediction{Namespace: v.Namespace, Name: v.Name, UID: v.UID, Outcome: drain.Outcome(v.Predicted)})
	}
	return p
}
