package controllers

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/history"
	"github.com/vmobs/vmobs/internal/projection"
	"github.com/vmobs/vmobs/internal/verdict"
)

// stored reads obs's VMObservation from the API server: the status
// whole, of which the cache keeps neither the history (up to 4 KiB a VM,
// docs/history.md) nor the layers' messages (projection.Observation). Nil
// when there is none of obs's UID (deleted, or deleted and recreated). A
// reconcile reads it at most once, for a status write or a verdict kept
// through the lag grace, and not at all when it writes nothing.
func (r *Reconciler) stored(ctx context.Context, obs *projection.Observation) (*v1alpha1.VMObservation, error) {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	stored := &v1alpha1.VMObservation{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: obs.GetNamespace(), Name: obs.Name}, stored); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the stored VMObservation: %w", err)
	}
	if stored.UID != obs.GetUID() {
		return nil, nil
	}
	return stored, nil
}

// addHistory sets st's status.history for a write that was decided: the
// stored history (of stored, the object read whole) with the entries
// since, the transitions counted from the stored verdicts. It returns the
// entries added.
func addHistory(stored *v1alpha1.VMObservation, prev, st *v1alpha1.VMObservationStatus, in verdict.Input) []v1alpha1.HistoryEntry {
	if stored != nil {
		// The stored status itself, not the cache's view of it: the cache
		// may not hold our last write yet, and a transition counted from
		// its older verdict would not follow the history's last one.
		prev = &stored.Status
	} else {
		// None, or another object of that name (deleted and recreated):
		// its history is not this one's.
		p := *prev
		p.History = nil
		prev = &p
	}
	return history.Apply(prev, st, in).New
}

// logHistory writes one log line per history entry a status write added,
// oldest first, with the stable keys of history.LogKeys (docs/history.md),
// for log stores that keep a VM's timeline longer than its status does.
func logHistory(log logr.Logger, added []v1alpha1.HistoryEntry) {
	for i := len(added) - 1; i >= 0; i-- {
		log.Info(history.LogMessage, history.LogKeys(&added[i])...)
	}
}
