package projection

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// VM is a VirtualMachine as the engine reads it: its labels (which
// VMObservationPolicies select by, and shards), its run strategy (or the
// deprecated running flag) and the status virt-controller writes of its
// VMI's life: created, ready, printableStatus, conditions, start failures
// and pending state change requests.
type VM struct {
	Meta
	RunStrategy     optSym
	Running         int8 // 0 nil, 1 false, 2 true
	Created, Ready  bool
	PrintableStatus Sym
	Conditions      []Cond
	StartFailure    *kubevirtv1.VirtualMachineStartFailure
	// StateChangeRequests keep their action only.
	StateChangeRequests []kubevirtv1.VirtualMachineStateChangeRequest
	// MemoryDumpRequest and the volumes of VolumeUpdateState: few VMs
	// have them, and the engine notes them.
	MemoryDumpRequest *kubevirtv1.VirtualMachineMemoryDumpRequest
	VolumeUpdateState *kubevirtv1.VolumeUpdateState
	// Volumes are the claim-backed volumes of spec.template (the storage
	// layer's); nil for most VMs' container disks.
	Volumes []ClaimVolume
}

// FromVM projects a VM.
func FromVM(v *kubevirtv1.VirtualMachine) *VM {
	st := &v.Status
	out := &VM{
		Meta:            metaOf(&v.ObjectMeta, slices.Sorted(maps.Keys(v.Labels)), nil, nil),
		RunStrategy:     internPtr(v.Spec.RunStrategy),
		Running:         boolPtr(v.Spec.Running),
		Created:         st.Created,
		Ready:           st.Ready,
		PrintableStatus: Intern(string(st.PrintableStatus)),
		Conditions: condsOf(st.Conditions, all, func(c *kubevirtv1.VirtualMachineCondition) Cond {
			return newCond(string(c.Type), string(c.Status), c.Reason, c.Message, metaTime(c.LastTransitionTime))
		}),
		StartFailure:      st.StartFailure.DeepCopy(),
		MemoryDumpRequest: st.MemoryDumpRequest.DeepCopy(),
		VolumeUpdateState: volumeUpdateStateOf(st.VolumeUpdateState),
	}
	if v.Spec.Template != nil {
		out.Volumes = claimVolumes(v.Spec.Template.Spec.Volumes)
	}
	if len(st.StateChangeRequests) > 0 {
		out.StateChangeRequests = make([]kubevirtv1.VirtualMachineStateChangeRequest, len(st.StateChangeRequests))
		for i, r := range st.StateChangeRequests {
			out.StateChangeRequests[i].Action = r.Action
		}
	}
	return out
}

// ToVM rebuilds the VM as far as it was kept.
func (v *VM) ToVM() *kubevirtv1.VirtualMachine {
	out := &kubevirtv1.VirtualMachine{ObjectMeta: v.ObjectMeta()}
	out.Spec.RunStrategy = symPtr[kubevirtv1.VirtualMachineRunStrategy](v.RunStrategy)
	out.Spec.Running = ptrBool(v.Running)
	st := &out.Status
	st.Created, st.Ready = v.Created, v.Ready
	st.PrintableStatus = kubevirtv1.VirtualMachinePrintableStatus(v.PrintableStatus.String())
	if len(v.Conditions) > 0 {
		st.Conditions = make([]kubevirtv1.VirtualMachineCondition, len(v.Conditions))
		for i, c := range v.Conditions {
			st.Conditions[i] = kubevirtv1.VirtualMachineCondition{
				Type: kubevirtv1.VirtualMachineConditionType(c.Type()), Status: corev1.ConditionStatus(c.Status()),
				Reason: c.Reason.String(), Message: c.Message(), LastTransitionTime: c.LastTransition.Meta(),
			}
		}
	}
	st.StartFailure = v.StartFailure
	st.StateChangeRequests = v.StateChangeRequests
	st.MemoryDumpRequest, st.VolumeUpdateState = v.MemoryDumpRequest, v.VolumeUpdateState
	if len(v.Volumes) > 0 {
		out.Spec.Template = &kubevirtv1.VirtualMachineInstanceTemplateSpec{}
		out.Spec.Template.Spec.Volumes = toVolumes(v.Volumes)
	}
	return out
}

// DeepCopyObject implements runtime.Object.
func (v *VM) DeepCopyObject() runtime.Object {
	c := *v
	c.Meta = v.Meta.deepCopy()
	c.Conditions = clone(v.Conditions)
	c.StartFailure = v.StartFailure.DeepCopy()
	c.StateChangeRequests = clone(v.StateChangeRequests)
	c.MemoryDumpRequest = v.MemoryDumpRequest.DeepCopy()
	c.VolumeUpdateState = v.VolumeUpdateState.DeepCopy()
	c.Volumes = clone(v.Volumes)
	return &c
}

// volumeUpdateStateOf keeps the names of the volumes being migrated.
func volumeUpdateStateOf(s *kubevirtv1.VolumeUpdateState) *kubevirtv1.VolumeUpdateState {
	if s == nil || s.VolumeMigrationState == nil || len(s.VolumeMigrationState.MigratedVolumes) == 0 {
		return nil
	}
	vs := make([]kubevirtv1.StorageMigratedVolumeInfo, len(s.VolumeMigrationState.MigratedVolumes))
	for i := range vs {
		vs[i].VolumeName = s.VolumeMigrationState.MigratedVolumes[i].VolumeName
	}
	return &kubevirtv1.VolumeUpdateState{VolumeMigrationState: &kubevirtv1.VolumeMigrationState{MigratedVolumes: vs}}
}
