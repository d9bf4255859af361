package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/incident"
	"github.com/vmobs/vmobs/internal/scheme"
)

// TestIncidentReconcilerWrites: an incident's VMIncident costs a create
// and a status write when it opens, with one Warning Event; nothing when
// nothing changed, nor when the cache is a write behind; a status write
// and one Normal Event when it resolves; then a look again when its
// retention ends.
func TestIncidentReconcilerWrites(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tracker := incident.NewTracker(incident.Policy{Threshold: 3}, nil)
	tracker.SetWarm()
	claim := func(i int, lost bool) {
		key := types.NamespacedName{Namespace: "prod", Name: fmt.Sprintf("vm-%d", i)}
		var claims []incident.Claim
		if lost {
			claims = []incident.Claim{{Cause: v1alpha1.IncidentCause{Kind: v1alpha1.CauseStorageClass, Name: "ceph-rbd"},
				Layer: v1alpha1.LayerStorage, Reason: v1alpha1.ReasonPVCLost, Since: now, Class: "ceph-rbd"}}
		}
		tracker.Observe(key, nil, claims)
	}
	writes := map[string]int{}
	stale := false
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithStatusSubresource(&v1alpha1.VMIncident{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				writes["create"]++
				return cl.Create(ctx, obj, opts...)
			},
			SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				writes["status"]++
				return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
			Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				writes["delete"]++
				return cl.Delete(ctx, obj, opts...)
			},
			List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if err := cl.List(ctx, list, opts...); err != nil {
					return err
				}
				if l, ok := list.(*v1alpha1.VMIncidentList); ok && stale {
					// The cache has the create, not the status.
					for i := range l.Items {
						l.Items[i].Status = v1alpha1.VMIncidentStatus{}
					}
				}
				return nil
			},
		}).Build()
	rec := events.NewFakeRecorder(10)
	clock := now
	r := &IncidentReconciler{Client: c, Tracker: tracker, Policy: incident.Policy{Threshold: 3}, Recorder: rec,
		Now: func() time.Time { return clock }}
	reconcile := func() ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(context.Background(), incidentsKey)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	drain := func() []string {
		var out []string
		for {
			select {
			case e := <-rec.Events:
				out = append(out, e)
			default:
				return out
			}
		}
	}
	check := func(step string, want map[string]int, wantEvents ...string) {
		t.Helper()
		for _, op := range []string{"create", "status", "delete"} {
			if writes[op] != want[op] {
				t.Errorf("%s: %d %s writes, want %d", step, writes[op], op, want[op])
			}
		}
		got := drain()
		if len(got) != len(wantEvents) {
			t.Fatalf("%s: Events %q, want %d", step, got, len(wantEvents))
		}
		for i, prefix := range wantEvents {
			if !strings.HasPrefix(got[i], prefix) {
				t.Errorf("%s: Event %q, want %s…", step, got[i], prefix)
			}
		}
		clear(writes)
	}

	for i := range 5 {
		claim(i, true)
	}
	// vm-0 and vm-1, evaluated before the incident opened, are woken and
	// evaluated again.
	claim(0, true)
	claim(1, true)
	reconcile()
	check("opened", map[string]int{"create": 1, "status": 1}, "Warning PVCLost")
	var inc v1alpha1.VMIncident
	if err := c.Get(context.Background(), types.NamespacedName{Name: "storageclass-ceph-rbd"}, &inc); err != nil {
		t.Fatal(err)
	}
	if inc.Status.State != v1alpha1.IncidentOpen || inc.Status.MemberCount != 5 {
		t.Fatalf("opened: %+v", inc.Status)
	}
	clock = now.Add(time.Minute)
	reconcile()
	check("unchanged", nil)
	stale = true
	reconcile()
	check("the cache a write behind", nil)
	stale = false

	for i := range 5 {
		claim(i, false)
	}
	clock = now.Add(10 * time.Minute)
	res := reconcile()
	check("resolved", map[string]int{"status": 1}, "Normal IncidentResolved")
	if res.RequeueAfter != incident.DefaultRetention {
		t.Errorf("resolved: look again in %s, want the retention %s", res.RequeueAfter, incident.DefaultRetention)
	}
	reconcile()
	check("resolved, unchanged", nil)
	clock = clock.Add(incident.DefaultRetention)
	reconcile()
	check("past the retention", map[string]int{"delete": 1})
	if err := c.Get(context.Background(), types.NamespacedName{Name: "storageclass-ceph-rbd"}, &inc); err == nil {
		t.Errorf("still there past its retention: %+v", inc.Status)
	}
}
