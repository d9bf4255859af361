package controllers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestHandlerRollout reads virt-handler's revision on a node, and whether
// a rollout is in progress, from the pods in the cache.
func TestHandlerRollout(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	handler := func(name, node, rev string, created time.Time, deleting bool) client.Object {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: name, CreationTimestamp: metav1.Time{Time: created},
				Labels: map[string]string{"kubevirt.io": "virt-handler", "controller-revision-hash": rev}},
			Spec: corev1.PodSpec{NodeName: node},
		}
		if deleting {
			p.DeletionTimestamp, p.Finalizers = &metav1.Time{Time: created.Add(time.Hour)}, []string{"test"}
		}
		return p
	}
	for _, tc := range []struct {
		name       string
		pods       []client.Object
		rev        string
		inProgress bool
	}{
		{"one revision", []client.Object{handler("a", "node-a", "r1", t0, false), handler("b", "node-b", "r1", t0, false)}, "r1", false},
		{"a rollout", []client.Object{handler("a", "node-a", "r2", t0, false), handler("b", "node-b", "r1", t0, false)}, "r2", true},
		{"an old revision during a rollout", []client.Object{handler("a", "node-a", "r1", t0, false), handler("b", "node-b", "r2", t0, false)}, "r1", true},
		// The DaemonSet replaces the pod: the old one, being deleted,
		// neither speaks for the node nor keeps the rollout going.
		{"the new pod replaces the old on the node", []client.Object{
			handler("a-old", "node-a", "r1", t0, true), handler("a-new", "node-a", "r2", t0.Add(time.Minute), false),
			handler("b", "node-b", "r2", t0, false),
		}, "r2", false},
		{"no virt-handler on the node", []client.Object{handler("b", "node-b", "r1", t0, false)}, "", false},
		{"a pod without a revision", []client.Object{handler("a", "node-a", "", t0, false), handler("b", "node-b", "r1", t0, false)}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := fakeWorld(t, tc.pods...)
			r := wReconciler(c)
			r.Store = storeOf(t, c)
			rev, inProgress := r.handlerRollout("node-a")
			if rev != tc.rev || inProgress != tc.inProgress {
				t.Fatalf("handlerRollout(node-a) = %q, %v; want %q, %v", rev, inProgress, tc.rev, tc.inProgress)
			}
		})
	}
}
