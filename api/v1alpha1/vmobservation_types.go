package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Verdict is the judgement on a layer or on the whole VM. The words are Argo
// CD's health vocabulary, with Failed for terminal states.
// +kubebuilder:validation:Enum=Healthy;Progressing;Suspended;Degraded;Failed;Unknown
type Verdict string

const (
	// VerdictHealthy means every source the layer reads agrees the VM is fine.
	VerdictHealthy Verdict = "Healthy"
	// VerdictProgressing means the layer is on its way to Healthy (booting,
	// scheduling, migrating) and has not yet passed its deadline.
	VerdictProgressing Verdict = "Progressing"
	// VerdictSuspended means the VM is paused or stopped on purpose.
	VerdictSuspended Verdict = "Suspended"
	// VerdictDegraded means the VM runs but something the user relies on is
	// broken (a failed migration, a stale node agent, a missing guest agent).
	VerdictDegraded Verdict = "Degraded"
	// VerdictFailed means the VM is in a terminal state it will not leave by
	// itself.
	VerdictFailed Verdict = "Failed"
	// VerdictUnknown means the evidence is missing or too old to judge.
	VerdictUnknown Verdict = "Unknown"
)

// Severity orders verdicts for the overall verdict: the worst layer wins, in
// the order Failed > Degraded > Unknown > Progressing > Suspended > Healthy.
// Unknown verdicts (not in the enum) rank worst so they are never hidden.
func (v Verdict) Severity() int {
	switch v {
	case VerdictHealthy:
		return 0
	case VerdictSuspended:
		return 1
	case VerdictProgressing:
		return 2
	case VerdictUnknown:
		return 3
	case VerdictDegraded:
		return 4
	case VerdictFailed:
		return 5
	}
	return 6
}

// LauncherPodRole says what a virt-launcher pod is to its VMI.
// +kubebuilder:validation:Enum=Active;MigrationSource;MigrationTarget;Stale
type LauncherPodRole string

const (
	// RoleActive is the pod that runs the VM outside of a migration.
	RoleActive LauncherPodRole = "Active"
	// RoleMigrationSource is the pod the VM migrates away from.
	RoleMigrationSource LauncherPodRole = "MigrationSource"
	// RoleMigrationTarget is the pod the VM migrates to.
	RoleMigrationTarget LauncherPodRole = "MigrationTarget"
	// RoleStale is a finished or superseded pod still owned by the VMI (and
	// possibly still listed in status.activePods, see kubevirt#12773).
	RoleStale LauncherPodRole = "Stale"
)

// VMObservationSpec names the VM to observe and may override the
// controller's default policy for it.
type VMObservationSpec struct {
	// VMName is the name of the VirtualMachine (and of its
	// VirtualMachineInstance) in this namespace. It must equal
	// metadata.name: a VMObservation shares its VM's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	VMName string `json:"vmName"`

	// Policy overrides the controller's defaults for this VM.
	// +optional
	Policy *PolicyOverrides `json:"policy,omitempty"`
}

