package nodeverdict

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vmobs/vmobs/api/v1alpha1"
)

// lostVMs are n VMs Unknown for their node since the node's loss, and one
// Degraded for a cause of its own since long before.
func lostVMs(n int, lostAgo time.Duration) []VM {
	var out []VM
	for i := range n {
		v := vm("vm-"+string(rune('a'+i)), v1alpha1.VerdictUnknown, v1alpha1.ReasonNodeNotReady)
		v.NodeSince = now.Add(-lostAgo)
		out = append(out, v)
	}
	own := vm("old-trouble", v1alpha1.VerdictDegraded, "LauncherPodNotReady")
	own.NodeSince = now.Add(-time.Hour)
	return append(out, own, vm("fine", v1alpha1.VerdictHealthy, "LauncherRunning"))
}

func lostNode(ago time.Duration) *corev1.Node {
	return node(cond(corev1.NodeReady, corev1.ConditionUnknown, ago))
}

func TestIncident(t *testing.T) {
	open := func(members ...string) *v1alpha1.NodeIncident {
		return &v1alpha1.NodeIncident{State: v1alpha1.IncidentOpen, Cause: v1alpha1.ReasonNodeNotReady, Layer: v1alpha1.NodeLayerKubelet,
			StartTime: metav1.NewTime(now.Add(-2 * time.Minute)), MemberCount: int32(len(members)), Members: members,
			FirstEvidence: &v1alpha1.Evidence{Kind: "Node", Name: "node-a", Field: "status.conditions[Ready].status", Value: "Unknown"}}
	}
	for _, c := range []struct {
		name string
		in   Input
		// want is nil for no incident; only the fields compared below.
		want *v1alpha1.NodeIncident
		next time.Time
	}{
		{
			name: "a lost node under three VMs opens an incident of the three",
			in:   input(lostNode(2*time.Minute), func(in *Input) { in.VMs = lostVMs(3, time.Minute) }),
			want: open("default/vm-a", "default/vm-b", "default/vm-c"),
		},
		{
			name: "under two VMs, below the threshold, none",
			in:   input(lostNode(2*time.Minute), func(in *Input) { in.VMs = lostVMs(2, time.Minute) }),
		},
		{
			name: "a threshold of two opens one for two",
			in: input(lostNode(2*time.Minute), func(in *Input) {
				in.VMs, in.IncidentThreshold = lostVMs(2, time.Minute), 2
			}),
			want: open("default/vm-a", "default/vm-b"),
		},
		{
			name: "VMs unhealthy with a healthy node are no incident",
			in:   input(node(), func(in *Input) { in.VMs = lostVMs(5, time.Minute) }),
		},
		{
			name: "an open incident stays open while the cause holds, its members following the VMs",
			in: input(lostNode(2*time.Minute), func(in *Input) {
				in.VMs = lostVMs(1, time.Minute)
				in.Previous = &v1alpha1.NodeObservationStatus{Incident: open("default/vm-a", "default/vm-b", "default/vm-c")}
			}),
			want: open("default/vm-a"),
		},
		{
			name: "the cause gone, the incident is resolved now and kept an hour",
			in: input(node(), func(in *Input) {
				in.Previous = &v1alpha1.NodeObservationStatus{Incident: open("default/vm-a", "default/vm-b", "default/vm-c")}
			}),
			want: func() *v1alpha1.NodeIncident {
				i := open("default/vm-a", "default/vm-b", "default/vm-c")
				i.State, i.ResolvedTime = v1alpha1.IncidentResolved, &metav1.Time{Time: now}
				return i
			}(),
			next: now.Add(IncidentRetention),
		},
		{
			name: "a resolved incident goes an hour after",
			in: input(node(), func(in *Input) {
				i := open("default/vm-a")
				i.State, i.ResolvedTime = v1alpha1.IncidentResolved, &metav1.Time{Time: now.Add(-IncidentRetention)}
				in.Previous = &v1alpha1.NodeObservationStatus{Incident: i}
			}),
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := Evaluate(c.in)
			got := res.Status.Incident
			switch {
			case c.want == nil && got != nil:
				t.Fatalf("incident %+v, want none", got)
			case c.want == nil:
			case got == nil:
				t.Fatalf("no incident, want %+v", c.want)
			default:
				if got.State != c.want.State || got.Cause != c.want.Cause || got.Layer != c.want.Layer ||
					!got.StartTime.Equal(&c.want.StartTime) || got.MemberCount != c.want.MemberCount ||
					!reflect.DeepEqual(got.Members, c.want.Members) || !reflect.DeepEqual(got.ResolvedTime, c.want.ResolvedTime) {
					t.Errorf("incident %+v, want %+v", got, c.want)
				}
				if got.State == v1alpha1.IncidentOpen && (got.FirstEvidence == nil || got.FirstEvidence.Field != "status.conditions[Ready].status") {
					t.Errorf("first evidence %+v, want the Node's Ready condition", got.FirstEvidence)
				}
			}
			if !c.next.IsZero() && !res.Next.Equal(c.next) && res.Next.After(c.next) {
				t.Errorf("next look at %v, want no later than %v", res.Next, c.next)
			}
			checkInvariants(t, c.in, res)
		})
	}
}
