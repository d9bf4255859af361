package controllers

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmobs/vmobs/api/v1alpha1"
	"github.com/vmobs/vmobs/internal/membership"
	"github.com/vmobs/vmobs/internal/projection"
)

// applyStatus writes the whole status with server-side apply under our field
// owner: the fields we stop sending are removed, and nobody else's are. The
// request is encoded once, straight from the typed status; the response is
// not decoded through StatusREST, and decoded once into a typed object the
// caller does not see otherwise. Going through unstructured objects encoded
// the status twice and scanned the response twice.
func (r *Reconciler) applyStatus(ctx context.Context, obs *projection.Observation, status *v1alpha1.VMObservationStatus) error {
	ns := obs.GetNamespace()
	raw, err := StatusApplyBody(ns, obs.Name, obs.GetUID(), status)
	if err != nil {
		return fmt.Errorf("encoding status: %w", err)
	}
	if r.StatusREST != nil {
		err = r.StatusREST.Patch(types.ApplyPatchType).Namespace(ns).Resource("vmobservations").Name(obs.Name).
			SubResource("status").Param("fieldManager", membership.FieldOwner).Param("force", "true").
			Body(raw).Do(ctx).Error()
	} else {
		target := &v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Name: obs.Name, Namespace: ns}}
		err = r.Client.Status().Patch(ctx, target, client.RawPatch(types.ApplyPatchType, raw),
			client.FieldOwner(membership.FieldOwner), client.ForceOwnership)
	}
	if err != nil {
		return fmt.Errorf("applying status: %w", err)
	}
	return nil
}

// StatusApplyBody is the body of the status apply: what the controller
// sends, and what the scale harness's write benchmark sends as it.
func StatusApplyBody(ns, name string, uid types.UID, status *v1alpha1.VMObservationStatus) ([]byte, error) {
	return json.Marshal(statusApply{
		APIVersion: v1alpha1.GroupVersion.String(),
		Kind:       "VMObservation",
		Metadata:   applyMeta{Name: name, Namespace: ns, UID: uid},
		Status:     status,
	})
}

// statusApply is the apply configuration of a VMObservation's status: the
// identity (the UID makes the apply fail rather than create an object that
// was deleted meanwhile) and the status.
type statusApply struct {
	APIVersion string                        `json:"apiVersion"`
	Kind       string                        `json:"kind"`
	Metadata   applyMeta                     `json:"metadata"`
	Status     *v1alpha1.VMObservationStatus `json:"status"`
}

type applyMeta struct {
	Name      string    `json:"name"`
	Namespace string    `json:"namespace"`
	UID       types.UID `json:"uid"`
}