// PolicyOverrides overrides the controller's thresholds for one VM. Unset
// fields take the controller's flag values.
type PolicyOverrides struct {
	// SchedulingTimeout is how long a VMI may stay Pending or Scheduling
	// before the control plane layer turns Degraded (StuckScheduling).
	// +optional
	SchedulingTimeout *metav1.Duration `json:"schedulingTimeout,omitempty"`

	// MigrationPhaseTimeout is how long a migration may stay in one phase
	// before it counts as stuck (MigrationStuck).
	// +optional
	MigrationPhaseTimeout *metav1.Duration `json:"migrationPhaseTimeout,omitempty"`

	// HeartbeatTimeout is how old virt-handler's kubevirt.io/heartbeat may
	// be before the node layer turns Unknown (NodeAgentStale).
	// +optional
	HeartbeatTimeout *metav1.Duration `json:"heartbeatTimeout,omitempty"`

	// AgentGracePeriod is how long after Running the guest agent may take to
	// connect before its absence counts.
	// +optional
	AgentGracePeriod *metav1.Duration `json:"agentGracePeriod,omitempty"`

	// StalledAfter is how long a layer may stay Degraded before the
	// VMObservation reports Stalled=True.
	// +optional
	StalledAfter *metav1.Duration `json:"stalledAfter,omitempty"`

	// LagGrace is how long KubeVirt's objects may contradict each other
	// (a launcher pod that finished before the VMI names the migration
	// target, a missing launcher) before the contradiction becomes a
	// verdict; until then the layer keeps its verdict or says Progressing.
	// +optional
	LagGrace *metav1.Duration `json:"lagGrace,omitempty"`

	// GuestAgentExpected says whether this VM's guest runs a QEMU guest
	// agent. When true, a missing agent makes the guest layer Degraded;
	// when false, it is only noted.
	// +optional
	GuestAgentExpected *bool `json:"guestAgentExpected,omitempty"`

	// HotplugTimeout is how long a memory or CPU hotplug may stay requested
	// but not applied before it counts as stuck (HotplugStuck).
	// +optional
	HotplugTimeout *metav1.Duration `json:"hotplugTimeout,omitempty"`

	// FilesystemsFrozenAfter is how long the guest's filesystems may stay
	// frozen (a backup or snapshot in progress) before the guest layer turns
	// Degraded (FilesystemsFrozen).
	// +optional
	FilesystemsFrozenAfter *metav1.Duration `json:"filesystemsFrozenAfter,omitempty"`

	// DomainStatsGrace is added to two domain-stats intervals: a VMI Running
	// longer than that with no series from virt-handler is DomainStatsMissing.
	// +optional
	DomainStatsGrace *metav1.Duration `json:"domainStatsGrace,omitempty"`

	// GuestCPUStalledAfter is how long the vCPU time of a running, unpaused
	// domain may stand still before the guest layer turns Degraded
	// (GuestCPUStalled).
	// +optional
	GuestCPUStalledAfter *metav1.Duration `json:"guestCPUStalledAfter,omitempty"`

	// GuestMemoryAvailablePercent: low memory headroom when the memory the
	// guest can still use, as the balloon driver reports it, falls under
	// this share of its memory; with thrashing it is GuestMemoryPressure.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=99
	GuestMemoryAvailablePercent *int32 `json:"guestMemoryAvailablePercent,omitempty"`

	// GuestSwapRate: with low memory headroom, swap traffic of at least this
	// many bytes per second, in and out together, is thrashing
	// (GuestMemoryPressure).
	// +optional
	GuestSwapRate *resource.Quantity `json:"guestSwapRate,omitempty"`

	// StorageSlowFactor: storage is slow (StorageSlow) when the time per
	// I/O operation is at least this many times the VM's own baseline (and
	// above StorageSlowLatency).
	// +optional
	// +kubebuilder:validation:Minimum=2
	StorageSlowFactor *int32 `json:"storageSlowFactor,omitempty"`

	// StorageSlowLatency is the time per I/O operation under which storage
	// never counts as slow, whatever the baseline.
	// +optional
	StorageSlowLatency *metav1.Duration `json:"storageSlowLatency,omitempty"`

	// NetworkErrorRate: network errors (NetworkErrors) when receive and
	// transmit errors and transmit drops together reach this many per
	// second; receive drops at this rate are a note (GuestNetworkDrops).
	// +optional
	NetworkErrorRate *resource.Quantity `json:"networkErrorRate,omitempty"`

	// MigrationNotConvergingSamples: a live migration whose remaining data
	// has not shrunk over this many domain-stats samples is
	// MigrationNotConverging.
	// +optional
	// +kubebuilder:validation:Minimum=2
	MigrationNotConvergingSamples *int32 `json:"migrationNotConvergingSamples,omitempty"`

	// FilesystemUsedPercent: a guest filesystem at or above this share of
	// its size used, as the guest agent reports it, for the controller's
	// --filesystem-full-for (10m) is FilesystemNearlyFull (KubeVirt's
	// GuestFilesystemAlmostOutOfSpace warning is 85% for 10m).
	// +optional
	// +kubebuilder:validation:Minimum=50
	// +kubebuilder:validation:Maximum=100
	FilesystemUsedPercent *int32 `json:"filesystemUsedPercent,omitempty"`

	// AgentUnresponsiveProbes: a VMI whose guest agent it calls connected
	// and whose last this many probes failed is GuestInfoUnreachable on the
	// node layer (the name is kept from the AgentUnresponsive reason it
	// replaced).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	AgentUnresponsiveProbes *int32 `json:"agentUnresponsiveProbes,omitempty"`

	// GuestMajorFaultRate: with low memory headroom, major page faults above
	// this many per second are thrashing (GuestMemoryPressure).
	// +optional
	GuestMajorFaultRate *resource.Quantity `json:"guestMajorFaultRate,omitempty"`

	// GuestMemoryPressureAfter is how long low memory headroom and thrashing
	// must last before the guest layer turns Degraded (GuestMemoryPressure).
	// +optional
	GuestMemoryPressureAfter *metav1.Duration `json:"guestMemoryPressureAfter,omitempty"`

	// VolumeBindingTimeout is how long a claim of the VM's may stay Pending
	// (a WaitForFirstConsumer one once its node is chosen) before the
	// storage layer turns Degraded (VolumeNotBound).
	// +optional
	VolumeBindingTimeout *metav1.Duration `json:"volumeBindingTimeout,omitempty"`

	// HotplugVolumeTimeout is how long a hotplugged volume may stay not
	// Ready before it counts as stuck (HotplugVolumeStuck).
	// +optional
	HotplugVolumeTimeout *metav1.Duration `json:"hotplugVolumeTimeout,omitempty"`

	// HistoryLimit is how many entries status.history keeps, newest first
	// (older ones are dropped and counted; the history also stays within
	// 4 KiB).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	HistoryLimit *int32 `json:"historyLimit,omitempty"`
}

