package controllers

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/cachestore"
	"github.com/vmobs/vmobs/internal/incident"
	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/runtimekit"
	"github.com/vmobs/vmobs/internal/storagefacts"
)

// incidentWake ties the VMObservation reconciler to the incident Tracker:
// each evaluation tells the Tracker the VM's claims before the write is
// decided, so that the VM's status points at its incident (a VMIncident,
// or its node's NodeObservation) in the same write as the transition that
// makes it a member, and its Warning Event is left to a VMIncident. The members evaluated before their incident
// opened (the first threshold-1 of a burst) are enqueued again, to point
// at it: the only writes an incident adds to its members'.
type incidentWake struct {
	tracker *incident.Tracker
	// rollout tells the revision of virt-handler on a node, and whether
	// a rollout is in progress.
	rollout incident.Rollout

	queue runtimekit.QueueHandle
}

// source hands the controller's queue over when the controller starts.
func (w *incidentWake) source() source.Source { return w.queue.Source() }

// observe sets st.Incident from the VM's claims and returns the layers
// whose Warning Events the incident speaks for. A nil w (incidents off)
// leaves st alone.
func (w *incidentWake) observe(key types.NamespacedName, obs *projection.Observation, st *v1alpha1.VMObservationStatus, storage *storagefacts.Facts) []string {
	if w == nil {
		return nil
	}
	a := w.tracker.Observe(key, obs.IncidentRef(), incident.ClaimsOf(st, storage, w.rollout))
	st.Incident = a.Incident
	if len(a.Wake) > 0 {
		q := w.queue.Queue()
		for _, k := range a.Wake {
			if q != nil {
				q.Add(reconcile.Request{NamespacedName: k})
			}
		}
	}
	return a.Quiet
}

// forget drops a deleted VM's claims.
func (w *incidentWake) forget(key types.NamespacedName) {
	if w != nil {
		w.tracker.Forget(key)
	}
}

// settled tells the Tracker that the initial lists were evaluated.
func (w *incidentWake) settled() {
	if w != nil {
		w.tracker.SetWarm()
	}
}

// handlerRollout reads virt-handler's revision on node from the cache: its
// pod's controller-revision-hash (the newest pod not being deleted, as a
// rollout replaces it), and whether another revision runs elsewhere. It
// is asked only of a VM whose node's virt-handler stopped beating.
func (r *Reconciler) handlerRollout(node string) (string, bool) {
	if r.Store == nil || r.Store.Pods == nil {
		return "", false
	}
	pods := r.Store.Pods
	handlers, err := cachestore.ByIndex[*projection.Pod](pods, cachestore.IndexHandlerNode, node)
	if err != nil {
		return "", false
	}
	var newest *projection.Pod
	for _, p := range handlers {
		if p.GetDeletionTimestamp() == nil && p.Revision() != "" &&
			(newest == nil || newest.GetCreationTimestamp().Time.Before(p.GetCreationTimestamp().Time)) {
			newest = p
		}
	}
	if newest == nil {
		return "", false
	}
	rev := newest.Revision()
	return rev, slices.ContainsFunc(pods.ListIndexFuncValues(cachestore.IndexHandlerRevision), func(other string) bool { return other != rev })
}
