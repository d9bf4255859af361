package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// TestDecideNodeWrite: a NodeObservation is created, deleted or has its
// status written only when that changes something; an unchanged status
// costs nothing.
func TestDecideNodeWrite(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	healthy := v1alpha1.NodeObservationStatus{Verdict: v1alpha1.VerdictHealthy, Reason: v1alpha1.ReasonKubeletReady,
		Layers: &v1alpha1.NodeLayers{Kubelet: v1alpha1.LayerStatus{Verdict: v1alpha1.VerdictHealthy, LastTransitionTime: &at}}}
	unknown := *healthy.DeepCopy()
	unknown.Verdict, unknown.Reason = v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeNotReady
	stored := func(st v1alpha1.NodeObservationStatus, deleting bool) *v1alpha1.NodeObservation {
		o := &v1alpha1.NodeObservation{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Status: st}
		if deleting {
			o.DeletionTimestamp = &at
		}
		return o
	}
	for _, c := range []struct {
		name        string
		found, keep bool
		stored      *v1alpha1.NodeObservation
		computed    v1alpha1.NodeObservationStatus
		want        nodeWrite
	}{
		{"a node with VMs and no NodeObservation", false, true, stored(v1alpha1.NodeObservationStatus{}, false), healthy, nodeCreate},
		{"the same status", true, true, stored(healthy, false), *healthy.DeepCopy(), nodeNone},
		{"a changed status", true, true, stored(healthy, false), unknown, nodeStatus},
		{"a node gone, its NodeObservation still there", true, false, stored(healthy, false), v1alpha1.NodeObservationStatus{}, nodeDelete},
		{"a node gone and no NodeObservation", false, false, stored(v1alpha1.NodeObservationStatus{}, false), v1alpha1.NodeObservationStatus{}, nodeNone},
		{"a NodeObservation being deleted", true, true, stored(healthy, true), unknown, nodeNone},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := decideNodeWrite(c.found, c.keep, c.stored, &c.computed); got != c.want {
				t.Errorf("decideNodeWrite = %d, want %d", got, c.want)
			}
		})
	}
}
