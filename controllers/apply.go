package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
)

// lastStatusWrite is when vmobs last wrote the status, read from the
// object's managedFields: it survives restarts, unlike a map in memory, so a
// restarted controller does not rewrite every status at once.
func lastStatusWrite(obs *v1alpha1.VMObservation) time.Time {
	var last time.Time
	for _, mf := range obs.ManagedFields {
		if mf.Manager == membership.FieldOwner && mf.Subresource == "status" && mf.Time != nil && mf.Time.After(last) {
			last = mf.Time.Time
		}
	}
	return last
}

// applyStatus writes the whole status with server-side apply under our field
// owner: the fields we stop sending are removed, and nobody else's are.
func (r *Reconciler) applyStatus(ctx context.Context, obs *v1alpha1.VMObservation, status *v1alpha1.VMObservationStatus) error {
	raw, err := json.Marshal(status)
	if err != nil {
		return fmt.Errorf("encoding status: %w", err)
	}
	var statusMap map[string]any
	if err := json.Unmarshal(raw, &statusMap); err != nil {
		return fmt.Errorf("encoding status: %w", err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "VMObservation",
		"metadata":   map[string]any{"name": obs.Name, "namespace": obs.Namespace, "uid": string(obs.UID)},
		"status":     statusMap,
	}}
	if err := r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(membership.FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying status: %w", err)
	}
	return nil
}

// statusHash is a hash of the status as it would be written.
func statusHash(s *v1alpha1.VMObservationStatus) uint64 {
	h := fnv.New64a()
	raw, err := json.Marshal(s)
	if err != nil {
		return 0
	}
	_, _ = h.Write(raw)
	return h.Sum64()
}