// Evidence points at one field of one object that a verdict rests on.
type Evidence struct {
	// Kind of the object: VirtualMachineInstance, Pod, Node, ...
	Kind string `json:"kind"`
	// Name of the object (namespace is the VMObservation's unless the kind
	// is cluster scoped).
	Name string `json:"name"`
	// Field is the path of the field read, e.g. status.phase.
	Field string `json:"field"`
	// Value is the value read, shortened when long.
	// +optional
	Value string `json:"value,omitempty"`
	// Time is when the source says the value was set, when it says so.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// LayerStatus is the verdict on one layer, with the reason, the evidence and
// how fresh that evidence is.
type LayerStatus struct {
	// Verdict on this layer.
	Verdict Verdict `json:"verdict"`
	// Reason is a stable CamelCase word, documented in docs/verdicts.md.
	Reason string `json:"reason"`
	// Message explains the verdict to a person.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// LastTransitionTime is when the verdict last changed.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
	// EvidenceTime is when the layer's deciding evidence was established
	// (a condition's transition, a pod's start, a migration's end): the
	// newest timestamp among the evidence. It changes only when that
	// evidence does, never with a renewing source such as virt-handler's
	// heartbeat.
	// +optional
	EvidenceTime *metav1.Time `json:"evidenceTime,omitempty"`
	// StaleAt is a fixed deadline, still to come, at which the verdict
	// changes by itself if nothing else changes (a phase timeout, the
	// agent's grace period, a lag grace). A verdict that rests on a
	// renewing source (virt-handler's heartbeat) has none: the controller
	// checks that deadline itself and writes the moment it passes.
	// +optional
	StaleAt *metav1.Time `json:"staleAt,omitempty"`
	// Evidence lists the fields the verdict rests on.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	Evidence []Evidence `json:"evidence,omitempty"`
}

// Layers holds one verdict per layer of a KubeVirt VM.
type Layers struct {
	// ControlPlane reads the VM, VMI and migration objects that
	// virt-controller and virt-handler write.
	ControlPlane LayerStatus `json:"controlPlane"`
	// Node reads the virt-launcher pods, the Node and virt-handler's
	// heartbeat.
	Node LayerStatus `json:"node"`
	// Guest reads what the guest agent reports.
	Guest LayerStatus `json:"guest"`
	// Storage reads the VM's volumes: the PersistentVolumeClaims and CDI
	// DataVolumes behind them, their StorageClasses, the VolumeAttachments
	// of their PersistentVolumes and the Warning Events of all of these and
	// of the launcher pod (what CDI, the external provisioner, the PV
	// binder, the external attacher and the kubelet write), and the I/O
	// errors and latency QEMU reports. Absent in a status written before
	// the layer existed.
	// +optional
	Storage LayerStatus `json:"storage,omitempty,omitzero"`
}

// VMISummary is what the VirtualMachineInstance says about itself.
type VMISummary struct {
	// Name is the VMI's name (the VM's).
	Name string `json:"name"`
	// UID tells one VMI of the VM from the next.
	// +optional
	UID types.UID `json:"uid,omitempty"`
	// Phase is the VMI's status.phase as KubeVirt reports it.
	// +optional
	Phase string `json:"phase,omitempty"`
	// NodeName is the node the VMI runs on (status.nodeName).
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// Reason is the VMI's status.reason (NodeUnresponsive is the only value
	// KubeVirt v1.9 writes).
	// +optional
	Reason string `json:"reason,omitempty"`
	// PhaseSince is when the VMI entered its current phase.
	// +optional
	PhaseSince *metav1.Time `json:"phaseSince,omitempty"`
	// QOSClass is the launcher pod's QoS class as the VMI reports it
	// (status.qosClass): Guaranteed, Burstable or BestEffort.
	// +optional
	QOSClass string `json:"qosClass,omitempty"`
	// SELinuxContext is the launcher's SELinux context (status.selinuxContext).
	// +optional
	SELinuxContext string `json:"selinuxContext,omitempty"`
	// FSFreezeStatus is "frozen" while the guest's filesystems are frozen
	// (status.fsFreezeStatus, which virt-handler copies from the guest
	// agent's guest-fsfreeze-status).
	// +optional
	FSFreezeStatus string `json:"fsFreezeStatus,omitempty"`
	// FSFrozenSince is when vmobs first saw this VMI's filesystems frozen:
	// KubeVirt records no time for a freeze, so the controller keeps the
	// first sighting from one status to the next while they stay frozen.
	// +optional
	FSFrozenSince *metav1.Time `json:"fsFrozenSince,omitempty"`
	// Memory is the guest memory in the spec, at boot, requested of the
	// domain and in the domain now; a difference is a hotplug on its way.
	// +optional
	Memory *VMIMemory `json:"memory,omitempty"`
	// CPU is the vCPU topology the domain runs with and the one the spec
	// asks for; a difference is a hotplug on its way.
	// +optional
	CPU *VMICPU `json:"cpu,omitempty"`
	// HotplugSince is when the memory or CPU hotplug now requested and not
	// yet applied began, as well as the objects tell: the end of the
	// migration that handed the memory to the domain, else when vmobs first
	// saw it pending (KubeVirt's HotMemoryChange and HotVCPUChange
	// conditions carry no time), kept from one status to the next.
	// +optional
	HotplugSince *metav1.Time `json:"hotplugSince,omitempty"`
	// AgentDisconnectedSince is when vmobs first saw the guest agent of
	// this VMI, connected before, disconnected: KubeVirt removes the
	// AgentConnected condition and records no time for it, so the
	// controller keeps the first sighting from one status to the next
	// until the agent is back. The guest is given AgentGracePeriod from it
	// to reconnect (a guest reboot closes the agent's channel).
	// +optional
	AgentDisconnectedSince *metav1.Time `json:"agentDisconnectedSince,omitempty"`
	// HotplugVolumes lists the hotplugged volumes and their phases, by name.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	HotplugVolumes []HotplugVolume `json:"hotplugVolumes,omitempty"`
	// HotplugVolumeSince is when vmobs first saw a hotplugged volume not
	// Ready, kept from one status to the next while one stays so (KubeVirt's
	// status.volumeStatus carries no time).
	// +optional
	HotplugVolumeSince *metav1.Time `json:"hotplugVolumeSince,omitempty"`
}

// VMIMemory is the VMI's spec.domain.memory.guest and status.memory.
type VMIMemory struct {
	// Guest is the guest memory the VMI's spec asks for
	// (spec.domain.memory.guest); virt-controller raises it from the VM's
	// template when a memory hotplug is requested.
	// +optional
	Guest *resource.Quantity `json:"guest,omitempty"`
	// GuestAtBoot is the guest memory the domain booted with.
	// +optional
	GuestAtBoot *resource.Quantity `json:"guestAtBoot,omitempty"`
	// GuestRequested is the guest memory last requested of the domain
	// (status.memory.guestRequested): virt-handler sets it to the spec's
	// once it has applied a hotplug on the migration target.
	// +optional
	GuestRequested *resource.Quantity `json:"guestRequested,omitempty"`
	// GuestCurrent is the guest memory the domain has now (libvirt's
	// currentMemory): it reaches guestRequested once the guest has taken
	// the hotplugged memory.
	// +optional
	GuestCurrent *resource.Quantity `json:"guestCurrent,omitempty"`
}

// CPUTopology is a number of sockets, cores per socket and threads per core.
type CPUTopology struct {
	// Sockets is the number of CPU sockets.
	// +optional
	Sockets uint32 `json:"sockets,omitempty"`
	// Cores is the number of cores per socket.
	// +optional
	Cores uint32 `json:"cores,omitempty"`
	// Threads is the number of threads per core.
	// +optional
	Threads uint32 `json:"threads,omitempty"`
}

// VMICPU compares the running topology with the requested one.
type VMICPU struct {
	// Current is the topology the domain runs with (status.currentCPUTopology).
	// +optional
	Current *CPUTopology `json:"current,omitempty"`
	// Requested is the topology the spec asks for (spec.domain.cpu).
	// +optional
	Requested *CPUTopology `json:"requested,omitempty"`
}

// HotplugVolume is one hotplugged volume of the VMI (status.volumeStatus).
type HotplugVolume struct {
	// Name is the volume's name.
	Name string `json:"name"`
	// Phase is the volume's phase (Pending, Bound, AttachedToNode,
	// MountedToPod, Ready, ...).
	// +optional
	Phase string `json:"phase,omitempty"`
	// Reason is KubeVirt's word for the phase.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// DomainSummary is what virt-handler's domain stats, read from Prometheus,
// say of the running domain. Values are rounded to buckets, so the summary
// changes only when a bucket does, not with every sample.
type DomainSummary struct {
	// SampledAt is when the values shown were sampled: the first sample in
	// their current buckets.
	// +optional
	SampledAt *metav1.Time `json:"sampledAt,omitempty"`
	// Node is the node whose virt-handler exports the domain's series.
	// +optional
	Node string `json:"node,omitempty"`
	// VCPUUsage is the vCPU time used per second, in cores.
	// +optional
	VCPUUsage *resource.Quantity `json:"vcpuUsage,omitempty"`
	// MemoryAvailable is the memory the guest sees.
	// +optional
	MemoryAvailable *resource.Quantity `json:"memoryAvailable,omitempty"`
	// MemoryUsed is the part of it the guest cannot reclaim.
	// +optional
	MemoryUsed *resource.Quantity `json:"memoryUsed,omitempty"`
	// SwapRate is the guest's swap traffic, in and out, in bytes per second.
	// +optional
	SwapRate *resource.Quantity `json:"swapRate,omitempty"`
	// StorageReadRate is bytes read per second over all drives.
	// +optional
	StorageReadRate *resource.Quantity `json:"storageReadRate,omitempty"`
	// StorageWriteRate is bytes written per second over all drives.
	// +optional
	StorageWriteRate *resource.Quantity `json:"storageWriteRate,omitempty"`
	// StorageLatency is the time per I/O operation over all drives.
	// +optional
	StorageLatency *metav1.Duration `json:"storageLatency,omitempty"`
	// NetworkReceiveRate is bytes received per second over all interfaces.
	// +optional
	NetworkReceiveRate *resource.Quantity `json:"networkReceiveRate,omitempty"`
	// NetworkTransmitRate is bytes sent per second over all interfaces.
	// +optional
	NetworkTransmitRate *resource.Quantity `json:"networkTransmitRate,omitempty"`
	// NetworkErrorRate is receive and transmit errors and transmit drops
	// per second.
	// +optional
	NetworkErrorRate *resource.Quantity `json:"networkErrorRate,omitempty"`
	// MigrationDataRemaining is the data a live migration still has to
	// copy; only during a live migration, like the two rates below.
	// +optional
	MigrationDataRemaining *resource.Quantity `json:"migrationDataRemaining,omitempty"`
	// MigrationDirtyRate is the rate at which the guest dirties memory, in
	// bytes per second.
	// +optional
	MigrationDirtyRate *resource.Quantity `json:"migrationDirtyRate,omitempty"`
	// MigrationTransferRate is the rate at which memory is copied, in bytes
	// per second.
	// +optional
	MigrationTransferRate *resource.Quantity `json:"migrationTransferRate,omitempty"`
}

// LauncherPod is one virt-launcher pod controlled by the VMI.
type LauncherPod struct {
	// Name is the pod's name.
	Name string `json:"name"`
	// UID is the pod's UID, as status.activePods keys it.
	// +optional
	UID types.UID `json:"uid,omitempty"`
	// Node is the node the pod is bound to.
	// +optional
	Node string `json:"node,omitempty"`
	// Phase is the pod's status.phase.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Ready is the pod's Ready condition (or, in a partial paste, the
	// compute container's ready flag).
	Ready bool `json:"ready"`
	// Role says what the pod is to the VM: Active, MigrationSource,
	// MigrationTarget or Stale.
	Role LauncherPodRole `json:"role"`
	// Restarts counts restarts of the pod's containers.
	Restarts int32 `json:"restarts"`
}

// MigrationSummary describes the newest migration of the VMI.
type MigrationSummary struct {
	// Name is the VirtualMachineInstanceMigration's name; empty when only the
	// VMI's migrationState tells of the migration.
	Name string `json:"name"`
	// UID is the migration's UID.
	// +optional
	UID types.UID `json:"uid,omitempty"`
	// Phase is the migration's phase (Pending, Scheduling, ..., Succeeded,
	// Failed), as the VMIM reports it.
	// +optional
	Phase string `json:"phase,omitempty"`
	// PhaseSince is when the migration entered its phase.
	// +optional
	PhaseSince *metav1.Time `json:"phaseSince,omitempty"`
	// SourceNode is the node the VM migrates from.
	// +optional
	SourceNode string `json:"sourceNode,omitempty"`
	// TargetNode is the node the VM migrates to.
	// +optional
	TargetNode string `json:"targetNode,omitempty"`
	// SourcePod is the launcher pod the VM migrates from.
	// +optional
	SourcePod string `json:"sourcePod,omitempty"`
	// TargetPod is the launcher pod the VM migrates to.
	// +optional
	TargetPod string `json:"targetPod,omitempty"`
	// Mode is the migration's mode (migrationState.mode): PreCopy,
	// PostCopy, or Paused when the VM is migrated paused.
	// +optional
	Mode string `json:"mode,omitempty"`
	// StartTime is when the memory transfer started (migrationState).
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// EndTime is when the migration ended, successfully or not.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// Completed is true once the memory transfer completed.
	// +optional
	Completed bool `json:"completed,omitempty"`
	// Failed is true when the migration failed; the VM runs on its source.
	// +optional
	Failed bool `json:"failed,omitempty"`
	// FailureReason is KubeVirt's word on why the migration failed.
	// +optional
	FailureReason string `json:"failureReason,omitempty"`
	// AbortStatus is Succeeded, Failed or Aborting when an abort was
	// requested.
	// +optional
	AbortStatus string `json:"abortStatus,omitempty"`
}

// LiveMigratability says whether the VMI can be live-migrated and, when it
// cannot, every reason found (KubeVirt's own LiveMigratable condition names
// only the first).
type LiveMigratability struct {
	// Status is True, False or Unknown.
	Status metav1.ConditionStatus `json:"status"`
	// Reasons lists every reason the VMI cannot be live-migrated, sorted.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Reasons []string `json:"reasons,omitempty"`
}

// InterfaceStatus joins what the guest, the domain and the pod network say
// about one interface.
type InterfaceStatus struct {
	// Name is the interface's name in the VMI spec.
	// +optional
	Name string `json:"name,omitempty"`
	// InterfaceName is the name inside the guest.
	// +optional
	InterfaceName string `json:"interfaceName,omitempty"`
	// MAC is the interface's MAC address, as the status reports it.
	// +optional
	MAC string `json:"mac,omitempty"`
	// IPAddresses the VMI status reports.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	IPAddresses []string `json:"ipAddresses,omitempty"`
	// InfoSources are the sources KubeVirt joined in infoSource: domain,
	// guest-agent, multus-status.
	// +optional
	InfoSources []string `json:"infoSources,omitempty"`
	// PodIPs are the IPs the pod network gives this interface: the pod's
	// status.podIPs for the primary network, Multus network-status for the
	// others.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	PodIPs []string `json:"podIPs,omitempty"`
}

// GuestSummary is what the guest agent reports.
type GuestSummary struct {
	// AgentConnected is true while the VMI carries the AgentConnected
	// condition (KubeVirt removes it on disconnect; it is never False).
	AgentConnected bool `json:"agentConnected"`
	// AgentConnectedSince is when the agent connected: the condition's
	// lastTransitionTime, else its lastProbeTime.
	// +optional
	AgentConnectedSince *metav1.Time `json:"agentConnectedSince,omitempty"`
	// AgentSupported is false when KubeVirt reports AgentVersionNotSupported.
	AgentSupported bool `json:"agentSupported"`
	// OSPrettyName comes from status.guestOSInfo, which KubeVirt never
	// clears: it is identity, not evidence of a live agent.
	// +optional
	OSPrettyName string `json:"osPrettyName,omitempty"`
	// KernelRelease is the guest kernel the agent reported (status.guestOSInfo),
	// sticky like OSPrettyName.
	// +optional
	KernelRelease string `json:"kernelRelease,omitempty"`
	// Hostname is the guest's host name, as the guest agent answered the
	// controller's probe (subresource guestosinfo; --guest-probe-interval).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Hostname string `json:"hostname,omitempty"`
	// Timezone is the guest's time zone and offset, from the probe.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Timezone string `json:"timezone,omitempty"`
	// Users is how many users are logged in to the guest, from the probe
	// (subresource userlist); absent when not probed.
	// +optional
	Users *int32 `json:"users,omitempty"`
	// Filesystems are the guest's mounted filesystems, from the probe
	// (subresource filesystemlist), fullest first, at most 16.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Filesystems []GuestFilesystem `json:"filesystems,omitempty"`
}

// GuestFilesystem is one filesystem mounted in the guest.
type GuestFilesystem struct {
	// MountPoint is where the guest mounts it.
	// +kubebuilder:validation:MaxLength=253
	MountPoint string `json:"mountPoint"`
	// Type is the filesystem type (ext4, xfs, NTFS...).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Type string `json:"type,omitempty"`
	// UsedPercent is the share of the filesystem in use, rounded down to a
	// multiple of 5, so it changes only when a 5-point bucket does.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	UsedPercent int32 `json:"usedPercent"`
}

// VMObservationStatus is the observed health of the VM. Lists are sorted and
// times are truncated to seconds, so the same world gives the same status.
type VMObservationStatus struct {
	// ObservedGeneration is the metadata.generation of the VMObservation the
	// status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Verdict is the worst layer's verdict.
	// +optional
	Verdict Verdict `json:"verdict,omitempty"`
	// Reason is the worst layer's reason.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message names the worst layer and says why.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// Layers holds the verdict of each layer.
	// +optional
	Layers *Layers `json:"layers,omitempty"`
	// VMI summarises the VirtualMachineInstance, absent when none exists.
	// +optional
	VMI *VMISummary `json:"vmi,omitempty"`
	// LauncherPods lists the virt-launcher pods the VMI controls, by name.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	LauncherPods []LauncherPod `json:"launcherPods,omitempty"`
	// Migration describes the newest migration, if any.
	// +optional
	Migration *MigrationSummary `json:"migration,omitempty"`
	// LiveMigratable says whether the VMI can be live-migrated and why not.
	// +optional
	LiveMigratable *LiveMigratability `json:"liveMigratable,omitempty"`
	// Interfaces lists the VMI's interfaces, by name.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Interfaces []InterfaceStatus `json:"interfaces,omitempty"`
	// Guest is what the guest agent reports.
	// +optional
	Guest *GuestSummary `json:"guest,omitempty"`
	// Domain is what virt-handler's domain stats say of the running domain,
	// when the controller reads them from Prometheus (--prometheus-url).
	// +optional
	Domain *DomainSummary `json:"domain,omitempty"`
	// VM is the VM's uptime and restarts.
	// +optional
	VM *VMLife `json:"vm,omitempty"`
	// Policy says which fields of the VM's policy spec.policy and the
	// VMObservationPolicies that select the VM set, and their values;
	// absent when every field is the controller's flag.
	// +optional
	Policy *PolicyStatus `json:"policy,omitempty"`
	// Incident points at the incident the VM is a member of: a VMIncident
	// named after a shared cause (a StorageClass, virt-api, ...) that
	// turned several VMs non-Healthy at once, or the NodeObservation of
	// its node when the node is that cause (docs/incidents.md).
	// +optional
	Incident *IncidentRef `json:"incident,omitempty"`
	// History is the VM's flight recorder: verdict transitions and the life
	// events that explain them, newest first (docs/history.md).
	// +optional
	History *History `json:"history,omitempty"`
	// Conditions are Ready, Reconciling and Stalled (kstatus) and one per
	// layer: ControlPlaneHealthy, NodeHealthy, GuestHealthy.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// VMObservation is the derived health of one KubeVirt VM: a verdict per
// layer (control plane, node, guest, storage), the reason and evidence behind it, and
// how fresh that evidence is.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vmobs,categories=kubevirt
// +kubebuilder:validation:XValidation:rule="self.spec.vmName == self.metadata.name",message="spec.vmName must equal metadata.name: a VMObservation shares its VM's name"
// +kubebuilder:printcolumn:name="Verdict",type=string,JSONPath=`.status.verdict`
// +kubebuilder:printcolumn:name="Control-Plane",type=string,JSONPath=`.status.layers.controlPlane.verdict`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.layers.node.verdict`
// +kubebuilder:printcolumn:name="Guest",type=string,JSONPath=`.status.layers.guest.verdict`
// +kubebuilder:printcolumn:name="Storage",type=string,JSONPath=`.status.layers.storage.verdict`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.vmi.phase`,priority=1
// +kubebuilder:printcolumn:name="Node-Name",type=string,JSONPath=`.status.vmi.nodeName`,priority=1
// +kubebuilder:printcolumn:name="Migration",type=string,JSONPath=`.status.migration.phase`,priority=1
// +kubebuilder:printcolumn:name="Agent",type=boolean,JSONPath=`.status.guest.agentConnected`,priority=1
// +kubebuilder:printcolumn:name="Incident",type=string,JSONPath=`.status.incident.name`,priority=1
type VMObservation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VMObservationSpec   `json:"spec"`
	Status VMObservationStatus `json:"status,omitempty"`
}

// VMObservationList is a list of VMObservations.
//
// +kubebuilder:object:root=true
type VMObservationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VMObservation `json:"items"`
}
