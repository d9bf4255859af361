package drain

// Reason codes. Each is described, with its source, in docs/drain-check.md
// (TestReasonsDocumented keeps the two in step).
const (
	// Why a VM live-migrates or not.
	ReasonLiveMigrationPossible       = "LiveMigrationPossible"
	ReasonEvictionDeniedNotMigratable = "EvictionDeniedNotMigratable"
	ReasonNotLiveMigratable           = "NotLiveMigratable"
	ReasonLiveMigratableUnknown       = "LiveMigratableUnknown"
	ReasonVolumeReadWriteOnce         = "VolumeReadWriteOnce"
	ReasonHostDevice                  = "HostDevice"
	ReasonGPU                         = "GPU"
	ReasonNoTargetNode                = "NoTargetNode"

	// The eviction strategy.
	ReasonStrategyLiveMigrate    = "EvictionStrategyLiveMigrate"
	ReasonStrategyIfPossible     = "EvictionStrategyLiveMigrateIfPossible"
	ReasonStrategyNone           = "EvictionStrategyNone"
	ReasonStrategyExternal       = "EvictionStrategyExternal"
	ReasonStrategyUnrecognised   = "EvictionStrategyUnrecognised"
	ReasonClusterStrategyUnknown = "ClusterEvictionStrategyUnknown"

	// What follows an eviction.
	ReasonPDBDisallows            = "DisruptionBudgetDisallows"
	ReasonPDBUnknown              = "DisruptionBudgetsUnreadable"
	ReasonRunStrategyAlways       = "RunStrategyAlways"
	ReasonRunStrategyRerun        = "RunStrategyRerunOnFailure"
	ReasonRunStrategyNoRestart    = "RunStrategyNoRestart"
	ReasonRunStrategyUnrecognised = "RunStrategyUnrecognised"
	ReasonNoVM                    = "NoVirtualMachine"
	ReasonVMUnreadable            = "VirtualMachineUnreadable"
	ReasonNoNodeForRestart        = "NoNodeForRestart"

	// VMIs the drain leaves alone.
	ReasonVMIFinal    = "VMIFinal"
	ReasonVMIDeleting = "VMIDeleting"

	// Notes.
	ReasonMigrationQueued   = "MigrationQueued"
	ReasonPDBMoot           = "DisruptionBudgetMoot"
	ReasonAlreadyEvacuating = "AlreadyMarkedForEvacuation"
	ReasonNodeNotFound      = "NodeNotFound"
	ReasonUnreadable        = "Unreadable"
	ReasonNodesUnreadable   = "NodesUnreadable"
	ReasonPVCUnreadable     = "VolumeClaimUnreadable"
)

// Sources the rules follow, cited in every reason.
const (
	srcAdmitter   = "kv:pkg/virt-api/webhooks/validating-webhook/admitters/pod-eviction-admitter.go"
	srcEvacuation = "kv:pkg/virt-controller/watch/drain/evacuation/evacuation.go"
	srcStrategy   = "kv:pkg/util/migrations/migrations.go"
	srcDefaults   = "kv:pkg/virt-config/configuration.go"
	srcLimits     = "kv:pkg/virt-config/virt-config.go"
	srcMigratable = "kv:pkg/virt-handler/vm.go"
	srcLifecycle  = "kv:pkg/virt-controller/watch/vmi/lifecycle.go"
	srcVM         = "kv:pkg/virt-controller/watch/vm/vm.go"
	srcPDB        = "kv:pkg/virt-controller/watch/drain/disruptionbudget/disruptionbudget.go"
	srcRerun      = "kubevirt/kubevirt#9823"
	srcK8sEvict   = "k8s:pkg/registry/core/pod/storage/eviction.go"
	srcScheduler  = "k8s:pkg/scheduler/framework/plugins/nodeaffinity"
)

// ReasonCodes are every reason code, for the documentation test.
var ReasonCodes = []string{
	ReasonLiveMigrationPossible, ReasonEvictionDeniedNotMigratable, ReasonNotLiveMigratable,
	ReasonLiveMigratableUnknown, ReasonVolumeReadWriteOnce, ReasonHostDevice, ReasonGPU, ReasonNoTargetNode,
	ReasonStrategyLiveMigrate, ReasonStrategyIfPossible, ReasonStrategyNone, ReasonStrategyExternal,
	ReasonStrategyUnrecognised, ReasonClusterStrategyUnknown,
	ReasonPDBDisallows, ReasonPDBUnknown, ReasonRunStrategyAlways, ReasonRunStrategyRerun,
	ReasonRunStrategyNoRestart, ReasonRunStrategyUnrecognised, ReasonNoVM, ReasonVMUnreadable, ReasonNoNodeForRestart,
	ReasonVMIFinal, ReasonVMIDeleting,
	ReasonMigrationQueued, ReasonPDBMoot, ReasonAlreadyEvacuating, ReasonNodeNotFound, ReasonUnreadable,
	ReasonNodesUnreadable, ReasonPVCUnreadable,
}
