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

// addHistory sets st's status.history for a write that was decided: the
// stored history, read from the API server (the cache does not keep it: up
// to 4 KiB a VM, docs/history.md), with the entries since, the transitions
// counted from the stored verdicts. It returns the
// entries added. It costs a GET per status write and nothing on a reconcile
// that writes nothing.
func (r *Reconciler) addHistory(ctx context.Context, obs *projection.Observation, prev, st *v1alpha1.VMObservationStatus, in verdict.Input) ([]v1alpha1.HistoryEntry, error) {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	stored := &v1alpha1.VMObservation{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: obs.GetNamespace(), Name: obs.Name}, stored); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading the stored history: %w", err)
		}
	}
	if stored.UID == obs.GetUID() {
		// The stored status itself, not the cache's view of it: the cache
		// may not hold our last write yet, and a transition counted from
		// its older verdict would not follow the history's last one.
		prev = &stored.Status
	} else {
		// Another object of that name (deleted and recreated): its
		// history is not this one's.
		p := *prev
		p.History = nil
		prev = &p
	}
	return history.Apply(prev, st, in).New, nil
}

// logHistory writes one log line per history entry a status write added,
// oldest first, with the stable keys of history.LogKeys (docs/history.md),
// for log stores that keep a VM's timeline longer than its status does.
func logHistory(log logr.Logger, added []v1alpha1.HistoryEntry) {
	for i := len(added) - 1; i >= 0; i-- {
		log.Info(history.LogMessage, history.LogKeys(&added[i])...)
	}
}
