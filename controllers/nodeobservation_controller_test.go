package controllers

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/cachestore"
	"github.com/vmobs/vmobs/internal/projection"
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

// TestNodeSignalsChanged: of a Node's updates, those that change what a
// NodeObservation reads pass; the kubelet's own status posts (which move
// only times the projection does not keep) do not.
func TestNodeSignalsChanged(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	base := func() *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "node-a", ResourceVersion: "1",
				Annotations: map[string]string{kubevirtv1.VirtHandlerHeartbeat: "2026-03-01T12:00:00Z"}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: at},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: at, LastTransitionTime: at},
			}},
		}
	}
	p := nodeSignalsChanged()
	for _, c := range []struct {
		name string
		edit func(*corev1.Node)
		want bool
	}{
		{"a kubelet status post", func(n *corev1.Node) {
			for i := range n.Status.Conditions {
				n.Status.Conditions[i].LastHeartbeatTime = metav1.NewTime(at.Add(time.Minute))
			}
		}, false},
		{"memory pressure", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionTrue }, true},
		{"not Ready", func(n *corev1.Node) { n.Status.Conditions[1].Status = corev1.ConditionUnknown }, true},
		{"a heartbeat", func(n *corev1.Node) { n.Annotations[kubevirtv1.VirtHandlerHeartbeat] = "2026-03-01T12:01:00Z" }, true},
		{"unschedulable", func(n *corev1.Node) { n.Labels = map[string]string{kubevirtv1.NodeSchedulable: "false"} }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := base()
			c.edit(n)
			n.ResourceVersion = "2"
			if got := p.Update(event.UpdateEvent{ObjectOld: projection.FromNode(base()), ObjectNew: projection.FromNode(n)}); got != c.want {
				t.Errorf("passes %v, want %v", got, c.want)
			}
		})
	}
}

// TestByNode: an object moving from one node to another wakes both
// NodeObservations.
func TestByNode(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	pod := func(node string) *projection.Pod {
		return projection.FromPod(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-handler-x", Labels: map[string]string{kubevirtv1.AppLabel: cachestore.HandlerApp}},
			Spec:       corev1.PodSpec{NodeName: node},
		})
	}
	h := byNode(func(o client.Object) string { return o.(*projection.Pod).NodeName.String() })
	h.Update(context.Background(), event.UpdateEvent{ObjectOld: pod("node-a"), ObjectNew: pod("node-b")}, q)
	if q.Len() != 2 {
		t.Fatalf("%d requests queued, want node-a and node-b", q.Len())
	}
}
