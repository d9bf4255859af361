package controllers

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/projection"
)

// applyStatus writes the whole status with server-side apply under our field
// owner: the fields we stop sending are removed, and nobody else's are.
func (r *Reconciler) applyStatus(ctx context.Context, obs *projection.Observation, status *v1alpha1.VMObservationStatus) error {
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
		"metadata":   map[string]any{"name": obs.Name, "namespace": obs.GetNamespace(), "uid": string(obs.GetUID())},
		"status":     statusMap,
	}}
	if err := r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(membership.FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying status: %w", err)
	}
	return nil
}
