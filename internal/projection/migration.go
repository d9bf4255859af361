package projection

import (
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// Migration is a VirtualMachineInstanceMigration as the engine reads it:
// the VMI it moves and its status (phase, phase transitions, conditions,
// migration state). Migrations are few (one per move, collected by
// KubeVirt), so the status stays an API type, trimmed.
type Migration struct {
	Meta
	VMIName string
	Status  kubevirtv1.VirtualMachineInstanceMigrationStatus
}

// migrationAnnotations are the annotations read of a migration: the
// per-migration pending-pod timeout KubeVirt honours (the engine), and the
// node an evacuation migration moves the VMI off (a drain's progress).
var migrationAnnotations = []string{kubevirtv1.MigrationPendingPodTimeoutSecondsAnnotation, kubevirtv1.EvacuationMigrationAnnotation}

// FromMigration projects a migration.
func FromMigration(m *kubevirtv1.VirtualMachineInstanceMigration) *Migration {
	st := &m.Status
	return &Migration{
		Meta:    metaOf(&m.ObjectMeta, nil, migrationAnnotations, nil),
		VMIName: m.Spec.VMIName,
		Status: kubevirtv1.VirtualMachineInstanceMigrationStatus{
			Phase:                     st.Phase,
			PhaseTransitionTimestamps: clone(st.PhaseTransitionTimestamps),
			Conditions:                clone(st.Conditions),
			MigrationState:            migrationState(st.MigrationState),
		},
	}
}

// ToMigration rebuilds the migration as far as it was kept.
func (m *Migration) ToMigration() *kubevirtv1.VirtualMachineInstanceMigration {
	out := &kubevirtv1.VirtualMachineInstanceMigration{ObjectMeta: m.ObjectMeta()}
	out.Spec.VMIName = m.VMIName
	out.Status = m.Status
	return out
}

// DeepCopyObject implements runtime.Object.
func (m *Migration) DeepCopyObject() runtime.Object {
	c := *m
	c.Meta = m.Meta.deepCopy()
	m.Status.DeepCopyInto(&c.Status)
	return &c
}
