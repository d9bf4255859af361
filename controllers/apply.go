package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
// owner: the fields we stop sending are removed, and nobody else's are. The
// request is encoded once, straight from the typed status; the response is
// not decoded through StatusREST, and decoded once into a typed object the
// caller does not see otherwise (obs keeps the status it had, which the
// transitions compare with). Going through unstructured objects encoded the
// status twice and scanned the response twice.
func (r *Reconciler) applyStatus(ctx context.Context, obs *v1alpha1.VMObservation, status *v1alpha1.VMObservationStatus) error {
	raw, err := json.Marshal(statusApply{
		APIVersion: v1alpha1.GroupVersion.String(),
		Kind:       "VMObservation",
		Metadata:   applyMeta{Name: obs.Name, Namespace: obs.Namespace, UID: obs.UID},
		Status:     status,
	})
	if err != nil {
		return fmt.Errorf("encoding status: %w", err)
	}
	if r.StatusREST != nil {
		err = r.StatusREST.Patch(types.ApplyPatchType).Namespace(obs.Namespace).Resource("vmobservations").Name(obs.Name).
			SubResource("status").Param("fieldManager", membership.FieldOwner).Param("force", "true").
			Body(raw).Do(ctx).Error()
	} else {
		target := &v1alpha1.VMObservation{ObjectMeta: metav1.ObjectMeta{Name: obs.Name, Namespace: obs.Namespace}}
		err = r.Client.Status().Patch(ctx, target, client.RawPatch(types.ApplyPatchType, raw),
			client.FieldOwner(membership.FieldOwner), client.ForceOwnership)
	}
	if err != nil {
		return fmt.Errorf("applying status: %w", err)
	}
	return nil
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
