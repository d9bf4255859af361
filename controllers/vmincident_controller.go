package controllers

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/incident"
	"github.com/vmobs/vmobs/internal/metrics"
	"github.com/vmobs/vmobs/internal/runtimekit"
)

// +kubebuilder:rbac:groups=observability.vmobs.io,resources=vmincidents,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=observability.vmobs.io,resources=vmincidents/status,verbs=patch

// IncidentReconciler keeps one VMIncident per shared cause the Tracker
// names: it reads the groups the VMObservation reconciler's evaluations
// left in the Tracker and the stored VMIncidents, asks incident.Judge for
// each status, and writes only what changed. One key stands for all
// incidents: they are few, and opening one is one decision over the
// fleet's claims (docs/incidents.md).
type IncidentReconciler struct {
	// Client writes VMIncidents and reads them from the cache.
	Client client.Client
	// Tracker is the VMObservation reconciler's (Options.Incidents).
	Tracker *incident.Tracker
	// Policy is the Tracker's.
	Policy incident.Policy
	// Recorder posts the one Warning Event of an incident, in place of
	// its members' own.
	Recorder recorder.EventRecorder
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Metrics counts the writes; nil counts none.
	Metrics *metrics.Incidents
	// Coalesce is how long a change of the groups waits before it is
	// written, so that the changes of a burst are written together; 0 is
	// DefaultIncidentCoalesce.
	Coalesce time.Duration

	// wrote is the status last written of each incident: the cache may be
	// a write behind (a create's event comes before its status patch's),
	// and the same status is neither written nor announced twice. One
	// worker reads and writes it.
	wrote map[string]*v1alpha1.VMIncidentStatus
}

// DefaultIncidentCoalesce: the members of a burst join within about a
// second of each other; the incident alert waits a minute anyway.
const DefaultIncidentCoalesce = 2 * time.Second

// incidentsKey is the one request of the IncidentReconciler.
var incidentsKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "vmobs-incidents"}}

const incidentControllerName = "vmincident"

// SetupWithManager watches VMIncidents (a deleted one comes back, one of
// a cause gone is deleted) and the Tracker's changes.
func (r *IncidentReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	toKey := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{incidentsKey}
	})
	changes := source.TypedFunc[reconcile.Request](func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-r.Tracker.Changed():
					// A burst's members join one after the other: the
					// reconcile waits for them, so they cost one status
					// patch, not one each.
					q.AddAfter(incidentsKey, cmp.Or(r.Coalesce, DefaultIncidentCoalesce))
				}
			}
		}()
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(incidentControllerName).
		WatchesRawSource(runtimekit.WatchKind(mgr.GetCache(), &v1alpha1.VMIncident{}, toKey,
			predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		WatchesRawSource(changes).
		WithOptions(opts).
		Complete(r)
}

// Reconcile brings every VMIncident in line with the Tracker's groups.
func (r *IncidentReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	var stored v1alpha1.VMIncidentList
	if err := r.Client.List(ctx, &stored); err != nil {
		return ctrl.Result{}, err
	}
	byName := map[string]*v1alpha1.VMIncident{}
	for i := range stored.Items {
		byName[stored.Items[i].Name] = &stored.Items[i]
	}
	groups := r.Tracker.Groups()
	warm := r.Tracker.Warm()
	t := now()
	var next time.Time
	names := make([]string, 0, len(groups)+len(byName))
	members := map[string]incident.Group{}
	for _, g := range groups {
		names = append(names, g.Name)
		members[g.Name] = g
	}
	for n := range byName {
		if _, ok := members[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		g, have := members[n]
		obj := byName[n]
		var prev *v1alpha1.VMIncidentStatus
		cause := g.Cause
		if obj != nil {
			// A copy: write sets obj's status to the new one.
			prev = obj.Status.DeepCopy()
			if !have && obj.Status.Cause != nil {
				cause = *obj.Status.Cause
			}
		}
		if !have && !warm {
			// Not every VM was evaluated since the start: an incident
			// without members may only not have been seen yet.
			continue
		}
		if w := r.wrote[n]; w != nil && obj != nil && !equality.Semantic.DeepEqual(&obj.Status, w) {
			// The cache has not caught up with our last write.
			prev = w
		}
		st, at := incident.Judge(r.Policy, cause, g.Members, prev, t)
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
		if err := r.write(ctx, n, obj, st); err != nil {
			return ctrl.Result{}, err
		}
		r.announce(ctx, n, prev, st)
	}
	log.V(5).Info("Incidents reconciled", "groups", len(groups), "stored", len(byName))
	return requeueAt(next, t), nil
}

// write is the one place that writes a VMIncident: delete one that should
// not be, create one that should be, and patch a status only when it
// differs from the stored one.
func (r *IncidentReconciler) write(ctx context.Context, name string, obj *v1alpha1.VMIncident, st *v1alpha1.VMIncidentStatus) error {
	if r.wrote == nil {
		r.wrote = map[string]*v1alpha1.VMIncidentStatus{}
	}
	switch {
	case st == nil && obj == nil:
		delete(r.wrote, name)
		return nil
	case st == nil:
		delete(r.wrote, name)
		if err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &obj.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting VMIncident %s: %w", name, err)
		}
		r.Metrics.Wrote("delete")
		return nil
	case obj != nil && equality.Semantic.DeepEqual(&obj.Status, st),
		obj != nil && equality.Semantic.DeepEqual(r.wrote[name], st):
		return nil
	case obj != nil && obj.DeletionTimestamp != nil:
		return nil
	}
	if obj == nil {
		obj = &v1alpha1.VMIncident{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := r.Client.Create(ctx, obj); apierrors.IsAlreadyExists(err) {
			// The cache has not seen our create yet; its event brings
			// the incidents back here.
			return nil
		} else if err != nil {
			return fmt.Errorf("creating VMIncident %s: %w", name, err)
		}
		r.Metrics.Wrote("create")
	}
	base := obj.DeepCopy()
	obj.Status = *st
	if err := r.Client.Status().Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("writing the status of VMIncident %s: %w", name, err)
	}
	r.Metrics.Wrote("status")
	r.wrote[name] = st.DeepCopy()
	return nil
}

// announce posts the incident's Event when it opens (the Warning its
// members' transitions would each have posted, once) and when it
// resolves.
func (r *IncidentReconciler) announce(ctx context.Context, name string, prev, st *v1alpha1.VMIncidentStatus) {
	if r.Recorder == nil || st == nil {
		return
	}
	wasOpen := prev != nil && prev.State == v1alpha1.IncidentOpen
	regarding := &v1alpha1.VMIncident{ObjectMeta: metav1.ObjectMeta{Name: name}}
	cause := incident.Describe(*st.Cause)
	switch {
	case st.State == v1alpha1.IncidentOpen && !wasOpen:
		r.Recorder.Eventf(regarding, nil, corev1.EventTypeWarning, st.Reason, "Evaluate",
			"%s: %d VMs turned non-Healthy (%s) under %s: %s", st.Layer, st.MemberCount, st.Reason, cause, st.Message)
		ctrl.LoggerFrom(ctx).V(1).Info("Incident opened", "incident", name, "members", st.MemberCount)
	case st.State == v1alpha1.IncidentResolved && wasOpen:
		r.Recorder.Eventf(regarding, nil, corev1.EventTypeNormal, incident.ReasonIncidentResolved, "Evaluate",
			"no VM shows %s any longer", cause)
		ctrl.LoggerFrom(ctx).V(1).Info("Incident resolved", "incident", name)
	}
}
